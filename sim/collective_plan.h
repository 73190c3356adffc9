// CollectivePlan: a collective decomposed into rings of point-to-point transfers the way NCCL
// runs it, so that the flow network can replay it link by link.
//
// A plan is a sequence of phases; the runs of a phase proceed concurrently and the phase ends
// when its last run ends. A run is a ring (or, for broadcast, a pipelined chain) of GPUs doing
// `steps` steps; in each step every ring member sends `bytes_per_flow` to the next member, and
// the next step starts when the whole step has arrived.
//
//   ALLREDUCE inside one node   ring all-reduce on the node's NVLink rings (each ring filtered
//                               to the group's GPUs; with bidirectional rings each ring also
//                               runs reversed), 2(p-1) steps of share/p bytes, the data split
//                               across rings in proportion to each ring's bottleneck bandwidth
//   ALLREDUCE across nodes      hierarchical when every node holds g > 1 members: reduce-scatter
//                               in each node, g concurrent all-reduces across nodes on n/g
//                               bytes, all-gather in each node; otherwise one ring in group order
//   ALLGATHER / REDUCE_SCATTER  rings as above, p-1 steps of share/p (bytes = the full tensor)
//   BROADCAST                   a chain from the root in ring order, the data cut into chunks
//                               of chunk_bytes pipelined down it: C + p - 2 steps of n/C
//
// The flow network replays a run as one aggregate flow (docs/collectives.md): a ring advances
// at the pace of its slowest hop, so the run is one flow over every hop's links (a link that k
// hops cross, k times) that moves steps x bytes_per_flow after waiting steps x alpha (alpha:
// the largest hop latency). Where the rates stay constant over the run (its links carry
// nothing else, or the same load throughout) this ends when the step-by-step replay would, up
// to one ns of rounding per step; under changing contention it is an approximation (a step's
// fast hops no longer free their links early, and the latencies are paid up front).
// CollectiveOptions::step_by_step keeps the step-by-step replay.
#pragma once

#include <utility>
#include <vector>

#include "models/units.h"
#include "schedule/op.h"
#include "sim/network_topology.h"

namespace terasim {

// Algorithm parameters of the collective library (sim/data/collectives.json holds the
// defaults with their sources).
struct CollectiveOptions {
  bool bidirectional_rings = true;           // in-node rings also run in reverse
  Bytes broadcast_chunk_bytes = 512 * 1024;  // pipelining unit of a broadcast chain
  // Flow mode: replay every ring step as its own flows (exact, slow) instead of each run as
  // one aggregate flow.
  bool step_by_step = false;
};

// Loads CollectiveOptions from a JSON file (fields bidirectional_rings, broadcast_chunk_bytes,
// source; optional step_by_step). Throws InputError "FILE: FIELD: what" on a bad file.
CollectiveOptions LoadCollectiveOptions(const std::string& path);
// The default file: DataRoot()/sim/data/collectives.json.
std::string DefaultCollectiveOptionsPath();

struct RingRun {
  std::vector<int> gpus;  // members in ring (or chain) order
  bool closed = true;     // ring: the last sends to the first; chain: it does not
  int steps = 0;
  double bytes_per_flow = 0;
  int chunks = 0;  // chain only: how many chunks travel down it
  // Filled by PlanCollective: every hop's links (a link crossed by k hops listed k times; the
  // route of the run's aggregate flow) and the largest hop latency (a step's alpha).
  std::vector<int> links;
  TimeNs alpha_ns = 0;
};

struct CollectivePhase {
  std::vector<RingRun> runs;  // concurrent
};

struct CollectivePlan {
  std::vector<CollectivePhase> phases;  // sequential; empty for a group of one
};

// Decomposes collective `kind` over `gpus` (the group's GPUs in group order) of `bytes` per
// rank; root_gpu is the BROADCAST root (ignored otherwise). Throws InternalError for a
// non-collective kind.
CollectivePlan PlanCollective(OpKind kind, const std::vector<int>& gpus, int root_gpu, Bytes bytes,
                              const NetworkTopology& topology, const CollectiveOptions& options);

// The (src_gpu, dst_gpu) transfers of step `step` (0-based) of `run`.
std::vector<std::pair<int, int>> StepTransfers(const RingRun& run, int step);

}  // namespace terasim

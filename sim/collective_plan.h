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
// With CollectiveOptions::algorithms = kNccl (sim/data/collectives.json), a collective on a
// real cluster (NetworkTopology::Instance() described in the NCCL table) runs as NCCL's tuning
// model chooses for its size, ranks and nodes (models/nccl_model.h: NcclBestTime):
//   ring                        inside one node as above; across nodes one ring through every
//                               member, node after node (NVLink ring order inside a node), so
//                               that each node is entered and left once: 2(p-1) steps of n/p
//                               (all-reduce), p-1 (all-gather, reduce-scatter); broadcast a
//                               chain in that order
//   tree (all-reduce)           NCCL's double binary tree: inside each node a chain of its
//                               members (the first is the node's head), across nodes two
//                               balanced binary trees over the nodes' heads, the second on the
//                               node order shifted by one, each carrying half the data. Two
//                               phases: reduce (every edge child -> parent at once, pipelined:
//                               one step of its bytes) and broadcast (parent -> child); each
//                               phase pays the tree's depth once: (g-1) intra-node steps plus
//                               the deepest tree's network steps
// and the protocol it chooses (LL, LL128, Simple) sets, per step, the latency of a hop (the
// route's latency plus NCCL's protocol step latency less Simple's: the topologies' link
// latencies are Simple's ring step) and the bytes on the wire (bytes / NCCL's bandwidth factor
// of the pair: LL moves flags with the data); NCCL's base latency is paid once, by the first
// phase's runs (RingRun::latency_ns). On a topology without an instance (test fakes) or an
// instance the table lacks, the ring plan above.
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

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "models/nccl_model.h"
#include "models/units.h"
#include "schedule/op.h"
#include "sim/network_topology.h"

namespace terasim {

// How collectives are planned: kRing every collective as rings (hierarchical all-reduce
// across nodes) at the links' latencies, kNccl as NCCL chooses (above).
enum class CollectiveAlgorithms { kRing, kNccl };

// "ring", "nccl"; the inverse throws InputError "FIELD: 'TEXT' must be ring or nccl".
const char* CollectiveAlgorithmsName(CollectiveAlgorithms algorithms);
CollectiveAlgorithms ParseCollectiveAlgorithms(const std::string& text, const std::string& where);

// Algorithm parameters of the collective library (sim/data/collectives.json holds the
// defaults with their sources).
struct CollectiveOptions {
  CollectiveAlgorithms algorithms = CollectiveAlgorithms::kRing;
  std::shared_ptr<const NcclTable> nccl;     // kNccl: NCCL's tuning table (models/data/nccl)
  bool bidirectional_rings = true;           // in-node rings also run in reverse
  Bytes broadcast_chunk_bytes = 512 * 1024;  // pipelining unit of a broadcast chain
  int nccl_channels_per_nic = 1;             // kNccl: a communicator's channels across nodes
  // Flow mode: replay every ring step as its own flows (exact, slow) instead of each run as
  // one aggregate flow.
  bool step_by_step = false;
  // Flow mode: run each phase of a collective whose links carry nothing else as one timed event
  // (sim/exclusive_links.h); false: always as flows.
  bool closed_form = true;
};

// Loads CollectiveOptions from a JSON file (fields bidirectional_rings, broadcast_chunk_bytes,
// source; optional step_by_step, algorithms ("ring" when absent), nccl (the table's path,
// relative: under the data root) and nccl_channels_per_nic (both required with "nccl")).
// Throws InputError "FILE: FIELD: what" on a bad file.
CollectiveOptions LoadCollectiveOptions(const std::string& path);
// The default file: DataRoot()/sim/data/collectives.json.
std::string DefaultCollectiveOptionsPath();

// NCCL's view of the communicator over `gpus` (group order) when collectives are planned as
// NCCL chooses (kNccl) on a cluster whose instance the table describes; nullopt otherwise (or
// for a group of one). Its channels are the communicator's own, not the instance's:
//   inside one node   the bus bandwidth B of the group's NVLink rings as the plan runs them
//                     (1 / the most loaded link's sum over rings of weight / bandwidth: the
//                     rings' bottleneck with their shared links), as C = max(1, round(B /
//                     the table's per-channel bandwidth)) channels of B / C: NCCL's search
//                     lays one channel on each NVLink lane path it finds, so a full
//                     p3.16xlarge node has 6 and a pair joined by one NVLink 1
//   across nodes      nccl_channels_per_nic x the instance's NICs channels of the table's
//                     per-channel bandwidth or, where faster, the channel's share of the node's
//                     network (p5.48xlarge's 400 Gbps NICs), which bounds it in the model
std::optional<NcclSystem> NcclCommunicator(const std::vector<int>& gpus,
                                           const NetworkTopology& topology,
                                           const CollectiveOptions& options);
// NcclCommunicator in its parts, for a caller that plans many groups (sim/plan_cache.h): the
// group's (nodes, GPUs per node), nullopt where NcclCommunicator is; NCCL's system for that
// shape (NcclSystemFrom, which depends on the shape alone); and the communicator of `gpus` from
// the system of its shape (its channels).
std::optional<std::pair<int, int>> NcclShapeOf(const std::vector<int>& gpus,
                                               const NetworkTopology& topology,
                                               const CollectiveOptions& options);
NcclSystem NcclShapeSystem(int nodes, int per_node, const NetworkTopology& topology,
                           const CollectiveOptions& options);
NcclSystem NcclCommunicatorOf(const std::vector<int>& gpus, NcclSystem system,
                              const NetworkTopology& topology, const CollectiveOptions& options);

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
  // Per hop (gpus[i] -> gpus[i + 1]): its route's latency, with kNccl plus the protocol's step
  // latency on that hop less Simple's (NcclStepLatencyUs: NVLink, PCI or network); alpha_ns is
  // their largest. A step-by-step replay of the run pays hop i's on each step's transfer i.
  std::vector<TimeNs> hop_latency_ns;
  // Paid once by the run, besides steps x alpha: NCCL's base latency (first phase) and the
  // rest of a tree's depth. 0 for ring plans.
  TimeNs latency_ns = 0;
};

struct CollectivePhase {
  std::vector<RingRun> runs;  // concurrent
};

struct CollectivePlan {
  std::vector<CollectivePhase> phases;  // sequential; empty for a group of one
  bool nccl = false;                    // planned as NCCL chooses; then:
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
};

// Decomposes collective `kind` over `gpus` (the group's GPUs in group order) of `bytes` per
// rank; root_gpu is the BROADCAST root (ignored otherwise). Throws InternalError for a
// non-collective kind.
CollectivePlan PlanCollective(OpKind kind, const std::vector<int>& gpus, int root_gpu, Bytes bytes,
                              const NetworkTopology& topology, const CollectiveOptions& options);
// The same with `system` == NcclCommunicator(gpus, topology, options), for a caller that plans
// many collectives on one group (the communicator depends on the GPUs alone).
CollectivePlan PlanCollective(OpKind kind, const std::vector<int>& gpus, int root_gpu, Bytes bytes,
                              const NetworkTopology& topology, const CollectiveOptions& options,
                              const std::optional<NcclSystem>& system);

// The (src_gpu, dst_gpu) transfers of step `step` (0-based) of `run`.
std::vector<std::pair<int, int>> StepTransfers(const RingRun& run, int step);

}  // namespace terasim

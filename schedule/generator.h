// Generate: builds a whole training iteration as a Schedule from a strategy and its degrees
// (DESIGN.md section 2; schedule/README.md fixes the keys, streams, groups and tensors written).
//
// One generator covers every family by composing four independent choices:
//   * the per-stage order of forward and backward units (schedule/pipeline_order.h): GPipe
//     flush, 1F1B (PipeDream-Flush), Megatron's interleaved 1F1B, and TeraPipe's token slices
//     in flush or 1F1B order; a unit is one (micro-batch, token slice);
//   * Megatron tensor parallelism of degree T (every layer split into attn and mlp ops, each
//     followed by a tp ALLREDUCE, forward and backward);
//   * data parallelism of degree D (the dp reduction of each stage's weight gradients in one of
//     the DpStep forms below, then the OPTIMIZER);
//   * the stage boundary: point to point between equal tp ranks, or tp rank 0 to tp rank 0
//     followed by a BROADCAST inside the receiving stage's tp group.
//
// Ranks are operator-innermost: rank = dp * (P * T) + pipeline_rank * T + tp_rank. The ops are
// listed device by device, each device's ops in issue order; the output is a pure function of
// the options (same options -> byte-identical .pir). Every op carries the integer names of its
// stream, group and SEND / RECV tensor (Op::stream_id, group_id, tensor_id) besides the strings,
// for a replay that reads no string (sim/replay_graph.h). Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/memory_model.h"
#include "models/model_card.h"
#include "schedule/pipeline_order.h"
#include "schedule/schedule_ir.h"
#include "schedule/slicing_spec.h"

namespace terasim {

enum class Strategy {
  kGpipe,          // all forwards, then all backwards (reverse micro-batch order)
  kOneFOneB,       // PipeDream-Flush
  kInterleaved,    // Megatron's interleaved 1F1B with V model chunks per device
  kTeraPipe,       // token slices of each micro-batch, in flush or 1F1B order
  kZbH1,           // zero bubble ZB-H1: 1F1B with split backward, W deferred (1F1B's memory)
  kZbH2,           // zero bubble ZB-H2: longer warm-up, about twice the in-flight activations
  kLoopedBfs,      // looped breadth-first: V chunks per device, each chunk for all micro-batches
  kInterleavedZb,  // interleaved zero bubble (PyTorch's ScheduleInterleavedZeroBubble), V chunks
  kZbV,            // ZB-V: 2 chunks per device in a V (stages r and 2P-1-r), split backward
  kDualPipeV,      // DualPipeV (DeepSeek-V3): V placement, forward/backward pairs, M >= 2P
  kImported,       // a per-rank order given in the options (e.g. from PyTorch's CSV)
};

// TeraPipe's order of units: all forwards then all backwards (the paper), or 1F1B over units.
enum class SliceOrder { kFlush, kOneFOneB };

// How an activation (or its gradient) crosses a stage boundary when T > 1.
enum class Boundary {
  kPointToPoint,  // tp rank r of one stage to tp rank r of the next
  kBroadcast,     // tp rank 0 to tp rank 0, then BROADCAST in the receiving stage's tp group
};

// How the data-parallel gradient step is issued (with D >= 2 and no ZeRO-3).
enum class DpStep {
  kAuto,       // the strategy family's own: DefaultDpStep(strategy)
  kPerStage,   // "per-stage": one ALLREDUCE of a stage's gradients on its own "dp" stream right
               // after that stage's own last backward (terasim's mode before the choice existed)
  kFlattened,  // "flattened", TeraPipe's code: the whole replica's backward ends first (a
               // barrier over the replica's devices, dist.barrier's one-element ALLREDUCE), then
               // one ALLREDUCE of each stage's whole fp16 gradient; nothing overlaps the backward
  kBucketed,   // "bucketed", PyTorch DDP / Megatron-LM: whole layers in reverse order packed into
               // buckets of at least dp_bucket_bytes (a bucket closes once it reaches the cap, as
               // DDP's assignment does; layers are never split), each bucket's ALLREDUCE issued
               // once the last backward of its layers ends, overlapped with the rest
};

// PyTorch DistributedDataParallel's bucket_cap_mb default: 25 MiB (torch.nn.parallel.
// DistributedDataParallel, bucket_cap_mb=25, bucket_bytes_cap = 25 * 1024 * 1024).
inline constexpr int64_t kDdpBucketBytes = int64_t{25} * 1024 * 1024;

struct GenerateOptions {
  ModelCard model;
  Strategy strategy = Strategy::kOneFOneB;
  int dp = 1;
  int pp = 1;
  int tp = 1;
  // Micro-batches per data-parallel replica and their rows (sequences); used when `slicing`
  // is empty.
  int microbatches = 1;
  int microbatch_size = 1;
  // Model chunks per device: any with kInterleaved, kInterleavedZb, kLoopedBfs; 2 with kZbV
  // and kDualPipeV (their V placement); 1 otherwise.
  int virtual_stages = 1;
  // TeraPipe only: explicit micro-batches with their token slices (per replica), or
  // `uniform_slices` > 0 equal slices of each of the `microbatches` micro-batches.
  std::vector<MicrobatchSlicing> slicing;
  int uniform_slices = 0;
  SliceOrder order = SliceOrder::kFlush;  // TeraPipe only
  Boundary boundary = Boundary::kPointToPoint;
  bool optimizer = true;  // emit the OPTIMIZER ops
  // GPipe only: backwards in forward micro-batch order (PyTorch's ScheduleGPipe) instead of
  // reverse order.
  bool backward_in_forward_order = false;
  // Today's recipes (DESIGN.md section 8; schedule/README.md):
  //   recompute: selective marks every layer compute op (the attention core is recomputed
  //     inside the backward); full adds a RECOMPUTE op before each backward (per layer, just
  //     before that layer's backward, when the ops are per layer);
  //   sequence_parallel (T >= 2, p2p boundary): every tp ALLREDUCE becomes an ALLGATHER
  //     before the part and a REDUCE_SCATTER after it; boundary tensors are 1 / T per rank;
  //   zero (D >= 2): 1 and 2 replace the dp ALLREDUCE by a REDUCE_SCATTER, the OPTIMIZER
  //     updates the shard (zero=Z, group = the dp group) and an ALLGATHER ("step.*") brings the
  //     parameters back; 3 (FSDP) makes the compute ops per layer, all-gathers each layer's
  //     parameters ("param.*", stream "zero") before its forward and before its backward
  //     (prefetching one layer ahead) and reduce-scatters its gradients after its backward.
  Recompute recompute = Recompute::kNone;
  bool sequence_parallel = false;
  int zero = 0;
  // The data-parallel step (D >= 2). ZeRO-1 / 2 keep one REDUCE_SCATTER per stage (bucketed
  // issues it as per-stage does, flattened after the barrier); ZeRO-3 keeps its per-layer
  // reduce-scatters whatever the mode. Bucketed makes the compute ops per layer (each bucket
  // waits for its own layers' backward).
  DpStep dp_step = DpStep::kAuto;
  int64_t dp_bucket_bytes = kDdpBucketBytes;  // kBucketed: the bucket cap, bytes
  // kImported only: each pipeline rank's steps (chunk c of rank r is the c-th smallest of its
  // stages) and the pipeline rank of each of the P V virtual stages. Consecutive stages on one
  // rank (a V placement) hand their tensors over in memory, without SEND / RECV.
  std::vector<std::vector<PipelineStep>> imported_steps;
  std::vector<int> stage_ranks;
  // Emit only the ops of the devices a symmetry fold simulates and declare the symmetry on the
  // schedule (Schedule::symmetry): every data-parallel replica runs replica 0's program, and
  // (p2p boundary) the tp ranks of a group rotate onto each other, so only replica 0's tp ranks
  // 0..representative_tp_ranks-1 are written; groups and `devices` stay whole. A divisor of T:
  // 1 when the network's loads are symmetric under a rotation by one tp rank (GPUs sharing a
  // NIC count by multiplicity, as on p4d.24xlarge), T for no tp symmetry. With dp = 1 and no tp
  // symmetry the schedule is whole and declares nothing. For a replay with SymmetryFold::Declared
  // (sim/symmetry_fold.h) and a memory estimate; not for the .pir text (it is not a whole
  // iteration).
  bool representatives_only = false;
  int representative_tp_ranks = 1;
  // When not empty: the tp ranks written instead of 0..representative_tp_ranks-1 (ascending,
  // 0 first, fewer than T): the orbit representatives of a fold by tp-rank permutations
  // (RepresentativeTpSet, sim/simulator.h; p3.16xlarge: 0, 2, 4, 6).
  std::vector<int> representative_tp_set;
};

// The flag names used in messages and by `terasim schedule`.
// "gpipe", "1f1b", "interleaved", "terapipe", "zb-h1", "zb-h2", "looped-bfs",
// "interleaved-zb", "zb-v", "dualpipe-v", "imported".
std::string StrategyName(Strategy strategy);
std::string SliceOrderName(SliceOrder order);  // "flush", "1f1b"
std::string BoundaryName(Boundary boundary);   // "p2p", "broadcast"
std::string DpStepName(DpStep step);           // "auto", "per-stage", "flattened", "bucketed"
// The family defaults: flattened for terapipe and gpipe (TeraPipe's code ran both; Table 1's
// "without TeraPipe" is its GPipe flush), bucketed for the Megatron-LM and PyTorch families
// (1f1b, interleaved, the zero-bubble orders, looped-bfs, imported): Megatron-LM's and DDP's
// gradient buckets overlapped with the backward.
DpStep DefaultDpStep(Strategy strategy);
// options.dp_step, with kAuto replaced by DefaultDpStep(options.strategy).
DpStep ResolvedDpStep(const GenerateOptions& options);
// Inverses; throw InputError "FLAG: 'TEXT' must be one of ..." for an unknown name.
Strategy ParseStrategy(const std::string& text, const std::string& flag = "--strategy");
SliceOrder ParseSliceOrder(const std::string& text, const std::string& flag = "--order");
Boundary ParseBoundary(const std::string& text, const std::string& flag = "--boundary");
DpStep ParseDpStep(const std::string& text, const std::string& flag = "--dp-step");

// The micro-batches of one data-parallel replica, each with its rows and token slices, in
// micro-batch order (local ids 0..M-1). Throws InputError naming the flag when the options
// are inconsistent (slicing on a strategy without token slices, slices that do not sum to the
// model's sequence, --slices larger than the sequence, non-positive counts).
std::vector<MicrobatchSlices> ReplicaMicrobatches(const GenerateOptions& options);

// Layers [l0, l1) of each of the P * V (virtual) stages: the first L mod (P V) stages get one
// layer more. Throws InputError when P * V > L.
std::vector<Range> StageLayers(int layers, int pp, int virtual_stages);

// The whole iteration. Throws InputError naming the flag on inconsistent options, e.g.
// "--tp 3 does not divide 4 heads", "--pp 8 x --virtual-stages 1 = 8 stages exceed 4 layers",
// "--microbatches 9 with --pp 4: interleaved 1F1B runs floor(M / P) = 2 rounds ..."
// (schedule/pipeline_order.h).
Schedule Generate(const GenerateOptions& options);

// Copies `text` to `to`, inlined: the pieces of names and keys are a few characters, where a
// call to memcpy costs more than the copy. Words inline; the tail as two overlapping copies of
// the widest word that fits (not byte by byte).
[[gnu::always_inline]] inline void CopyShort(char* to, std::string_view text) {
  const char* from = text.data();
  const size_t n = text.size();
  if (n >= 16) {
    for (size_t i = 0; i + 16 < n; i += 16) std::memcpy(to + i, from + i, 16);
    std::memcpy(to + n - 16, from + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(to, from, 8);
    std::memcpy(to + n - 8, from + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(to, from, 4);
    std::memcpy(to + n - 4, from + n - 4, 4);
  } else if (n >= 2) {
    std::memcpy(to, from, 2);
    std::memcpy(to + n - 2, from + n - 2, 2);
  } else if (n == 1) {
    *to = *from;
  }
}

// The keys of a schedule's ops held apart from the ops: one character buffer and the end of
// each key, instead of a string per op.
class OpKeys {
 public:
  // Room for `keys` keys of `chars` characters in all (a hint).
  void Reserve(size_t keys, size_t chars);
  // Adds the key `head` followed by `tail` (a key in two pieces, e.g. its kind's prefix and the
  // unit's part shared by several ops).
  void Add(std::string_view head, std::string_view tail = {}) {
    const size_t n = head.size() + tail.size();
    if (size_ + n > capacity_) Grow(size_ + n);
    CopyShort(chars_.get() + size_, head);
    CopyShort(chars_.get() + size_ + head.size(), tail);
    size_ += n;
    end_.push_back(size_);
  }
  // The key of op `op` (the op-th added).
  std::string_view operator[](size_t op) const {
    const size_t begin = op == 0 ? 0 : end_[op - 1];
    return std::string_view(chars_.get() + begin, end_[op] - begin);
  }
  size_t Size() const { return end_.size(); }

 private:
  void Grow(size_t chars);

  std::unique_ptr<char[]> chars_;
  size_t size_ = 0;
  size_t capacity_ = 0;
  std::vector<size_t> end_;
};

// Generate(options) for a replay that reads op keys only for its output (SimulateGenerated):
// every op's key goes to `keys` (op i's at (*keys)[i]), its Op::key and the keys in `after`
// lists are left empty (the lists keep their lengths; Schedule::after_ops holds the
// positions), and no tensor is named: a replay matches the collectives by their order on the
// group and a SEND / RECV pair by its Op::tensor_id (the ids are the data: with an op's
// stream_id cleared its SEND / RECV cannot be paired, and BuildReplayGraph refuses it).
// Everything else is Generate's. Not a schedule for anything else: its names do not name its
// ops and tensors.
Schedule GenerateForReplay(const GenerateOptions& options, OpKeys* keys);

}  // namespace terasim

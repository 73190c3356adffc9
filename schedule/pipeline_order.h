// The order in which one pipeline rank runs its forward and backward units.
//
// A unit is one (micro-batch, token slice); without token slicing every micro-batch is one
// unit. Units are numbered in forward order: micro-batch 0's slices ascending, then micro-batch
// 1's, and so on. A backward unit of a micro-batch needs the key/value gradients of every later
// slice of the same sequence, so a micro-batch's backward units always run in descending slice
// order.
//
//   flush (GPipe, TeraPipe's paper order): every forward unit in order, then every backward
//     unit in reverse (last micro-batch first, its slices descending). Same on every rank.
//   1F1B (PipeDream-Flush, over units): rank r runs W_r warm-up forwards, then alternates one
//     forward and one backward, then drains the remaining backwards. Backward units come in
//     micro-batch order, each micro-batch's slices descending. With n_max the largest number of
//     slices of any micro-batch and N units in all,
//         W_r = min(P - r - 1 + n_max - 1, N).
//     Why: backward unit k is slice n_m - 1 - i of some micro-batch m (i = k - first(m)); it
//     comes after that micro-batch's last-slice backward, which needs forward unit
//     first(m) + n_m - 1 = k - i + n_m - 1 <= k + n_max - 1 on the last rank. 1F1B has run
//     forwards 0..W + k before backward k, so the last rank needs W >= n_max - 1. Each earlier
//     rank needs one more forward in flight than its successor to cover the round trip
//     (W_r >= W_{r+1} already suffices for deadlock freedom; W_r = W_{r+1} + 1
//     keeps the pipeline full). With one slice per micro-batch this is PipeDream-Flush's
//     min(P - r - 1, M).
//   interleaved (Megatron-LM's interleaved 1F1B): V model chunks per rank; virtual stage
//     chunk * P + r. Micro-batches run in groups of G: G = P when M is a multiple of P
//     (Megatron-LM's order), G = M when M < P (one group). Forward step k runs micro-batch
//     (k / (G V)) * G + k mod G on chunk (k mod (G V)) / G; backward step k the same
//     micro-batch on chunk V - 1 - that. Warm-up (P - r - 1) * 2 + (V - 1) * P forward steps
//     (capped at M V), then 1F1B, then the cool-down. When M <= P the warm-up is every
//     forward: M == P is Megatron-LM's all-warm-up case; M < P (our extension: Megatron-LM
//     asks for M >= P) is one group, so each rank runs chunk 0 of every micro-batch, then
//     chunk 1, ..., then the backwards of chunk V - 1 down to chunk 0, micro-batches
//     ascending in each: a flush schedule (GPipe) over the P V virtual stages. Any other M
//     (M > P and not a multiple of P) is rejected, as Megatron-LM does.
//
// Thread safety: pure functions.
#pragma once

#include <vector>

namespace terasim {

struct PipelineStep {
  bool forward = true;
  int microbatch = 0;  // local micro-batch id (0..M-1 of one data-parallel replica)
  int slice = 0;       // token slice index within the micro-batch
  int chunk = 0;       // model chunk on this rank (virtual stage = chunk * P + rank)
  bool operator==(const PipelineStep&) const = default;
};

// Number of forward units rank `rank` of `pp` runs before its first backward in 1F1B order;
// `slices_per_microbatch[m]` is micro-batch m's slice count (each >= 1). See above.
int OneFOneBWarmup(int pp, int rank, const std::vector<int>& slices_per_microbatch);

// The interleaved schedule's micro-batch group size G (see above): `pp` when `microbatches`
// is a multiple of it, `microbatches` when fewer. Precondition: interleaving supports the
// pair, i.e. microbatches < pp or microbatches % pp == 0 (the generator checks).
int InterleavedGroup(int pp, int microbatches);

// Megatron-LM's warm-up forward steps of `rank` with `virtual_stages` chunks and
// `microbatches` micro-batches: every one of the M V forwards when M <= P (see above).
int InterleavedWarmup(int pp, int virtual_stages, int rank, int microbatches);

// Every step of one rank, in run order. Each returns 2 * units steps (2 * M * V for
// interleaved). Preconditions (checked by the generator): pp >= 1, 0 <= rank < pp, every
// slice count >= 1; for InterleavedOrder microbatches < pp or microbatches % pp == 0.
std::vector<PipelineStep> FlushOrder(const std::vector<int>& slices_per_microbatch);
std::vector<PipelineStep> OneFOneBOrder(int pp, int rank,
                                        const std::vector<int>& slices_per_microbatch);
std::vector<PipelineStep> InterleavedOrder(int pp, int virtual_stages, int rank, int microbatches);

}  // namespace terasim

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
//   interleaved (Megatron-LM's interleaved 1F1B in PyTorch's ScheduleInterleaved1F1B order):
//     V model chunks per rank; virtual stage chunk * P + r. Micro-batches run in rounds of G:
//     with M >= P there are R = floor(M / P) rounds of G = M / R micro-batches (PyTorch's
//     rule, which needs R to divide M: any multiple of P, and e.g. M = 10 with P = 4, not
//     M = 9); with M < P one round of G = M (our extension, see below). Forward step k runs
//     micro-batch (k / (G V)) * G + k mod G on chunk (k mod (G V)) / G; backward step k the
//     same micro-batch on chunk V - 1 - that. Warm-up min((V - 1) G + 2 (P - r - 1), M V)
//     forward steps, then 1F1B (one forward, one backward), then the cool-down. With M a
//     multiple of P (G = P) this is Megatron-LM's order, except M == P, where Megatron-LM
//     runs every forward first and PyTorch (and terasim) the formula. M < P (Megatron-LM and
//     PyTorch's formula differ here; terasim keeps its documented choice): every forward
//     first, so each rank runs chunk 0 of every micro-batch, then chunk 1, ..., then the
//     backwards of chunk V - 1 down to chunk 0, micro-batches ascending in each: a flush
//     schedule (GPipe) over the P V virtual stages.
//   flush with backwards in forward order (PyTorch's ScheduleGPipe): every forward unit, then
//     the backward units micro-batch ascending (each micro-batch's slices descending).
//   zero bubble ZB-H1 / ZB-H2 (Qi et al. 2024): 1F1B with each backward split into its input
//     gradient B (on the critical path, sent upstream at once) and its weight gradient W,
//     which rank r runs `lag` backwards later (the deferred W fill the cool-down bubble).
//     ZB-H1: warm-up min(P - r - 1, M), lag r: every rank holds at most P micro-batches in
//     flight (forward done, W not yet), 1F1B's peak on its first rank; with unit costs
//     F = B = W its bubble is (P - 1) (F + B - W) = P - 1 units against 1F1B's 3 (P - 1).
//     ZB-H2: warm-up min(2 (P - r - 1), M), lag 2 r: 2 P - 1 in flight on every rank; more
//     forwards in the warm-up fill the head of the steady state. After each B, the oldest
//     pending W runs while more than `lag` are pending; once every B has run, the rest run.
//   looped BFS (Lamy-Poirier 2023, PyTorch's ScheduleLoopedBFS): V chunks per rank; every
//     micro-batch forward through chunk 0, then chunk 1, ...; then the backwards of chunk
//     V - 1 for every micro-batch in reverse, down to chunk 0.
//   interleaved zero bubble (PyTorch's ScheduleInterleavedZeroBubble, Qi et al.'s ZB1P over V
//     chunks): interleaved 1F1B's chunk and micro-batch of forward step k and backward step k
//     (same rounds of G), each backward split into B (input gradient) and W (weight gradient);
//     warm-up min((V - 1) G + P - r - 1, M V) forward steps (one, not two, per hop from the
//     last rank), then per backward step j: the next forward (while any is left), B j, and W
//     j - r once j >= r (the W lag is r, as in ZB-H1); the remaining Ws at the end. With V = 1
//     it is ZB-H1. Any M with R dividing M, as for interleaved 1F1B (M < P: one round of M,
//     PyTorch's formula).
//   V placement (ZB-V and DualPipeV): 2 P stages, rank r holds stage r (chunk 0) and stage
//     2 P - 1 - r (chunk 1); the last rank holds stages P - 1 and P, handed over in memory.
//     f0, f1, b0, b1 below count each chunk's forwards and backwards; each action takes the
//     next micro-batch of its chunk and kind.
//   ZB-V (PyTorch's ScheduleZBVZeroBubble, Qi et al. section 6): with n = max(M, 2 P - 1):
//     2 (P - r) - 1 chunk-0 forwards; r times (chunk-1 F, chunk-0 F); P - r times (chunk-1 F,
//     B, W); then while f1 < f0 or f0 < n: (chunk-0 F if f0 < n), chunk-0 B and W, chunk-1 F,
//     B and W; cool-down: r times (chunk-0 B, chunk-1 B); P - r times (chunk-0 B, the oldest
//     chunk-0 W); every chunk-1 W left, then every chunk-0 W left. Actions of micro-batches
//     >= M (when M < 2 P - 1) are dropped.
//   DualPipeV (DeepSeek-V3's DualPipe folded into a V, PyTorch's ScheduleDualPipeV; M >= 2 P):
//     2 (P - r - 1) chunk-0 forwards; r + 1 times (chunk-0 F, chunk-1 F); P - r - 1 times
//     (chunk-1 B, the oldest pending W, chunk-1 F); M - 2 P + r + 1 times the main step: a
//     chunk-0 F paired with a chunk-1 whole backward, then a chunk-1 F paired with a chunk-0
//     whole backward; P - r - 1 times (chunk-1 whole backward, chunk-1 F paired with a chunk-0
//     whole backward); r + 1 times (chunk-1 backward, chunk-0 backward), whole in the first
//     half and split into B with W deferred from the middle on; P - r - 1 times (the oldest
//     pending W, chunk-0 backward); r + 1 times the oldest pending W. "Pending W" is a queue
//     of the split backwards' Ws, oldest first (whole backwards leave none). Difference from
//     PyTorch, by choice: PyTorch marks each pair OVERLAP_F_B (its runtime may overlap the two
//     micro-batches' compute and communication); terasim has no such op, so a pair is its
//     forward then its backward, in that order, on the one compute stream, and the simulator
//     does not credit DualPipe's overlap of one pair's communication with the other's compute.
//     The per-rank order of F / B / I / W is PyTorch's.
//
// Thread safety: pure functions.
#pragma once

#include <vector>

namespace terasim {

// Which part of a backward a step runs.
enum class BackwardPart {
  kWhole,   // input and weight gradients together (BWD)
  kInput,   // input gradients only (BWD_INPUT)
  kWeight,  // weight gradients only (BWD_WEIGHT)
};

struct PipelineStep {
  bool forward = true;
  int microbatch = 0;  // local micro-batch id (0..M-1 of one data-parallel replica)
  int slice = 0;       // token slice index within the micro-batch
  int chunk = 0;       // model chunk on this rank (virtual stage = chunk * P + rank)
  BackwardPart part = BackwardPart::kWhole;  // backward steps only
  bool operator==(const PipelineStep&) const = default;
};

// The zero-bubble variants of Qi et al. (see above).
enum class ZeroBubble { kH1, kH2 };

// Number of forward units rank `rank` of `pp` runs before its first backward in 1F1B order;
// `slices_per_microbatch[m]` is micro-batch m's slice count (each >= 1). See above.
int OneFOneBWarmup(int pp, int rank, const std::vector<int>& slices_per_microbatch);

// The interleaved schedule's rounds R = max(1, M / P), and whether it supports M with P
// (M < P, or R divides M; see above).
int InterleavedRounds(int pp, int microbatches);
bool InterleavedSupports(int pp, int microbatches);

// The interleaved schedule's micro-batch group size G (see above): M / R when M >= P,
// `microbatches` when fewer. Precondition: InterleavedSupports (the generator checks).
int InterleavedGroup(int pp, int microbatches);

// The warm-up forward steps of `rank` with `virtual_stages` chunks and `microbatches`
// micro-batches: every one of the M V forwards when M < P (see above).
int InterleavedWarmup(int pp, int virtual_stages, int rank, int microbatches);

// Every step of one rank, in run order. Each returns 2 * units steps (2 * M * V for
// interleaved). Preconditions (checked by the generator): pp >= 1, 0 <= rank < pp, every
// slice count >= 1; for InterleavedOrder InterleavedSupports(pp, microbatches).
std::vector<PipelineStep> FlushOrder(const std::vector<int>& slices_per_microbatch,
                                     bool backward_in_forward_order = false);
std::vector<PipelineStep> OneFOneBOrder(int pp, int rank,
                                        const std::vector<int>& slices_per_microbatch);
std::vector<PipelineStep> InterleavedOrder(int pp, int virtual_stages, int rank, int microbatches);
// 3 M steps: M forwards, M input-gradient and M weight-gradient steps.
std::vector<PipelineStep> ZeroBubbleOrder(ZeroBubble variant, int pp, int rank, int microbatches);
// The warm-up forwards and the W lag of `rank` (see above).
int ZeroBubbleWarmup(ZeroBubble variant, int pp, int rank, int microbatches);
int ZeroBubbleLag(ZeroBubble variant, int rank);
// 2 M V steps.
std::vector<PipelineStep> LoopedBfsOrder(int virtual_stages, int microbatches);

// 3 M V steps (M V forwards, input- and weight-gradient steps). Precondition:
// InterleavedSupports(pp, microbatches).
std::vector<PipelineStep> InterleavedZeroBubbleOrder(int pp, int virtual_stages, int rank,
                                                     int microbatches);
int InterleavedZeroBubbleWarmup(int pp, int virtual_stages, int rank, int microbatches);

// The pipeline rank of virtual stage `stage` (0..2 P - 1) in the V placement (see above).
int VShapeRank(int pp, int stage);
// ZB-V: 6 M steps over the two chunks (every backward split).
std::vector<PipelineStep> ZbvOrder(int pp, int rank, int microbatches);
// DualPipeV: 2 M forwards and 2 M backwards, each whole or split into B and W. Precondition:
// microbatches >= 2 pp (DualPipeVSupports).
bool DualPipeVSupports(int pp, int microbatches);
std::vector<PipelineStep> DualPipeVOrder(int pp, int rank, int microbatches);

// The most (chunk, micro-batch) units of one rank's `steps` in flight at once: forward run, weight
// gradient (W, or a whole backward) not yet; each holds one chunk's activations.
int PeakChunksInFlight(const std::vector<PipelineStep>& steps);

}  // namespace terasim

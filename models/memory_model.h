// Memory formulas of one transformer layer: activations kept for the backward, the key/value
// cache of token slices, the parameter shard and the training state it implies.
//
// Activations (fp16 tensors, 1-byte dropout masks, no recomputation; Korthikanti et al. 2022,
// FACTS.md) of a slice of l tokens after c tokens of context, b rows, tensor-parallel degree t:
//     attention block  l b h (5 + 8/t)  + 5 a b l (c + l) / t
//     MLP block        5 l b h + 4 l b f / t
// With f = 4h, c = 0 and l = s the sum is FACTS.md's s b h (10 + 24/t + 5 a s / (h t)), which is
// s b h (34 + 5 a s / h) without tensor parallelism. The l x (c + l) score block replaces s x s
// for a slice. Per layer, the non-parallel 10 l b h (LayerNorm inputs, the inputs of QKV and
// of the first MLP linear, two dropout masks) is replicated on every tp rank.
//
// A token slice of a sequence that is cut into several slices also keeps its keys and values
// in a cache that later slices of the same sequence read: 2 (K and V) x b l h x 2 bytes / t per
// layer, held until the slice's backward.
//
// Today's recipes (FACTS.md "Today's recipes"; ActivationPolicy below):
//   * sequence parallelism shards the replicated 10 l b h over the tp group too: the layer
//     keeps l b h / t (34 + 5 a (c + l) / h) (FACTS.md's s b h / t (34 + 5 a s / h));
//   * selective recomputation drops the attention core's 5 a b l (c + l) / t (softmax, its
//     dropout mask and output), recomputed inside the backward: l b h (10 + 24/t) without
//     and 34 l b h / t with sequence parallelism;
//   * full recomputation keeps only each layer's input, 2 l b h (/ t with sequence
//     parallelism; counted in the attention block, the layer's first), and rebuilds the
//     layer's activations (LayerRecomputeBytes: one layer's activations without
//     recomputation) just before its backward;
//   * ZeRO (Rajbhandari et al. 2020) shards the training state over N data-parallel ranks
//     (TrainingState below).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "models/compute_cost.h"
#include "models/model_card.h"
#include "models/units.h"

namespace terasim {

// Activation recomputation (FACTS.md): none, selective (attention core), full (layer input).
enum class Recompute { kNone, kSelective, kFull };
std::string_view RecomputeName(Recompute recompute);  // "none", "selective", "full"
// The inverse of RecomputeName; nullopt for an unknown name.
std::optional<Recompute> ParseRecompute(std::string_view name);

// How a forward keeps its activations.
struct ActivationPolicy {
  Recompute recompute = Recompute::kNone;
  bool sequence_parallel = false;  // LayerNorm / dropout activations sharded over the tp group
};

// Activation bytes one layer (block = kWhole) or one block keeps from its forward until its
// backward, per device, for `rows` sequences of a slice of `tokens` tokens after `context`.
// Precondition: rows >= 1, tokens >= 0, context >= 0, tp >= 1.
Bytes LayerActivationBytes(const ModelCard& model, int rows, int64_t tokens, int64_t context,
                           int tp, Block block);

// The same under `policy` (see the top of this file); with the default policy equal to the
// overload above. Precondition as above.
Bytes LayerActivationBytes(const ModelCard& model, int rows, int64_t tokens, int64_t context,
                           int tp, Block block, ActivationPolicy policy);

// What full recomputation rebuilds of one layer (or block) while it is recomputed before its
// backward: the activations it would have kept without recomputation, with the same sequence
// parallelism.
Bytes LayerRecomputeBytes(const ModelCard& model, int rows, int64_t tokens, int64_t context, int tp,
                          Block block, bool sequence_parallel);

// In 1F1B the first stage holds P micro-batches' activations of its L / P layers (L layers'
// worth); interleaving V chunks per device multiplies that by 1 + (P - 1) / (P V)
// (Korthikanti et al. 2022; a generated interleaved schedule's first rank has P V + P - 1
// chunks of L / (P V) layers in flight at its first backward, the same number).
// Precondition: pp >= 1, virtual_stages >= 1.
double InterleavedInFlightFactor(int pp, int virtual_stages);

// The key/value cache of one layer for a slice: 2 * rows * tokens * hidden * 2 / tp bytes for
// kWhole and kAttention, 0 for kMlp.
Bytes LayerKvCacheBytes(const ModelCard& model, int rows, int64_t tokens, int tp, Block block);

// Parameters of one layer (or block) held by one rank of a tp group (Megatron's split):
//     attention  (4 h^2 + 3 h) / t + 3 h   (QKV and output weights and the QKV bias split;
//                                            the output bias and the LayerNorm replicated)
//     MLP        (2 h f + f) / t + 3 h
// For t = 1 the whole layer is ModelCard::ParamsPerLayer().
int64_t LayerShardParams(const ModelCard& model, int tp, Block block);

// The training state of `params` parameters under mixed-precision Adam (16 bytes each).
struct TrainingStateBytes {
  Bytes weights = 0;          // fp16 weights: 2 bytes per parameter
  Bytes gradients = 0;        // fp16 gradients: 2
  Bytes optimizer_state = 0;  // fp32 master weights and two moments: 12
  Bytes Total() const { return weights + gradients + optimizer_state; }
};
TrainingStateBytes TrainingState(int64_t params);

// The same with ZeRO stage `zero_stage` (0 = plain data parallelism) over `dp` data-parallel
// ranks, K = 12 (Rajbhandari et al. 2020; a shard is ceil(params / dp) parameters):
//   stage 0  16 P                       weights 2 P,      gradients 2 P,      optimizer 12 P
//   stage 1  4 P + 12 P / N             weights 2 P,      gradients 2 P,      optimizer 12 P / N
//   stage 2  2 P + 14 P / N             weights 2 P,      gradients 2 P / N,  optimizer 12 P / N
//   stage 3  16 P / N                   weights 2 P / N,  gradients 2 P / N,  optimizer 12 P / N
// Stage 3 also all-gathers each layer's parameters while it computes (ZeroGatheredBytes).
// Precondition: 0 <= zero_stage <= 3, dp >= 1.
TrainingStateBytes TrainingState(int64_t params, int zero_stage, int dp);

// ZeRO stage 3: the fp16 parameters of one layer (or block) shard of `shard_params`
// parameters gathered from the data-parallel group while it computes: 2 bytes each.
Bytes ZeroGatheredBytes(int64_t shard_params);

// One activation (or its gradient) crossing a stage boundary: rows * tokens * hidden * 2.
Bytes BoundaryTensorBytes(const ModelCard& model, int rows, int64_t tokens);

}  // namespace terasim

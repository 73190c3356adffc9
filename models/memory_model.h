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
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "models/compute_cost.h"
#include "models/model_card.h"
#include "models/units.h"

namespace terasim {

// Activation bytes one layer (block = kWhole) or one block keeps from its forward until its
// backward, per device, for `rows` sequences of a slice of `tokens` tokens after `context`.
// Precondition: rows >= 1, tokens >= 0, context >= 0, tp >= 1.
Bytes LayerActivationBytes(const ModelCard& model, int rows, int64_t tokens, int64_t context,
                           int tp, Block block);

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

// One activation (or its gradient) crossing a stage boundary: rows * tokens * hidden * 2.
Bytes BoundaryTensorBytes(const ModelCard& model, int rows, int64_t tokens);

}  // namespace terasim

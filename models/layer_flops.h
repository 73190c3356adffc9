// Exact FLOPs and bytes moved of the layer math of a token slice (DESIGN.md section 3,
// FACTS.md "Transformer arithmetic").
//
// Forward of one layer for b rows of a slice of l tokens after c tokens of context, hidden h,
// MLP size f, per rank of a tp group of t (every matmul is split t ways):
//     attention projections  8 b l h^2 / t       (QKV 6 b l h^2, output 2 b l h^2)
//     MLP                    4 b l h f / t
//     attention              4 b l (c + l) h / t (scores Q K^T and their product with V over
//                                                  the full l x (c + l) block)
// With f = 4h this is 24 b l h^2 + 4 b l (c + l) h. The kAttention block is the projections
// plus attention, kMlp the MLP. LayerNorm, softmax, GeLU and the residuals are left out: they
// are memory traffic, not FLOPs.
//
// Backward is twice the forward. Each weight matmul Y = X W has two backward matmuls of its
// size: dX = dY W^T (BackwardInput) and dW = X^T dY (BackwardWeight). The score and value
// products have no weights: both of their backward products go to BackwardInput. So
// BackwardInput = projections + MLP + 2 x attention, BackwardWeight = projections + MLP.
// With work.recompute_attention (selective recomputation) the backward and the backward input
// also recompute the attention core's forward: + attention.
//
// Thread safety: pure functions.
#pragma once

#include "models/compute_cost.h"
#include "models/model_card.h"
#include "models/units.h"

namespace terasim {

// The forward FLOPs of one layer, split by where they are spent.
struct ForwardFlops {
  Flops projections = 0;  // QKV and output projection
  Flops mlp = 0;
  Flops attention = 0;  // scores and values
  Flops Total() const { return projections + mlp + attention; }
};

// Forward FLOPs of one layer (or one block of it) on one rank, for work's rows, tokens,
// context, tp and block (work.pass and work.layers are ignored).
ForwardFlops LayerForwardFlops(const ModelCard& model, const SliceWork& work);

// FLOPs of one layer (or block) for work.pass on one rank: forward, 2 x forward for
// kBackward, the split above for kBackwardInput / kBackwardWeight, 0 for kOptimizer (the
// Adam update is memory traffic; see LayerBytes).
Flops LayerPassFlops(const ModelCard& model, const SliceWork& work);

// FLOPs of the whole work: work.layers x LayerPassFlops.
Flops WorkFlops(const ModelCard& model, const SliceWork& work);

// Bytes one layer (or block) moves to and from device memory for work.pass on one rank; what
// the roofline's memory term charges:
//   forward          weights (2 per parameter) + input and output (2 b l h each) + the
//                    activations it saves (LayerActivationBytes) + the context's keys and
//                    values it reads (2 x 2 b c h / t, attention only)
//   backward input   weights + saved activations + output gradient in, input gradient out
//                    + the context's keys and values read and their gradients written
//   backward weight  saved activations + output gradient + weight gradients written
//   backward         backward input + backward weight
//   optimizer        28 bytes per parameter: fp32 master weight and two moments read and
//                    written (24), fp16 gradient read and fp16 weight written (4)
Bytes LayerBytes(const ModelCard& model, const SliceWork& work);

}  // namespace terasim

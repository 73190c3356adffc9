#include "models/layer_flops.h"

#include "models/memory_model.h"

namespace terasim {

ForwardFlops LayerForwardFlops(const ModelCard& model, const SliceWork& work) {
  const double b = work.rows;
  const double l = static_cast<double>(work.tokens);
  const double c = static_cast<double>(work.context);
  const double h = model.hidden;
  const double f = model.ffn;
  const double t = work.tp;
  ForwardFlops out;
  if (work.block != Block::kMlp) {
    out.projections = 8 * b * l * h * h / t;
    out.attention = 4 * b * l * (c + l) * h / t;
  }
  if (work.block != Block::kAttention) out.mlp = 4 * b * l * h * f / t;
  return out;
}

Flops LayerPassFlops(const ModelCard& model, const SliceWork& work) {
  const ForwardFlops fwd = LayerForwardFlops(model, work);
  const Flops weight_matmuls = fwd.projections + fwd.mlp;
  const Flops recomputed = work.recompute_attention ? fwd.attention : 0;
  switch (work.pass) {
    case Pass::kForward:
      return fwd.Total();
    case Pass::kBackward:
      return 2 * fwd.Total() + recomputed;
    case Pass::kBackwardInput:
      return weight_matmuls + 2 * fwd.attention + recomputed;
    case Pass::kBackwardWeight:
      return weight_matmuls;
    case Pass::kOptimizer:
      return 0;
  }
  return 0;
}

Flops WorkFlops(const ModelCard& model, const SliceWork& work) {
  return work.layers * LayerPassFlops(model, work);
}

Bytes LayerBytes(const ModelCard& model, const SliceWork& work) {
  const int64_t params = LayerShardParams(model, work.tp, work.block);
  const Bytes weights = 2 * params;
  const Bytes io = BoundaryTensorBytes(model, work.rows, work.tokens);  // one b x l x h tensor
  const Bytes saved =
      LayerActivationBytes(model, work.rows, work.tokens, work.context, work.tp, work.block);
  const Bytes context_kv =
      LayerKvCacheBytes(model, work.rows, work.context, work.tp, work.block);  // 2 x 2 b c h / t
  const Bytes backward_input = weights + saved + 2 * io + 2 * context_kv;
  const Bytes backward_weight = saved + io + weights;
  switch (work.pass) {
    case Pass::kForward:
      return weights + 2 * io + saved + context_kv;
    case Pass::kBackward:
      return backward_input + backward_weight;
    case Pass::kBackwardInput:
      return backward_input;
    case Pass::kBackwardWeight:
      return backward_weight;
    case Pass::kOptimizer:
      return 28 * params;
  }
  return 0;
}

}  // namespace terasim

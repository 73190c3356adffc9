#include "models/memory_model.h"

#include <algorithm>

namespace terasim {

std::string_view RecomputeName(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

std::optional<Recompute> ParseRecompute(std::string_view name) {
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    if (RecomputeName(r) == name) return r;
  }
  return std::nullopt;
}

Bytes LayerActivationBytes(const ModelCard& model, int rows, int64_t tokens, int64_t context,
                           int tp, Block block) {
  return LayerActivationBytes(model, rows, tokens, context, tp, block, ActivationPolicy{});
}

Bytes LayerActivationBytes(const ModelCard& model, int rows, int64_t tokens, int64_t context,
                           int tp, Block block, ActivationPolicy policy) {
  const int64_t b = rows;
  const int64_t h = model.hidden;
  const int64_t f = model.ffn;
  const int64_t a = model.heads;
  const int64_t lbh = tokens * b * h;
  const int64_t sp = policy.sequence_parallel ? tp : 1;  // divides the non-parallel terms
  if (policy.recompute == Recompute::kFull) {
    // The layer's input only, in its attention block (the layer's first).
    return block == Block::kMlp ? 0 : 2 * lbh / sp;
  }
  const Bytes core =
      policy.recompute == Recompute::kSelective ? 0 : 5 * a * b * tokens * (context + tokens) / tp;
  const Bytes attention = 5 * lbh / sp + 8 * lbh / tp + core;
  const Bytes mlp = 5 * lbh / sp + 4 * tokens * b * f / tp;
  switch (block) {
    case Block::kWhole:
      return attention + mlp;
    case Block::kAttention:
      return attention;
    case Block::kMlp:
      return mlp;
  }
  return 0;
}

Bytes LayerRecomputeBytes(const ModelCard& model, int rows, int64_t tokens, int64_t context, int tp,
                          Block block, bool sequence_parallel) {
  return LayerActivationBytes(model, rows, tokens, context, tp, block,
                              {Recompute::kNone, sequence_parallel});
}

double InterleavedInFlightFactor(int pp, int virtual_stages) {
  return 1.0 + static_cast<double>(pp - 1) / (static_cast<double>(pp) * virtual_stages);
}

Bytes LayerKvCacheBytes(const ModelCard& model, int rows, int64_t tokens, int tp, Block block) {
  if (block == Block::kMlp) return 0;
  return 2 * int64_t{rows} * tokens * model.hidden * 2 / tp;
}

int64_t LayerShardParams(const ModelCard& model, int tp, Block block) {
  const int64_t h = model.hidden;
  const int64_t f = model.ffn;
  const int64_t attention = (4 * h * h + 3 * h) / tp + 3 * h;
  const int64_t mlp = (2 * h * f + f) / tp + 3 * h;
  switch (block) {
    case Block::kWhole:
      return attention + mlp;
    case Block::kAttention:
      return attention;
    case Block::kMlp:
      return mlp;
  }
  return 0;
}

TrainingStateBytes TrainingState(int64_t params) {
  return TrainingStateBytes{2 * params, 2 * params, 12 * params};
}

TrainingStateBytes TrainingState(int64_t params, int zero_stage, int dp) {
  const int64_t shard = (params + dp - 1) / std::max(1, dp);
  TrainingStateBytes s = TrainingState(params);
  if (zero_stage >= 1) s.optimizer_state = 12 * shard;
  if (zero_stage >= 2) s.gradients = 2 * shard;
  if (zero_stage >= 3) s.weights = 2 * shard;
  return s;
}

Bytes ZeroGatheredBytes(int64_t shard_params) { return 2 * shard_params; }

Bytes BoundaryTensorBytes(const ModelCard& model, int rows, int64_t tokens) {
  return int64_t{rows} * tokens * model.hidden * 2;
}

}  // namespace terasim

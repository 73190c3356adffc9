#include "models/memory_model.h"

namespace terasim {

Bytes LayerActivationBytes(const ModelCard& model, int rows, int64_t tokens, int64_t context,
                           int tp, Block block) {
  const int64_t b = rows;
  const int64_t h = model.hidden;
  const int64_t f = model.ffn;
  const int64_t a = model.heads;
  const int64_t lbh = tokens * b * h;
  const Bytes attention = 5 * lbh + 8 * lbh / tp + 5 * a * b * tokens * (context + tokens) / tp;
  const Bytes mlp = 5 * lbh + 4 * tokens * b * f / tp;
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

Bytes BoundaryTensorBytes(const ModelCard& model, int rows, int64_t tokens) {
  return int64_t{rows} * tokens * model.hidden * 2;
}

}  // namespace terasim

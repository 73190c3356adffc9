#include <catch2/catch.hpp>

#include "models/memory_model.h"
#include "models/model_card.h"

using namespace terasim;

TEST_CASE("activations of a whole sequence follow s b h (34 + 5 a s / h)", "[models][memory]") {
  ModelCard m = LoadModelCard("gpt3-175b");
  const int64_t s = 2048, b = 2, h = m.hidden, a = m.heads;
  // FACTS.md, no tensor parallelism: s b h (34 + 5 a s / h) = 34 s b h + 5 a s^2 b.
  CHECK(LayerActivationBytes(m, 2, s, 0, 1, Block::kWhole) == 34 * s * b * h + 5 * a * s * s * b);
  // With tp t: s b h (10 + 24/t + 5 a s / (h t)).
  for (int64_t t : {2, 4, 8}) {
    CHECK(LayerActivationBytes(m, 2, s, 0, static_cast<int>(t), Block::kWhole) ==
          10 * s * b * h + 24 * s * b * h / t + 5 * a * s * s * b / t);
  }
  // The blocks add up to the layer.
  CHECK(LayerActivationBytes(m, 2, s, 0, 4, Block::kAttention) +
            LayerActivationBytes(m, 2, s, 0, 4, Block::kMlp) ==
        LayerActivationBytes(m, 2, s, 0, 4, Block::kWhole));
}

TEST_CASE("a slice keeps an l x (c + l) score block and its key/value cache", "[models][memory]") {
  ModelCard m = LoadModelCard("gpt3-1b");
  const int64_t l = 256, c = 768, b = 1, h = m.hidden, a = m.heads, t = 2;
  // l b h (10 + 24/t) + 5 a b l (c + l) / t.
  CHECK(LayerActivationBytes(m, 1, l, c, 2, Block::kWhole) ==
        10 * l * b * h + 24 * l * b * h / t + 5 * a * b * l * (c + l) / t);
  // Key/value cache: 2 (K, V) x b l h x 2 bytes / t, none in the MLP block.
  CHECK(LayerKvCacheBytes(m, 1, l, 2, Block::kWhole) == 2 * b * l * h * 2 / t);
  CHECK(LayerKvCacheBytes(m, 1, l, 2, Block::kAttention) == 2 * b * l * h * 2 / t);
  CHECK(LayerKvCacheBytes(m, 1, l, 2, Block::kMlp) == 0);
  // Slices of one sequence keep fewer score bytes than the whole sequence at once.
  const Bytes sliced = LayerActivationBytes(m, 1, 1024, 0, 1, Block::kWhole) +
                       LayerActivationBytes(m, 1, 1024, 1024, 1, Block::kWhole);
  CHECK(sliced < LayerActivationBytes(m, 1, 2048, 0, 1, Block::kWhole));
}

TEST_CASE("training state is 16 bytes per parameter of the tp shard", "[models][memory]") {
  ModelCard m = LoadModelCard("gpt3-175b");
  const int64_t h = m.hidden, f = m.ffn;
  // Without tp the shard is the whole layer: 12 h^2 + 13 h.
  CHECK(LayerShardParams(m, 1, Block::kWhole) == m.ParamsPerLayer());
  // Megatron split: (4 h^2 + 2 h f + 3 h + f) / t + 6 h replicated (output biases, LayerNorms).
  CHECK(LayerShardParams(m, 8, Block::kWhole) == (4 * h * h + 2 * h * f + 3 * h + f) / 8 + 6 * h);
  CHECK(LayerShardParams(m, 8, Block::kAttention) + LayerShardParams(m, 8, Block::kMlp) ==
        LayerShardParams(m, 8, Block::kWhole));
  TrainingStateBytes s = TrainingState(1000);
  // fp16 weights 2, fp16 gradients 2, fp32 master + two moments 12.
  CHECK(s.weights == 2000);
  CHECK(s.gradients == 2000);
  CHECK(s.optimizer_state == 12000);
  CHECK(s.Total() == 16000);
  // The stage-boundary activation: 2 h bytes per token (24 KB for 175B).
  CHECK(BoundaryTensorBytes(m, 1, 1) == 24576);
}

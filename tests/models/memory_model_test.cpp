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

TEST_CASE("sequence parallelism and selective recomputation follow Korthikanti et al.",
          "[models][memory]") {
  ModelCard m = LoadModelCard("gpt3-175b");
  const int64_t s = 2048, b = 1, h = m.hidden, a = m.heads;
  for (int64_t t : {1, 2, 8}) {
    INFO("t = " << t);
    const int tp = static_cast<int>(t);
    // Tensor + sequence parallelism: s b h / t (34 + 5 a s / h) = (34 s b h + 5 a s^2 b) / t.
    const ActivationPolicy sp{Recompute::kNone, true};
    CHECK(LayerActivationBytes(m, 1, s, 0, tp, Block::kWhole, sp) ==
          34 * s * b * h / t + 5 * a * s * s * b / t);
    // Selective recomputation with sequence parallelism: 34 s b h / t.
    const ActivationPolicy sel_sp{Recompute::kSelective, true};
    CHECK(LayerActivationBytes(m, 1, s, 0, tp, Block::kWhole, sel_sp) == 34 * s * b * h / t);
    // Selective without sequence parallelism: s b h (10 + 24 / t).
    const ActivationPolicy sel{Recompute::kSelective, false};
    CHECK(LayerActivationBytes(m, 1, s, 0, tp, Block::kWhole, sel) ==
          10 * s * b * h + 24 * s * b * h / t);
    // Full recomputation: the layer's input, 2 s b h (/ t with sequence parallelism), all in
    // the attention block.
    const ActivationPolicy full{Recompute::kFull, false};
    const ActivationPolicy full_sp{Recompute::kFull, true};
    CHECK(LayerActivationBytes(m, 1, s, 0, tp, Block::kWhole, full) == 2 * s * b * h);
    CHECK(LayerActivationBytes(m, 1, s, 0, tp, Block::kWhole, full_sp) == 2 * s * b * h / t);
    CHECK(LayerActivationBytes(m, 1, s, 0, tp, Block::kMlp, full) == 0);
    // While recomputed the layer holds its full activations again: s b h (10 + 24/t + 5as/(ht)).
    CHECK(LayerRecomputeBytes(m, 1, s, 0, tp, Block::kWhole, false) ==
          10 * s * b * h + 24 * s * b * h / t + 5 * a * s * s * b / t);
  }
  // The default policy is the original formula.
  CHECK(LayerActivationBytes(m, 2, 512, 512, 4, Block::kAttention, ActivationPolicy{}) ==
        LayerActivationBytes(m, 2, 512, 512, 4, Block::kAttention));
  CHECK(ParseRecompute("selective") == Recompute::kSelective);
  CHECK(!ParseRecompute("some"));
}

TEST_CASE("ZeRO stages shard the training state as Rajbhandari et al.", "[models][memory]") {
  const int64_t psi = 1000, n = 8;
  const int64_t shard = 125;  // ceil(1000 / 8)
  // Stage 0: 16 Psi.
  CHECK(TrainingState(psi, 0, n).Total() == 16 * psi);
  // Stage 1: 4 Psi + 12 Psi / N = 4000 + 1500.
  TrainingStateBytes s1 = TrainingState(psi, 1, n);
  CHECK(s1.weights == 2 * psi);
  CHECK(s1.gradients == 2 * psi);
  CHECK(s1.optimizer_state == 12 * shard);
  CHECK(s1.Total() == 5500);
  // Stage 2: 2 Psi + 14 Psi / N = 2000 + 1750.
  TrainingStateBytes s2 = TrainingState(psi, 2, n);
  CHECK(s2.gradients == 2 * shard);
  CHECK(s2.Total() == 3750);
  // Stage 3: 16 Psi / N = 2000.
  TrainingStateBytes s3 = TrainingState(psi, 3, n);
  CHECK(s3.weights == 2 * shard);
  CHECK(s3.Total() == 2000);
  // A shard rounds up: 1001 parameters over 8 ranks hold 126 each; stage 3: 16 x 126.
  CHECK(TrainingState(1001, 3, 8).Total() == 16 * 126);
  // Gathered fp16 parameters of a stage-3 layer: 2 bytes each.
  CHECK(ZeroGatheredBytes(500) == 1000);
}

TEST_CASE("interleaving multiplies the first stage's activations by 1 + (p - 1) / (p v)",
          "[models][memory]") {
  // p = 8, v = 3 (the 175B row of FACTS.md): 1 + 7 / 24.
  CHECK(InterleavedInFlightFactor(8, 3) == Approx(1.0 + 7.0 / 24.0));
  // v = 1 is plain 1F1B with a fill of p - 1 more chunks: 1 + (p - 1) / p.
  CHECK(InterleavedInFlightFactor(4, 1) == Approx(1.75));
  CHECK(InterleavedInFlightFactor(1, 4) == Approx(1.0));
}

#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include "models/layer_flops.h"
#include "models/model_card.h"

using namespace terasim;

namespace {

SliceWork Work(Pass pass, int rows, int64_t tokens, int64_t context, int tp = 1,
               Block block = Block::kWhole) {
  SliceWork w;
  w.pass = pass;
  w.rows = rows;
  w.tokens = tokens;
  w.context = context;
  w.tp = tp;
  w.block = block;
  return w;
}

}  // namespace

TEST_CASE("a whole sequence costs 24 b s h^2 + 4 b s^2 h forward", "[models][flops]") {
  ModelCard m = LoadModelCard("gpt3-1b");
  const double b = 2, s = 2048, h = 2048;
  // FACTS.md: forward per layer 24 b s h^2 + 4 b s^2 h (f = 4h).
  CHECK(LayerPassFlops(m, Work(Pass::kForward, 2, 2048, 0)) ==
        Approx(24 * b * s * h * h + 4 * b * s * s * h).epsilon(1e-12));
  // Backward is twice the forward.
  CHECK(LayerPassFlops(m, Work(Pass::kBackward, 2, 2048, 0)) ==
        Approx(2 * (24 * b * s * h * h + 4 * b * s * s * h)).epsilon(1e-12));
}

TEST_CASE("slice FLOPs sum to the unsliced projections and MLP plus the slice attention term",
          "[models][flops]") {
  ModelCard m = LoadModelCard("gpt3-175b");
  const double h = m.hidden, f = m.ffn;
  for (const std::vector<int64_t>& slices :
       {std::vector<int64_t>{2048}, std::vector<int64_t>{704, 688, 656},
        std::vector<int64_t>{120, 120, 120, 120, 112, 112, 112, 112, 112, 112, 104, 104, 104, 104,
                             104, 104, 104, 104, 64}}) {
    for (int tp : {1, 4, 8}) {
      const double b = 3;
      double sum = 0;
      double attention_term = 0;  // sum_i l_i (c_i + l_i)
      int64_t context = 0;
      for (int64_t l : slices) {
        sum += LayerPassFlops(m, Work(Pass::kForward, 3, l, context, tp));
        attention_term += static_cast<double>(l) * (context + l);
        context += l;
      }
      REQUIRE(context == 2048);
      // 8 b s h^2 + 4 b s h f (projections and MLP do not depend on the slicing) plus
      // 4 b h sum_i l_i (c_i + l_i), all / t.
      const double expected =
          (8 * b * 2048 * h * h + 4 * b * 2048 * h * f) / tp + 4 * b * h * attention_term / tp;
      CHECK(sum == Approx(expected).epsilon(1e-12));
      // For one slice the attention term is s^2; for several it is less (causal blocks).
      if (slices.size() == 1) CHECK(attention_term == 2048.0 * 2048.0);
      if (slices.size() > 1) CHECK(attention_term < 2048.0 * 2048.0);
    }
  }
}

TEST_CASE("blocks and backward halves split the layer's FLOPs exactly", "[models][flops]") {
  ModelCard m = LoadModelCard("gpt3-13b");
  const double b = 1, l = 256, c = 512, h = m.hidden, f = m.ffn;
  for (int tp : {1, 8}) {
    SliceWork whole = Work(Pass::kForward, 1, 256, 512, tp);
    ForwardFlops fwd = LayerForwardFlops(m, whole);
    // projections 8 b l h^2 / t, MLP 4 b l h f / t, attention 4 b l (c + l) h / t.
    CHECK(fwd.projections == Approx(8 * b * l * h * h / tp));
    CHECK(fwd.mlp == Approx(4 * b * l * h * f / tp));
    CHECK(fwd.attention == Approx(4 * b * l * (c + l) * h / tp));
    // attn block + mlp block = whole layer.
    const double attn = LayerPassFlops(m, Work(Pass::kForward, 1, 256, 512, tp, Block::kAttention));
    const double mlp = LayerPassFlops(m, Work(Pass::kForward, 1, 256, 512, tp, Block::kMlp));
    CHECK(attn == Approx(fwd.projections + fwd.attention));
    CHECK(mlp == Approx(fwd.mlp));
    CHECK(attn + mlp == Approx(fwd.Total()));
    // backward input: weight matmuls + 2 x attention; backward weight: weight matmuls; the
    // two sum to 2 x forward.
    const double input = LayerPassFlops(m, Work(Pass::kBackwardInput, 1, 256, 512, tp));
    const double weight = LayerPassFlops(m, Work(Pass::kBackwardWeight, 1, 256, 512, tp));
    CHECK(input == Approx(fwd.projections + fwd.mlp + 2 * fwd.attention));
    CHECK(weight == Approx(fwd.projections + fwd.mlp));
    CHECK(input + weight == Approx(2 * fwd.Total()));
  }
  // Several layers: layers x one layer.
  SliceWork three = Work(Pass::kForward, 1, 256, 512);
  three.layers = 3;
  CHECK(WorkFlops(m, three) == Approx(3 * LayerForwardFlops(m, three).Total()));
  // The optimizer has no layer FLOPs; its cost is bytes.
  CHECK(LayerPassFlops(m, Work(Pass::kOptimizer, 1, 0, 0)) == 0);
}

TEST_CASE("bytes moved count weights, activations and the optimizer's 28 bytes per parameter",
          "[models][flops]") {
  ModelCard m = LoadModelCard("gpt3-1b");
  const int64_t params = m.ParamsPerLayer();
  // Adam: fp32 master + two moments read and written (24) + fp16 grad read, weight written (4).
  CHECK(LayerBytes(m, Work(Pass::kOptimizer, 1, 0, 0)) == 28 * params);
  // Forward moves at least its fp16 weights; backward (input + weight) at least twice that.
  const Bytes fwd = LayerBytes(m, Work(Pass::kForward, 1, 1, 0));
  CHECK(fwd > 2 * params);
  CHECK(LayerBytes(m, Work(Pass::kBackward, 1, 1, 0)) > 2 * fwd - 2 * params);
  CHECK(LayerBytes(m, Work(Pass::kBackward, 1, 64, 0)) ==
        LayerBytes(m, Work(Pass::kBackwardInput, 1, 64, 0)) +
            LayerBytes(m, Work(Pass::kBackwardWeight, 1, 64, 0)));
  // More tokens and more context move more bytes.
  CHECK(LayerBytes(m, Work(Pass::kForward, 1, 512, 0)) > fwd);
  CHECK(LayerBytes(m, Work(Pass::kForward, 1, 1, 1024)) > fwd);
}

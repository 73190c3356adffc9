// The CPU back end's math: gradients against central finite differences on one device, token
// slicing against the unsliced forward, and the small pieces (tensor identities, transport).
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

#include "exec/cpu_backend.h"
#include "exec/inproc_transport.h"
#include "exec/tensor_id.h"
#include "models/model_card.h"

using namespace terasim;

namespace {

constexpr uint64_t kSeed = 7;
constexpr int kRows = 2;

// Forward of the whole stack on one device for `slices` of one micro-batch; returns the loss.
// With `backward`, also runs the backward (slices in descending order) and snapshots.
double RunStack(CpuBackend& backend, const ModelCard& card, const std::vector<int>& cuts,
                bool backward) {
  backend.BeginIteration();
  const int64_t global_tokens = static_cast<int64_t>(kRows) * card.sequence;
  std::vector<SliceRef> slices;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    SliceRef s;
    s.rows = kRows;
    s.t0 = cuts[i];
    s.t1 = cuts[i + 1];
    slices.push_back(s);
  }
  double loss = 0;
  std::vector<std::vector<float>> grads;
  for (const SliceRef& s : slices) {
    std::vector<float> x(s.Values(card.hidden));
    std::vector<float> y(x.size());
    backend.Input(s, x);
    for (int l = 0; l < card.layers; ++l) {
      backend.Forward(l, LayerPart::kWhole, s, x, y);
      std::swap(x, y);
    }
    std::vector<float> g(x.size());
    loss += backend.Loss(s, x, g, global_tokens);
    grads.push_back(std::move(g));
  }
  if (!backward) return loss;
  for (size_t i = slices.size(); i-- > 0;) {
    std::vector<float> g = grads[i];
    std::vector<float> gin(g.size());
    for (int l = card.layers - 1; l >= 0; --l) {
      backend.Backward(l, LayerPart::kWhole, slices[i], g, gin);
      std::swap(g, gin);
    }
    backend.InputBackward(slices[i], g);
  }
  backend.SnapshotGradients(Range{0, card.layers});
  return loss;
}

// The column count of parameter `name` (ParamName) in full layout, 0 if unknown.
int FullCols(const ModelCard& card, const std::string& name) {
  for (int l = 0; l < card.layers; ++l) {
    for (const ParamSpec& spec : LayerParamSpecs(card)) {
      if (ParamName(l, spec) == name) return spec.cols;
    }
  }
  for (const ParamSpec& spec : EmbedParamSpecs(card)) {
    if (ParamName(kEmbedSet, spec) == name) return spec.cols;
  }
  for (const ParamSpec& spec : HeadParamSpecs(card)) {
    if (ParamName(kHeadSet, spec) == name) return spec.cols;
  }
  return 0;
}

ShardSpec AllLayers(const ModelCard& card) {
  ShardSpec shard;
  for (int l = 0; l < card.layers; ++l) shard.layers.push_back(l);
  return shard;
}

// Central differences of the loss for the largest-gradient element of each named tensor.
void CheckFiniteDifferences(const std::string& model, const std::vector<std::string>& names) {
  const ModelCard card = LoadModelCard(model);
  CpuBackend backend(card, AllLayers(card), kSeed);
  RunStack(backend, card, {0, card.sequence}, true);
  FullTensors grads;
  backend.GatherSnapshot(grads);
  for (const std::string& name : names) {
    INFO(model << " " << name);
    REQUIRE(grads.values.count(name) == 1);
    const std::vector<float>& g = grads.values.at(name);
    size_t best = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::abs(g[i]) > std::abs(g[best])) best = i;
    }
    const int full_cols = FullCols(card, name);
    REQUIRE(full_cols > 0);
    const int row = static_cast<int>(best) / full_cols;
    const int col = static_cast<int>(best) % full_cols;
    const float eps = 1e-2f * std::max(1.0f, std::abs(*backend.ParameterValue(name, row, col)));
    backend.AddToParameter(name, row, col, eps);
    const double plus = RunStack(backend, card, {0, card.sequence}, false);
    backend.AddToParameter(name, row, col, -2 * eps);
    const double minus = RunStack(backend, card, {0, card.sequence}, false);
    backend.AddToParameter(name, row, col, eps);
    const double numeric = (plus - minus) / (2.0 * eps);
    INFO("element " << row << "," << col << " analytic " << g[best] << " numeric " << numeric);
    // dL/dw = (L(w + e) - L(w - e)) / 2e up to O(e^2) and fp32 rounding of the loss.
    CHECK(std::abs(numeric - g[best]) <= 2e-2 * std::abs(g[best]) + 1e-5);
  }
}

}  // namespace

TEST_CASE("CpuBackend gradients match finite differences on tiny", "[exec][cpu]") {
  CheckFiniteDifferences(
      "tiny", {"l0.ln1.g", "l0.ln1.b", "l0.qkv.w", "l1.qkv.b", "l1.out.w", "l2.out.b", "l2.ln2.g",
               "l3.fc1.w", "l3.fc1.b", "l3.fc2.w", "l0.fc2.b", "l3.ln2.b"});
}

TEST_CASE("CpuBackend gradients match finite differences on tiny-lm", "[exec][cpu]") {
  CheckFiniteDifferences("tiny-lm", {"embed.tokens", "embed.positions", "l0.qkv.w", "l3.fc2.w",
                                     "head.lnf.g", "head.lnf.b", "head.lm.w"});
}

TEST_CASE("Token slices give the loss and gradients of the unsliced sequence", "[exec][cpu]") {
  const ModelCard card = LoadModelCard("tiny-lm");
  CpuBackend whole(card, AllLayers(card), kSeed);
  CpuBackend sliced(card, AllLayers(card), kSeed);
  const double loss_whole = RunStack(whole, card, {0, card.sequence}, true);
  const double loss_sliced = RunStack(sliced, card, {0, 5, 16, 17, card.sequence}, true);
  // Causal attention: slicing the sequence changes nothing but rounding.
  CHECK(loss_sliced == Approx(loss_whole).epsilon(1e-5));
  FullTensors a;
  FullTensors b;
  whole.GatherSnapshot(a);
  sliced.GatherSnapshot(b);
  for (const auto& [name, values] : a.values) {
    double diff = 0;
    double norm = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      diff += std::pow(values[i] - b.values.at(name)[i], 2);
      norm += std::pow(values[i], 2);
    }
    INFO(name);
    // ||g_sliced - g_whole|| <= 1e-5 ||g_whole||
    CHECK(std::sqrt(diff) <= 1e-5 * std::sqrt(norm));
  }
}

TEST_CASE("ParseTensorId reads every identity of the IR and strips copy suffixes", "[exec]") {
  TensorId act = ParseTensorId("act.l2.m5.t16-32.r1");
  // act with a per-tp-rank copy suffix: stored under the plain identity
  CHECK(act.kind == TensorKind::kActivation);
  CHECK(act.layer == 2);
  CHECK(act.microbatch == 5);
  CHECK(act.tokens == Range{16, 32});
  CHECK(act.tp_copy == 1);
  CHECK(act.store_key == "act.l2.m5.t16-32");
  TensorId tpb = ParseTensorId("tpb.l3.mlp.m0.t0-8");
  CHECK(tpb.kind == TensorKind::kTpBackward);
  CHECK(tpb.part == LayerPart::kMlp);
  CHECK(tpb.store_key == "tpb.l3.mlp.m0.t0-8");
  TensorId wgrad = ParseTensorId("wgrad.s1.r0");
  CHECK(wgrad.kind == TensorKind::kWeightGradient);
  CHECK(wgrad.stage == 1);
  CHECK(wgrad.store_key == "wgrad.s1.r0");
  // Unknown names are opaque buffers under their own name.
  CHECK(ParseTensorId("act.lx.m0.t0-8").kind == TensorKind::kOther);
  CHECK(ParseTensorId("whatever").store_key == "whatever");
}

TEST_CASE("InProcessTransport sums in rank order and matches sends with receives", "[exec]") {
  InProcessTransport transport;
  const std::vector<int> ranks = {2, 0, 1};
  std::vector<std::vector<float>> data = {{1e8f, 1.0f}, {-1e8f, 2.0f}, {1.0f, 3.0f}};
  std::vector<std::vector<float>> gathered(3);
  std::vector<float> received;
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < 3; ++i) {
      threads.emplace_back([&, i] {
        CollectiveCall call{"g", ranks, ranks[i], "x"};
        transport.AllReduce(call, data[i]);
        gathered[i] = transport.AllGather(CollectiveCall{"g", ranks, ranks[i], "y"},
                                          std::vector<float>{static_cast<float>(ranks[i])});
      });
    }
    threads.emplace_back([&] { transport.Send(0, 1, "t", std::vector<float>{4, 5}); });
    threads.emplace_back([&] { received = transport.Recv(1, 0, "t"); });
  }
  for (int i = 0; i < 3; ++i) {
    // Rank order (1e8 + -1e8) + 1 = 1 exactly; every member holds the same bits.
    CHECK(data[i][0] == 1.0f);
    CHECK(data[i][1] == 6.0f);
    // All-gather concatenates in the group's rank order: 2, 0, 1.
    CHECK(gathered[i] == std::vector<float>{2, 0, 1});
  }
  CHECK(received == std::vector<float>{4, 5});
}

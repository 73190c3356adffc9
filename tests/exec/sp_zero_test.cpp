// Sequence parallelism (sp=1) and ZeRO 1-3 (zero=) in the executor: the generators' schedules
// run on the CPU back end with the in-process transport and give the loss, the gradient norm
// and every gathered gradient of one device running the whole batch, within 1e-5 (relative),
// over two iterations (the second after an optimizer step on the first's gradients, so a wrong
// shard of the optimizer step or of the parameters' all-gather shows in the second loss).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "exec/cpu_backend.h"
#include "exec/executor.h"
#include "exec/tensor_id.h"
#include "models/errors.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/slicing_spec.h"
#include "tests/exec/exec_cases.h"

using namespace terasim;

namespace {

using exec_cases::CheckSameGradients;
using exec_cases::Options;

using exec_cases::CheckSameAsReference;
using exec_cases::kIterations;
using exec_cases::Reference;
using exec_cases::Run;

int Count(const Schedule& s, OpKind kind, TensorKind tensor) {
  return static_cast<int>(std::count_if(s.ops.begin(), s.ops.end(), [&](const Op& op) {
    return op.kind == kind && ParseTensorId(op.tensor).kind == tensor;
  }));
}

// `o` with sequence parallelism `sp` and ZeRO stage `zero`.
void CheckSameAsReference(GenerateOptions o, bool sp, int zero) {
  o.sequence_parallel = sp;
  o.zero = zero;
  CheckSameAsReference(o);
}

}  // namespace

TEST_CASE("Sequence parallelism gives the loss and gradients of one device", "[exec][sp]") {
  for (const std::string model : {"tiny", "tiny-lm"}) {
    INFO(model);
    GenerateOptions o = Options(model, Strategy::kOneFOneB, 1, 2, 2, 2);
    o.sequence_parallel = true;
    const Schedule s = Generate(o);
    // Every tp all-reduce of a block became an all-gather before it and a reduce-scatter
    // after it: 2 blocks x 4 layers x 2 micro-batches x 2 passes x 2 tp ranks = 64 each.
    CHECK(Count(s, OpKind::kAllReduce, TensorKind::kTpForward) == 0);
    CHECK(Count(s, OpKind::kAllReduce, TensorKind::kTpBackward) == 0);
    CHECK(Count(s, OpKind::kAllGather, TensorKind::kSpGather) == 64);
    CHECK(Count(s, OpKind::kReduceScatter, TensorKind::kSpScatter) == 64);
    // One tp sum of the replicated parameters' gradients per stage and tp rank: 2 x 2.
    CHECK(Count(s, OpKind::kAllReduce, TensorKind::kSpGradient) == 4);
    CheckSameAsReference(o);
  }
  // Tensor parallelism 4 on one stage, GPipe.
  CheckSameAsReference(Options("tiny-lm", Strategy::kGpipe, 1, 1, 4, 2), true, 0);
  // With data parallelism, and with selective recomputation.
  GenerateOptions dp = Options("tiny", Strategy::kOneFOneB, 2, 2, 2, 1);
  CheckSameAsReference(dp, true, 0);
  dp.recompute = Recompute::kSelective;
  CheckSameAsReference(dp, true, 0);
}

TEST_CASE("Sequence parallelism with TeraPipe token slices", "[exec][sp]") {
  // Each slice's rows x tokens are cut over the tp ranks; the key/value buffer is whole on
  // every rank (the attention runs on the gathered rows).
  GenerateOptions o = Options("tiny-lm", Strategy::kTeraPipe, 1, 2, 2, 2);
  o.uniform_slices = 4;
  o.sequence_parallel = true;
  CheckSameAsReference(o);
}

TEST_CASE("Without the tp sum of the replicated gradients sequence parallelism is wrong",
          "[exec][sp]") {
  // Each tp rank's LayerNorm gradients are those of its own token rows: without the ARSP
  // all-reduce the gathered ln1.g gradient (rank 0's) misses the other rank's rows.
  GenerateOptions o = Options("tiny", Strategy::kGpipe, 1, 1, 2, 1);
  o.sequence_parallel = true;
  Schedule s = Generate(o);
  auto sp_gradients = [](const Op& op) {
    return ParseTensorId(op.tensor).kind == TensorKind::kSpGradient;
  };
  REQUIRE(std::count_if(s.ops.begin(), s.ops.end(), sp_gradients) == 2);  // one per tp rank
  for (const Op& op : s.ops) {
    if (!sp_gradients(op)) continue;
    for (Op& other : s.ops) std::erase(other.after, op.key);
  }
  s.ops.erase(std::remove_if(s.ops.begin(), s.ops.end(), sp_gradients), s.ops.end());
  const ExecResult got = Run(s, o.model);
  const ExecResult& ref = Reference("tiny");
  const auto& g = got.gradients.values.at("l0.ln1.g");
  const auto& want = ref.gradients.values.at("l0.ln1.g");
  double diff = 0;
  for (size_t i = 0; i < want.size(); ++i) diff = std::max(diff, std::abs(double{g[i]} - want[i]));
  CHECK(diff > 1e-4);
  // The loss itself is still every rank's rows together.
  CHECK(got.losses[0] == Approx(ref.losses[0]).epsilon(1e-5));
}

TEST_CASE("ZeRO stages 1, 2 and 3 give the loss and gradients of one device", "[exec][zero]") {
  for (int zero : {1, 2, 3}) {
    INFO("zero " << zero);
    CheckSameAsReference(Options("tiny-lm", Strategy::kOneFOneB, 2, 2, 1, 2), false, zero);
    // Four replicas: the last chunk of each flattened vector is padded.
    CheckSameAsReference(Options("tiny", Strategy::kGpipe, 4, 1, 1, 1), false, zero);
    // With tensor parallelism: the shards of each tp rank's parameters over its dp group.
    CheckSameAsReference(Options("tiny-lm", Strategy::kGpipe, 2, 1, 2, 2), false, zero);
  }
}

TEST_CASE("ZeRO-3 gathers each layer's parameters in the forward and the backward",
          "[exec][zero]") {
  GenerateOptions o = Options("tiny", Strategy::kOneFOneB, 2, 2, 1, 2);
  o.zero = 3;
  const Schedule s = Generate(o);
  // Per layer and unit: one parameter all-gather in the forward and one in the backward, one
  // gradient reduce-scatter: 4 layers x 2 micro-batches x 2 replicas = 16 units of layers.
  CHECK(Count(s, OpKind::kAllGather, TensorKind::kLayerParams) == 2 * 16);
  CHECK(Count(s, OpKind::kReduceScatter, TensorKind::kLayerGradient) == 16);
  CheckSameAsReference(o);
  // With sequence parallelism as well (Megatron-LM's recipe less the schedule).
  o.tp = 2;
  CheckSameAsReference(o, true, 3);
}

TEST_CASE("The optimizer steps only the elements of its shard", "[exec][zero]") {
  const ModelCard card = LoadModelCard("tiny");
  CpuBackend backend(card, ShardSpec{{0}, 0, 1}, 3);
  const Range layer{0, 1};
  const std::vector<float> before = backend.Parameters(layer);
  std::vector<float> grads(before.size(), 1.0f);
  backend.SetGradients(layer, grads);
  const ElementRange shard{100, 300};
  backend.OptimizerStep(layer, AdamOptions{}, shard);
  const std::vector<float> after = backend.Parameters(layer);
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    INFO(i);
    // Adam's first step moves every element by lr (1e-3) against its gradient's sign.
    if (shard.Contains(static_cast<int64_t>(i))) {
      CHECK(after[i] == Approx(before[i] - 1e-3f).margin(1e-6));
    } else {
      CHECK(after[i] == before[i]);
    }
  }
}

TEST_CASE("Released parameters keep only the device's shard until gathered again", "[exec][zero]") {
  const ModelCard card = LoadModelCard("tiny");
  CpuBackend backend(card, ShardSpec{{0}, 0, 1}, 3);
  const Range layer{0, 1};
  const std::vector<float> whole = backend.Parameters(layer);
  const ElementRange shard{1000, 5000};
  backend.ReleaseParameters(layer, shard);
  // Only the shard is left: the rest reads as zero, and layer math refuses to run.
  const std::vector<float> kept = backend.Parameters(layer);
  REQUIRE(kept.size() == whole.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    INFO(i);
    CHECK(kept[i] == (shard.Contains(static_cast<int64_t>(i)) ? whole[i] : 0.0f));
  }
  SliceRef slice;
  slice.t1 = card.sequence;
  std::vector<float> x(static_cast<size_t>(slice.Values(card.hidden)));
  std::vector<float> y(x.size());
  backend.BeginIteration();
  CHECK_THROWS_AS(backend.Forward(0, LayerPart::kWhole, slice, x, y), InternalError);
  // The optimizer steps the kept shard (Adam's first step: lr = 1e-3 against the gradient).
  backend.SetGradients(layer, std::vector<float>(whole.size(), 1.0f));
  backend.OptimizerStep(layer, AdamOptions{}, shard);
  // Gathered again (here: the values as the shard's owner would send them), it runs.
  std::vector<float> gathered = backend.Parameters(layer);
  for (size_t i = 0; i < gathered.size(); ++i) {
    if (shard.Contains(static_cast<int64_t>(i))) {
      CHECK(gathered[i] == Approx(whole[i] - 1e-3f).margin(1e-6));
    } else {
      gathered[i] = whole[i];
    }
  }
  backend.SetParameters(layer, gathered);
  backend.Forward(0, LayerPart::kWhole, slice, x, y);
  CHECK(backend.Parameters(layer) == gathered);
}

TEST_CASE("ZeRO shards the model state each device holds by the stage's factor", "[exec][zero]") {
  // dp 2 x pp 1 x tp 1 on "tiny" (no embedding or head in the stack): each device holds the
  // 4 layers, P = 4 x ParamsPerLayer fp32 parameters, and after the run (the optimizer's step
  // done, ZeRO-3's parameters released after their last use) the state its back end measures
  // from its arrays shrinks over the D = 2 devices of the dp group (Rajbhandari et al. 2020):
  //   stage 0: parameters 4P, gradients 4P, Adam moments 2 x 4P bytes;
  //   stage 1: moments 2 x 4 x P / D; stage 2: gradients 4 x P / D too; stage 3: parameters
  //   4 x P / D too.
  // P / D is exact here (each layer's and the stage's element counts are even), so each
  // device's shard is exactly half.
  constexpr int64_t kFloat = 4;
  constexpr int64_t kD = 2;
  for (int zero : {0, 1, 2, 3}) {
    INFO("zero=" << zero);
    GenerateOptions o = Options("tiny", Strategy::kOneFOneB, kD, 1, 1, 2);
    o.zero = zero;
    const int64_t p = o.model.layers * o.model.ParamsPerLayer();
    REQUIRE(o.model.ParamsPerLayer() % kD == 0);
    const Schedule s = Generate(o);
    const ExecResult got = Run(s, o.model);
    // Still the loss of one device.
    CHECK(got.losses[1] == Approx(Reference("tiny").losses[1]).epsilon(1e-5));
    REQUIRE(got.resident_state.size() == static_cast<size_t>(kD));
    for (const auto& [device, bytes] : got.resident_state) {
      INFO("device " << device);
      CHECK(bytes.parameters == kFloat * p / (zero >= 3 ? kD : 1));
      CHECK(bytes.gradients == kFloat * p / (zero >= 2 ? kD : 1));
      CHECK(bytes.moments == 2 * kFloat * p / (zero >= 1 ? kD : 1));
    }
  }
}

// Activation recomputation in the executor (schedule/op.h recompute=, RECOMPUTE ops): the
// back-end layer (exec/transformer_backend.h) re-runs the forward's own kernels, in the
// forward's order, on the same inputs (the kept layer input; the key/value buffer as the
// forward left it), so a schedule with recomputation computes exactly the same numbers as the
// same schedule without it: the same loss and the same gradients bit for bit, not only
// within 1e-5. The CPU device's kernels are deterministic (exec/device.h), which is what makes
// equality the right assertion.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "exec/cpu_backend.h"
#include "exec/executor.h"
#include "models/errors.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/slicing_spec.h"

using namespace terasim;

namespace {

constexpr int kBatch = 4;  // sequences per iteration

GenerateOptions Options(const std::string& model, Strategy strategy, int pp, int microbatches) {
  GenerateOptions o;
  o.model = LoadModelCard(model);
  o.strategy = strategy;
  o.pp = pp;
  o.microbatches = microbatches;
  o.microbatch_size = kBatch / microbatches;
  return o;
}

ExecResult Run(const Schedule& s, const ModelCard& card, int iterations) {
  ExecOptions options;
  options.iterations = iterations;
  options.seed = 3;
  options.stall_timeout_s = 60;
  return ExecuteInProcess(s, card, options);
}

int Count(const Schedule& s, OpKind kind) {
  return static_cast<int>(
      std::count_if(s.ops.begin(), s.ops.end(), [&](const Op& op) { return op.kind == kind; }));
}

// `o` with `mode` against `o` without recomputation, two iterations (the second after an
// optimizer step on the first's gradients).
void CheckSameAsWithout(GenerateOptions o, Recompute mode) {
  INFO(StrategyName(o.strategy) << " recompute=" << RecomputeName(mode));
  o.recompute = Recompute::kNone;
  const Schedule plain = Generate(o);
  o.recompute = mode;
  const Schedule recomputed = Generate(o);
  // The checker now applies the data-flow rule to it too (docs/execution_rules.md).
  RequireValidSchedule(recomputed);
  // Full: one RECOMPUTE before each backward of each stage (whole stages, tp 1); selective:
  // none.
  CHECK(Count(recomputed, OpKind::kRecompute) ==
        (mode == Recompute::kFull ? Count(plain, OpKind::kBwd) + Count(plain, OpKind::kBwdInput)
                                  : 0));
  const ExecResult want = Run(plain, o.model, 2);
  const ExecResult got = Run(recomputed, o.model, 2);
  REQUIRE(got.losses.size() == 2);
  // Same kernels, same order, same inputs: identical numbers, both iterations.
  CHECK(got.losses == want.losses);
  CHECK(got.grad_norm == want.grad_norm);
  CHECK(want.grad_norm > 0);
  REQUIRE(got.gradients.values.size() == want.gradients.values.size());
  for (const auto& [name, values] : want.gradients.values) {
    INFO(name);
    CHECK(got.gradients.values.at(name) == values);
  }
}

}  // namespace

TEST_CASE("Full and selective recomputation give the same loss and gradients, bit for bit",
          "[exec][recompute]") {
  for (Recompute mode : {Recompute::kFull, Recompute::kSelective}) {
    CheckSameAsWithout(Options("tiny", Strategy::kGpipe, 2, 2), mode);
    CheckSameAsWithout(Options("tiny", Strategy::kOneFOneB, 2, 4), mode);
    // Split backward (BWD_INPUT / BWD_WEIGHT): the RECOMPUTE precedes the BWD_INPUT.
    CheckSameAsWithout(Options("tiny", Strategy::kZbH1, 2, 4), mode);
  }
  // Selective with tensor parallelism 2 (attention and mlp blocks split, the backward of the
  // attention block recomputes its probabilities on each tp rank).
  GenerateOptions tp = Options("tiny", Strategy::kOneFOneB, 2, 2);
  tp.tp = 2;
  CheckSameAsWithout(tp, Recompute::kSelective);
}

TEST_CASE("Recomputation of TeraPipe token slices reads the key/value buffer as left",
          "[exec][recompute]") {
  // Slice i's recomputation needs the keys and values of slices 0..i, which its forward and
  // the earlier slices' forwards wrote; later slices' forwards and the backwards of later
  // slices (which run before slice i's) must not have changed them. Uneven slices, two orders.
  for (SliceOrder order : {SliceOrder::kFlush, SliceOrder::kOneFOneB}) {
    INFO(SliceOrderName(order));
    GenerateOptions uniform = Options("tiny-lm", Strategy::kTeraPipe, 2, 2);
    uniform.uniform_slices = 4;
    uniform.order = order;
    GenerateOptions uneven = Options("tiny", Strategy::kTeraPipe, 4, 1);
    uneven.slicing = ParseSlicingSpec("2:[5,11,16]+1:[20,12]x2");
    uneven.order = order;
    for (Recompute mode : {Recompute::kFull, Recompute::kSelective}) {
      CheckSameAsWithout(uniform, mode);
      CheckSameAsWithout(uneven, mode);
    }
  }
}

TEST_CASE("A recompute=full forward keeps only the layer input until its RECOMPUTE",
          "[exec][recompute]") {
  const ModelCard card = LoadModelCard("tiny");
  CpuBackend backend(card, ShardSpec{{0}, 0, 1}, 3);
  backend.BeginIteration();
  SliceRef slice;
  slice.rows = 1;
  slice.t1 = card.sequence;
  const size_t values = static_cast<size_t>(slice.Values(card.hidden));
  std::vector<float> x(values);
  std::vector<float> y(values);
  std::vector<float> grad(values, 1.0f);
  std::vector<float> grad_in(values);
  backend.Input(slice, x);
  backend.KeepActivations(0, slice, Recompute::kFull);
  backend.Forward(0, LayerPart::kWhole, slice, x, y);
  // The saved activations are gone: the backward cannot run before the RECOMPUTE.
  CHECK_THROWS_AS(backend.Backward(0, LayerPart::kWhole, slice, grad, grad_in), InternalError);
  backend.RecomputeForward(0, slice);
  CHECK_THROWS_AS(backend.RecomputeForward(0, slice), InternalError);  // rebuilt already
  backend.Backward(0, LayerPart::kWhole, slice, grad, grad_in);
  // A slice whose forward kept everything has nothing to recompute from.
  SliceRef other = slice;
  other.microbatch = 1;
  backend.Forward(0, LayerPart::kWhole, other, x, y);
  CHECK_THROWS_AS(backend.RecomputeForward(0, other), InternalError);
}

TEST_CASE("The checker follows a full-recomputation schedule's data flow", "[exec][recompute]") {
  GenerateOptions o = Options("tiny", Strategy::kOneFOneB, 2, 2);
  o.recompute = Recompute::kFull;
  Schedule s = Generate(o);
  CHECK(CheckSchedule(s).empty());
  // Without its RECOMPUTE, a backward reads a finished forward that nothing rebuilt.
  const auto r = std::find_if(s.ops.begin(), s.ops.end(),
                              [](const Op& op) { return op.kind == OpKind::kRecompute; });
  REQUIRE(r != s.ops.end());
  const std::string removed = r->key;
  s.ops.erase(r);
  const std::vector<Diagnostic> d = CheckSchedule(s);
  REQUIRE(!d.empty());
  const std::string text = FormatDiagnostic(s, d.front());
  INFO(text);
  CHECK(text.find("the finished forward") != std::string::npos);
}

TEST_CASE("A RECOMPUTE split over a tp group is refused by name", "[exec][recompute]") {
  auto refusal = [](const GenerateOptions& o) {
    const Schedule s = Generate(o);
    try {
      Run(s, o.model, 1);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A RECOMPUTE split over a tp group.
  GenerateOptions tp = Options("tiny", Strategy::kOneFOneB, 1, 2);
  tp.tp = 2;
  tp.recompute = Recompute::kFull;
  const std::string split = refusal(tp);
  INFO(split);
  CHECK(split.find("RECOMPUTE of whole layers only (tp degree 1), not part=") != std::string::npos);
  // Sequence parallelism and ZeRO run now (tests/exec/sp_zero_test.cpp), also together with
  // recomputation.
  GenerateOptions sp = tp;
  sp.recompute = Recompute::kSelective;
  sp.sequence_parallel = true;
  CHECK(refusal(sp) == "no error");
  GenerateOptions zero = Options("tiny", Strategy::kGpipe, 1, 1);
  zero.dp = 2;
  zero.microbatch_size = kBatch / 2;
  zero.zero = 1;
  zero.recompute = Recompute::kFull;
  CHECK(refusal(zero) == "no error");
}

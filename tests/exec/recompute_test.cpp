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
#include "tests/exec/exec_cases.h"

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

// Ops of `kind` whose tensor identity starts with `prefix` and a dot.
int Count(const Schedule& s, OpKind kind, const std::string& prefix) {
  return static_cast<int>(std::count_if(s.ops.begin(), s.ops.end(), [&](const Op& op) {
    return op.kind == kind && op.tensor.starts_with(prefix + ".");
  }));
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

TEST_CASE("A split RECOMPUTE rebuilds the blocks in order, each once, as the forward did",
          "[exec][recompute][tp]") {
  // One tp rank of degree 1 running the block protocol (the partial sums are whole): the
  // layer's backward after RecomputeBlock / FinishRecompute of both blocks gives the input
  // gradient bit for bit of the backward after a forward that kept everything.
  const ModelCard card = LoadModelCard("tiny");
  SliceRef slice;
  slice.rows = 1;
  slice.t1 = card.sequence;
  const size_t values = static_cast<size_t>(slice.Values(card.hidden));
  auto layer = [&](CpuBackend& backend, Recompute mode) {
    backend.BeginIteration();
    std::vector<float> x(values);
    std::vector<float> partial(values);
    std::vector<float> y(values);
    backend.Input(slice, x);
    backend.KeepActivations(0, slice, mode);
    backend.Forward(0, LayerPart::kAttention, slice, x, partial);
    backend.FinishForward(0, LayerPart::kAttention, slice, partial, {});
    backend.Forward(0, LayerPart::kMlp, slice, {}, partial);
    backend.FinishForward(0, LayerPart::kMlp, slice, partial, y);
    if (mode == Recompute::kFull) {
      // The mlp block needs the attention block's rebuilt finish first.
      CHECK_THROWS_AS(backend.RecomputeBlock(0, LayerPart::kMlp, slice, {}, partial),
                      InternalError);
      backend.RecomputeBlock(0, LayerPart::kAttention, slice, {}, partial);
      backend.FinishRecompute(0, LayerPart::kAttention, slice, partial);
      CHECK_THROWS_AS(backend.RecomputeBlock(0, LayerPart::kAttention, slice, {}, partial),
                      InternalError);  // rebuilt already
      backend.RecomputeBlock(0, LayerPart::kMlp, slice, {}, partial);
      backend.FinishRecompute(0, LayerPart::kMlp, slice, partial);
    }
    std::vector<float> grad(values, 1.0f);
    std::vector<float> grad_in(values);
    backend.Backward(0, LayerPart::kMlp, slice, grad, partial);
    backend.FinishBackward(0, LayerPart::kMlp, slice, partial, {});
    backend.Backward(0, LayerPart::kAttention, slice, {}, partial);
    backend.FinishBackward(0, LayerPart::kAttention, slice, partial, grad_in);
    return grad_in;
  };
  CpuBackend kept(card, ShardSpec{{0}, 0, 1}, 3);
  CpuBackend recomputed(card, ShardSpec{{0}, 0, 1}, 3);
  const std::vector<float> want = layer(kept, Recompute::kNone);
  CHECK(layer(recomputed, Recompute::kFull) == want);
  CHECK(recomputed.Gradients(Range{0, 1}) == kept.Gradients(Range{0, 1}));
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

TEST_CASE("Recomputation split over a tp group gives the loss and gradients of one device",
          "[exec][recompute][tp]") {
  // The reference: one device, the whole batch in one micro-batch, no recomputation.
  const GenerateOptions one = exec_cases::Options("tiny", Strategy::kGpipe, 1, 1, 1, 1);
  const ExecResult ref = Run(Generate(one), one.model, 2);
  REQUIRE(ref.losses.size() == 2);
  for (bool sp : {false, true}) {
    for (Recompute mode : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      INFO("sp=" << sp << " recompute=" << RecomputeName(mode));
      // 1F1B, pp 2 x tp 2, 2 micro-batches.
      GenerateOptions o = exec_cases::Options("tiny", Strategy::kOneFOneB, 1, 2, 2, 2);
      o.sequence_parallel = sp;
      o.recompute = mode;
      const Schedule s = Generate(o);
      RequireValidSchedule(s);  // the data-flow rule included
      // Full: a RECOMPUTE per layer, block, micro-batch and tp rank: 4 x 2 x 2 x 2 = 32, each
      // with its tp collectives (an all-reduce, or with sp an all-gather and a reduce-scatter).
      const int recomputes = mode == Recompute::kFull ? 32 : 0;
      CHECK(Count(s, OpKind::kRecompute) == recomputes);
      CHECK(Count(s, sp ? OpKind::kReduceScatter : OpKind::kAllReduce, sp ? "tprs" : "tpr") ==
            recomputes);
      CHECK(Count(s, OpKind::kAllGather, "tprg") == (sp ? recomputes : 0));
      const ExecResult got = Run(s, o.model, 2);
      REQUIRE(got.losses.size() == 2);
      for (int i = 0; i < 2; ++i) {
        INFO("iteration " << i);
        // The same model on the same data: equal up to fp32 rounding.
        CHECK(got.losses[i] == Approx(ref.losses[i]).epsilon(1e-5));
      }
      CHECK(got.grad_norm == Approx(ref.grad_norm).epsilon(1e-5));
      exec_cases::CheckSameGradients(got, ref);
    }
  }
  // And bit for bit the numbers of the same schedule without recomputation (the recomputed
  // blocks run the forward's kernels on the forward's inputs, tp sums included).
  GenerateOptions tp = Options("tiny-lm", Strategy::kOneFOneB, 2, 2);
  tp.tp = 2;
  CheckSameAsWithout(tp, Recompute::kFull);
  tp.sequence_parallel = true;
  CheckSameAsWithout(tp, Recompute::kFull);
}

TEST_CASE("Full recomputation with tp, sequence parallelism and ZeRO-3 together",
          "[exec][recompute][tp][zero]") {
  // ZeRO-3 gathers a layer's parameters once for its recomputation and backward, and the
  // recomputed LayerNorm (before the all-gather) reads them: dp 2 x tp 2, the loss of one
  // device.
  const GenerateOptions one = exec_cases::Options("tiny", Strategy::kGpipe, 1, 1, 1, 1);
  const ExecResult ref = Run(Generate(one), one.model, 2);
  GenerateOptions o = exec_cases::Options("tiny", Strategy::kOneFOneB, 2, 1, 2, 2);
  o.sequence_parallel = true;
  o.zero = 3;
  o.recompute = Recompute::kFull;
  const Schedule s = Generate(o);
  RequireValidSchedule(s);
  const ExecResult got = Run(s, o.model, 2);
  REQUIRE(got.losses.size() == 2);
  CHECK(got.losses[0] == Approx(ref.losses[0]).epsilon(1e-5));
  CHECK(got.losses[1] == Approx(ref.losses[1]).epsilon(1e-5));
  CHECK(got.grad_norm == Approx(ref.grad_norm).epsilon(1e-5));
}

TEST_CASE("The checker follows a split recomputation's data flow", "[exec][recompute][tp]") {
  for (bool sp : {false, true}) {
    INFO("sp=" << sp);
    GenerateOptions o = Options("tiny", Strategy::kOneFOneB, 2, 2);
    o.tp = 2;
    o.sequence_parallel = sp;
    o.recompute = Recompute::kFull;
    Schedule s = Generate(o);
    CHECK(CheckSchedule(s).empty());
    // Without the recomputation of layer 1's attention block of micro-batch 0 (on both tp
    // ranks, its tp collectives too), the recomputed mlp block reads a finish nobody rebuilt.
    std::erase_if(s.ops, [](const Op& op) {
      const bool block = op.kind == OpKind::kRecompute && op.part == LayerPart::kAttention &&
                         op.layers.begin == 1 && op.microbatch == 0;
      return block || op.tensor.starts_with("tpr.l1.attn.m0.") ||
             op.tensor.starts_with("tprs.l1.attn.m0.") || op.tensor.starts_with("tprg.l1.attn.m0.");
    });
    const std::vector<Diagnostic> d = CheckSchedule(s);
    REQUIRE(!d.empty());
    const std::string text = FormatDiagnostic(s, d.front());
    INFO(text);
    CHECK(text.find("rebuilt by its RECOMPUTE") != std::string::npos);
  }
}

// The executor runs every schedule family of the generators on the tiny models and gets the
// same loss and the same (gathered) weight gradients as one device running the unsliced batch:
// pipelines, token slicing, tensor and data parallelism only change rounding.
#include <catch2/catch.hpp>

#include <cmath>

#include "exec/executor.h"
#include "models/errors.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/slicing_spec.h"
#include "tests/exec/exec_cases.h"

using namespace terasim;

namespace {

using exec_cases::CheckSameGradients;
using exec_cases::kBatch;
using exec_cases::Options;

ExecResult Run(const GenerateOptions& o, int iterations = 1) {
  Schedule s = Generate(o);
  RequireValidSchedule(s);
  REQUIRE(s.batch == kBatch);
  ExecOptions options;
  options.iterations = iterations;
  options.seed = 3;
  options.stall_timeout_s = 60;
  return ExecuteInProcess(s, o.model, options);
}

void CheckSameAsReference(const std::string& model, const GenerateOptions& o) {
  static std::map<std::string, ExecResult> references;
  if (references.count(model) == 0) {
    // The reference: one device, one micro-batch of the whole batch, no slicing.
    references[model] = Run(Options(model, Strategy::kGpipe, 1, 1, 1, 1));
  }
  const ExecResult& ref = references.at(model);
  const ExecResult got = Run(o);
  // Same model, same data: the loss agrees up to fp32 rounding.
  CHECK(got.losses.at(0) == Approx(ref.losses.at(0)).epsilon(1e-5));
  CHECK(got.grad_norm == Approx(ref.grad_norm).epsilon(1e-5));
  CheckSameGradients(got, ref);
}

}  // namespace

TEST_CASE("One device unsliced gives a finite loss and a positive gradient norm", "[exec]") {
  for (const std::string model : {"tiny", "tiny-lm"}) {
    ExecResult r = Run(Options(model, Strategy::kGpipe, 1, 1, 1, 1), 2);
    INFO(model);
    // Two iterations: two losses and two times.
    REQUIRE(r.losses.size() == 2);
    REQUIRE(r.iteration_times_s.size() == 2);
    CHECK(std::isfinite(r.losses[0]));
    CHECK(r.grad_norm > 0);
    // The optimizer step changed the model: the second loss differs from the first.
    CHECK(r.losses[1] != r.losses[0]);
    // One trace row per op per iteration, each with end >= start.
    CHECK(r.trace.rows.size() ==
          2 * Generate(Options(model, Strategy::kGpipe, 1, 1, 1, 1)).ops.size());
    for (const TraceRow& row : r.trace.rows) CHECK(row.end_ns >= row.start_ns);
  }
  // Cross-entropy over 128 tokens starts near log(vocab) = log(128) = 4.85 for tiny-lm.
  ExecResult lm = Run(Options("tiny-lm", Strategy::kGpipe, 1, 1, 1, 1));
  CHECK(lm.losses[0] > 3.0);
  CHECK(lm.losses[0] < 8.0);
}

TEST_CASE("GPipe and 1F1B with 2 and 4 stages match one device", "[exec]") {
  for (Strategy strategy : {Strategy::kGpipe, Strategy::kOneFOneB}) {
    for (int pp : {2, 4}) {
      INFO(StrategyName(strategy) << " pp " << pp);
      CheckSameAsReference("tiny", Options("tiny", strategy, 1, pp, 1, 4));
      CheckSameAsReference("tiny-lm", Options("tiny-lm", strategy, 1, pp, 1, 2));
    }
  }
}

TEST_CASE("Interleaved 1F1B matches one device", "[exec]") {
  GenerateOptions o = Options("tiny-lm", Strategy::kInterleaved, 1, 2, 1, 2);
  o.virtual_stages = 2;
  CheckSameAsReference("tiny-lm", o);
}

TEST_CASE("Interleaved with fewer micro-batches than stages matches one device", "[exec]") {
  // pp 2, v 2, M 1 < P: one group; each rank runs its chunks' forwards, then the backwards.
  GenerateOptions o = Options("tiny-lm", Strategy::kInterleaved, 1, 2, 1, 1);
  o.virtual_stages = 2;
  CheckSameAsReference("tiny-lm", o);
}

TEST_CASE("TeraPipe token slicing matches one device in flush and 1F1B order", "[exec]") {
  for (SliceOrder order : {SliceOrder::kFlush, SliceOrder::kOneFOneB}) {
    INFO(SliceOrderName(order));
    GenerateOptions uniform = Options("tiny-lm", Strategy::kTeraPipe, 1, 2, 1, 2);
    uniform.uniform_slices = 4;
    uniform.order = order;
    CheckSameAsReference("tiny-lm", uniform);
    GenerateOptions uneven = Options("tiny", Strategy::kTeraPipe, 1, 4, 1, 1);
    uneven.slicing = ParseSlicingSpec("2:[5,11,16]+1:[20,12]x2");
    uneven.order = order;
    CheckSameAsReference("tiny", uneven);
  }
}

TEST_CASE("Tensor parallel 2 matches one device with either stage boundary", "[exec]") {
  CheckSameAsReference("tiny-lm", Options("tiny-lm", Strategy::kGpipe, 1, 1, 2, 1));
  for (Boundary boundary : {Boundary::kPointToPoint, Boundary::kBroadcast}) {
    INFO(BoundaryName(boundary));
    GenerateOptions o = Options("tiny", Strategy::kOneFOneB, 1, 2, 2, 2);
    o.boundary = boundary;
    CheckSameAsReference("tiny", o);
  }
}

TEST_CASE("Data parallel 2 matches one device", "[exec]") {
  CheckSameAsReference("tiny-lm", Options("tiny-lm", Strategy::kGpipe, 2, 1, 1, 1));
  CheckSameAsReference("tiny", Options("tiny", Strategy::kOneFOneB, 2, 2, 1, 2));
}

TEST_CASE("Data x pipeline x tensor parallel 2x2x2 with token slicing matches one device",
          "[exec]") {
  GenerateOptions o = Options("tiny-lm", Strategy::kTeraPipe, 2, 2, 2, 1);
  o.slicing = ParseSlicingSpec("1:[8,24]x2");
  o.order = SliceOrder::kOneFOneB;
  CheckSameAsReference("tiny-lm", o);
}

TEST_CASE("Two iterations with the optimizer agree across parallel strategies", "[exec]") {
  const ExecResult ref = Run(Options("tiny-lm", Strategy::kGpipe, 1, 1, 1, 1), 2);
  GenerateOptions o = Options("tiny-lm", Strategy::kTeraPipe, 2, 2, 2, 1);
  o.slicing = ParseSlicingSpec("1:[8,24]x2");
  const ExecResult got = Run(o, 2);
  // Adam on each shard equals Adam on the whole model: the second loss agrees too.
  CHECK(got.losses.at(1) == Approx(ref.losses.at(1)).epsilon(1e-4));
}

TEST_CASE("A schedule for another model is rejected with the file named", "[exec]") {
  Schedule s = Generate(Options("tiny", Strategy::kGpipe, 1, 1, 1, 1));
  s.source = "x.pir";
  ModelCard other = LoadModelCard("tiny");
  other.layers = 6;
  try {
    ExecuteInProcess(s, other, ExecOptions{});
    FAIL("no error");
  } catch (const InputError& e) {
    // "x.pir: layers: the schedule has 4 layers but model tiny has 6"
    CHECK(std::string(e.what()) == "x.pir: layers: the schedule has 4 layers but model tiny has 6");
  }
  // An unknown back end or one not built here is an input error too.
  CHECK_THROWS_AS(ExecuteInProcess(s, LoadModelCard("tiny"), ExecOptions{}, "cuda"), InputError);
}

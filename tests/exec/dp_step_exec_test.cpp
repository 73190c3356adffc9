// The data-parallel steps in the executor (GenerateOptions::dp_step): flattened (a barrier over
// the replica, then one all-reduce per stage) and bucketed (buckets of whole layers, each
// summing only its layers' gradients) give the loss, the gradient norm and every gathered
// gradient of one device running the whole batch (within 1e-5 relative), as the per-stage
// step does, over two iterations (the second after an optimizer step on the first's sums).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "exec/executor.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "tests/exec/exec_cases.h"

using namespace terasim;

namespace {

using exec_cases::CheckSameGradients;
using exec_cases::Options;

ExecResult Run(const Schedule& s, const ModelCard& card) {
  ExecOptions options;
  options.iterations = 2;
  options.seed = 5;
  options.stall_timeout_s = 60;
  return ExecuteInProcess(s, card, options);
}

const ExecResult& Reference(const std::string& model) {
  static std::map<std::string, ExecResult> references;
  if (references.count(model) == 0) {
    const GenerateOptions o = Options(model, Strategy::kGpipe, 1, 1, 1, 1);
    references[model] = Run(Generate(o), o.model);
  }
  return references.at(model);
}

void CheckSameAsReference(const GenerateOptions& o) {
  const Schedule s = Generate(o);
  RequireValidSchedule(s);
  const ExecResult got = Run(s, o.model);
  const ExecResult& ref = Reference(o.model.name);
  REQUIRE(got.losses.size() == 2);
  for (int i = 0; i < 2; ++i) {
    INFO("iteration " << i);
    CHECK(got.losses[i] == Approx(ref.losses[i]).epsilon(1e-5));
  }
  CHECK(got.grad_norm == Approx(ref.grad_norm).epsilon(1e-5));
  CheckSameGradients(got, ref);
}

}  // namespace

TEST_CASE("Every dp step sums the same gradients as one device", "[exec][dp]") {
  for (DpStep step : {DpStep::kPerStage, DpStep::kFlattened, DpStep::kBucketed}) {
    INFO(DpStepName(step));
    // dp 2 x pp 2 (tiny: 4 layers, 2 per stage), one-layer buckets (cap 1 byte) and the
    // default cap (one bucket per stage here).
    for (int64_t cap : {int64_t{1}, kDdpBucketBytes}) {
      GenerateOptions o = Options("tiny", Strategy::kOneFOneB, 2, 2, 1, 2);
      o.dp_step = step;
      o.dp_bucket_bytes = cap;
      CheckSameAsReference(o);
    }
    // dp 2 x tp 2 with sequence parallelism (its tp sum after the buckets) and GPipe.
    GenerateOptions sp = Options("tiny", Strategy::kGpipe, 2, 1, 2, 1);
    sp.dp_step = step;
    sp.dp_bucket_bytes = 1;
    sp.sequence_parallel = true;
    CheckSameAsReference(sp);
    // Split backward (ZB-H1): the buckets wait for the weight-gradient halves.
    GenerateOptions zb = Options("tiny", Strategy::kZbH1, 2, 2, 1, 2);
    zb.dp_step = step;
    zb.dp_bucket_bytes = 1;
    CheckSameAsReference(zb);
  }
}

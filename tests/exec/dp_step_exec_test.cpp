// The data-parallel steps in the executor (GenerateOptions::dp_step): flattened (a barrier over
// the replica, then one all-reduce per stage) and bucketed (buckets of whole layers, each
// summing only its layers' gradients) give the loss, the gradient norm and every gathered
// gradient of one device running the whole batch (within 1e-5 relative), as the per-stage
// step does, over two iterations (the second after an optimizer step on the first's sums).
#include <catch2/catch.hpp>

#include <cstdint>

#include "schedule/generator.h"
#include "tests/exec/exec_cases.h"

using namespace terasim;

using exec_cases::CheckSameAsReference;
using exec_cases::Options;

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

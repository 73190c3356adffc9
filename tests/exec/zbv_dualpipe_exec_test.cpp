// The executor on the zero-bubble schedules with several chunks per rank (interleaved zero
// bubble, ZB-V, DualPipeV) and on PyTorch's own tables of them imported from CSV: the same loss
// and gradient norm as one device running the whole batch, within 1e-5 (only the rounding of
// the micro-batch sums differs).
#include <catch2/catch.hpp>

#include <string>

#include "exec/executor.h"
#include "models/json_reader.h"
#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/torch_csv.h"

using namespace terasim;

namespace {

constexpr int kBatch = 4;  // sequences per iteration

GenerateOptions Options(Strategy strategy, int pp, int v, int microbatches) {
  GenerateOptions o;
  o.model = LoadModelCard("tiny");
  o.strategy = strategy;
  o.pp = pp;
  o.virtual_stages = v;
  o.microbatches = microbatches;
  o.microbatch_size = kBatch / microbatches;
  return o;
}

ExecResult Execute(const GenerateOptions& o) {
  const Schedule s = Generate(o);
  RequireValidSchedule(s);
  REQUIRE(s.batch == kBatch);
  ExecOptions options;
  options.seed = 3;
  options.stall_timeout_s = 60;
  return ExecuteInProcess(s, o.model, options);
}

void CheckSameAsOneDevice(const GenerateOptions& o) {
  static const ExecResult one = Execute(Options(Strategy::kGpipe, 1, 1, 1));
  const ExecResult got = Execute(o);
  CHECK(got.losses.at(0) == Approx(one.losses.at(0)).epsilon(1e-5));
  CHECK(got.grad_norm == Approx(one.grad_norm).epsilon(1e-5));
}

}  // namespace

TEST_CASE("interleaved-zb, zb-v and dualpipe-v match one device", "[exec][zbv][dualpipe]") {
  // tiny: 4 layers; P = 2 with 2 chunks each is one layer per stage. DualPipeV needs M >= 2P.
  for (Strategy strategy : {Strategy::kInterleavedZb, Strategy::kZbV, Strategy::kDualPipeV}) {
    INFO(StrategyName(strategy));
    CheckSameAsOneDevice(Options(strategy, 2, 2, 4));
  }
  // M < P for interleaved zero bubble and M < 2 P - 1 for ZB-V (padding micro-batches dropped).
  CheckSameAsOneDevice(Options(Strategy::kInterleavedZb, 2, 2, 1));
  CheckSameAsOneDevice(Options(Strategy::kZbV, 2, 2, 2));
}

TEST_CASE("PyTorch's zero-bubble tables import and run as one device", "[exec][zbv][dualpipe]") {
  for (const std::string name :
       {"zbv_p2_m4.csv", "dualpipev_p2_m4.csv", "interleaved_zb_p2_v2_m4.csv"}) {
    INFO(name);
    const std::string csv =
        ReadTextFile(std::string(TERASIM_TEST_DATA) + "/../golden/torch_csv/" + name);
    GenerateOptions base = Options(Strategy::kOneFOneB, 1, 1, 4);
    const GenerateOptions o = ImportedOptions(ParseTorchCsv(csv, name), base, name);
    CheckSameAsOneDevice(o);
  }
}

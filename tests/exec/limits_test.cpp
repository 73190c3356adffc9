// What the executor refuses before it starts a thread: more devices than one process runs
// (issue #15: a small .pir declaring 2^31 devices must not start 2^31 threads or allocate per
// device), and more (device, stream) threads than its stated limit.
#include <catch2/catch.hpp>

#include "exec/executor.h"
#include "models/errors.h"
#include "schedule/checker.h"
#include "schedule/generator.h"

using namespace terasim;

namespace {

TEST_CASE("exec refuses more devices than one process runs, naming the limit", "[exec]") {
  const ModelCard card = LoadModelCard("tiny");
  Schedule s;
  s.source = "big.pir";
  s.model = card.name;
  s.layers = card.layers;
  s.sequence = card.sequence;
  s.devices = kMaxDevicesPerProcess + 1;
  // Refused up front: 257 devices, limit 256 (the error names both and the way out, mpirun).
  CHECK_THROWS_AS(ExecuteInProcess(s, card, ExecOptions{}, "cpu"), InputError);
  CHECK_THROWS_WITH(ExecuteInProcess(s, card, ExecOptions{}, "cpu"),
                    Catch::Contains("big.pir: devices 257: exec runs at most 256 devices") &&
                        Catch::Contains("mpirun"));
  s.devices = 2147483647;  // would have been 8 GB of device ids and 2^31 threads
  CHECK_THROWS_WITH(ExecuteInProcess(s, card, ExecOptions{}, "cpu"),
                    Catch::Contains("devices 2147483647"));
}

TEST_CASE("exec runs a schedule at the limits' side of them", "[exec]") {
  // A 2-stage GPipe is far inside both limits: it runs (the limits refuse nothing smaller).
  GenerateOptions o;
  o.model = LoadModelCard("tiny");
  o.strategy = Strategy::kGpipe;
  o.pp = 2;
  o.microbatches = 2;
  o.microbatch_size = 1;
  Schedule s = Generate(o);
  RequireValidSchedule(s);
  const ExecResult r = ExecuteInProcess(s, o.model, ExecOptions{}, "cpu");
  CHECK(r.losses.size() == 1);
}

}  // namespace

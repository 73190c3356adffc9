// The validation engine (tools/validation/) without the CLI: one measured iteration of a
// two-device GPipe schedule on the tiny model, calibrated in the same run (--calib auto), and
// the machine's load average recorded on both sides of it.
#include <catch2/catch.hpp>

#include <string>

#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/pir_format.h"
#include "tools/validation/validation_run.h"

namespace terasim {
namespace {

TEST_CASE("RunValidation measures, fits, simulates and records the load average",
          "[tools][validate]") {
  const std::string golden = std::string(TERASIM_TEST_DATA) + "/../golden/gpipe_p2_m2.pir";
  Schedule schedule = ReadPirFile(golden);
  RequireValidSchedule(schedule);
  const ModelCard card = LoadModelCard("tiny");
  ValidationOptions o;
  o.pir = golden;
  o.calib_path = "auto";
  o.collectives_path = std::string(TERASIM_TEST_DATA) + "/../../sim/data/collectives.json";
  o.iterations = 1;
  o.warmup = 0;
  o.jitter_samples = 0;
  const ValidationResult v = RunValidation(schedule, card, o);
  // One device per schedule device on the local instance.
  CHECK(v.cluster_spec == "local:2");
  CHECK(v.config.at("cluster") == "local:2");
  // One measured iteration, and it is the median.
  CHECK(v.measured_iteration_times_s.size() == 1);
  CHECK(v.median_iteration == 0);
  CHECK(v.vs_model.measured.iteration_ns > 0);
  CHECK(v.vs_model.predicted.iteration_ns > 0);
  // The table was fitted here, for this model.
  CHECK(v.table.model == "tiny");
  CHECK_FALSE(v.points.empty());
  // No jitter asked for: none reported.
  CHECK_FALSE(v.jitter);
  CHECK(v.jitter_json.is_null());
  // /proc/loadavg exists on Linux: both readings, non-negative.
  REQUIRE(v.load_before.has_value());
  REQUIRE(v.load_after.has_value());
  CHECK(*v.load_before >= 0);
  CHECK(*v.load_after >= 0);
  CHECK(v.cores >= 1);
}

}  // namespace
}  // namespace terasim

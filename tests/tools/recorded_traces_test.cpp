// The simulator against runs measured on the cpu back end (traces/data/README.md): for each
// recorded 2-stage schedule (GPipe, 1F1B, TeraPipe), the calibrated cost model (the table
// `terasim validate --calib auto` measured next to the run) and the trace-driven replay (each
// compute op's measured median duration) both predict the measured median iteration within
// 5 %, as `terasim validate` computes them: the median of 101 iterations with speed jitter.
//
// Why jitter: on the recording VM each core's speed varies 10-20 % from one iteration to the
// next, and a pipeline waits for the slower stage at every hand-off, so one iteration at the
// median speed comes out short (by 0-12 % in the runs of traces/data/README.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "models/calibrated_cost.h"
#include "models/model_card.h"
#include "models/roofline_cost.h"
#include "schedule/checker.h"
#include "schedule/pir_format.h"
#include "sim/jitter.h"
#include "sim/simulator.h"
#include "sim/trace_durations.h"
#include "topologies/topology.h"
#include "traces/trace_file.h"
#include "traces/validation.h"

namespace terasim {
namespace {

const std::string kData = std::string(TERASIM_TEST_DATA) + "/../../traces/data/";

TEST_CASE("The calibrated model and the replay predict the recorded cpu iterations within 5 %",
          "[tools][replay][recorded]") {
  const std::string name = GENERATE(std::string("gpipe_p2_m4"), std::string("1f1b_p2_m4"),
                                    std::string("terapipe_p2_m2_s4"));
  INFO(name);
  const Schedule schedule = ReadPirFile(kData + name + ".pir");
  RequireValidSchedule(schedule);
  const ModelCard card = LoadModelCard(kData + "cpu-small.json");
  const Trace trace = ReadTraceFile(kData + name + ".trace.json");
  const CalibrationTable table = LoadCalibrationTable(kData + name + ".calib.json");
  // Iteration 0 is the warm-up; the others are measured, one per profiling round.
  const std::vector<int> iterations = TraceIterations(trace);
  REQUIRE(iterations.size() >= 21);
  REQUIRE(table.speed_factors.size() == iterations.size() - 1);
  Trace steady;
  for (const TraceRow& r : trace.rows) {
    if (r.iteration > 0) steady.rows.push_back(r);
  }
  std::vector<TimeNs> spans;
  for (int it : iterations) {
    if (it > 0) spans.push_back(SummarizeTrace(schedule, trace, it).iteration_ns);
  }
  std::sort(spans.begin(), spans.end());
  const double measured_ns = static_cast<double>(spans[(spans.size() - 1) / 2]);
  const auto error = [&](TimeNs predicted_ns) {
    return (static_cast<double>(predicted_ns) - measured_ns) / measured_ns;
  };

  const Cluster cluster = BuildCluster("local:2");
  const ClusterTopology topology(cluster);
  const RooflineCostModel roofline(card, LoadDeviceSpec(cluster.Instance().device));
  const CalibratedCostModel calibrated(table, &roofline);
  JitterOptions jitter;  // validate's defaults: 101 samples, seed 1
  SimOptions options;

  // The calibrated model: |predicted - measured| / measured <= 5 %.
  jitter.factors = table.speed_factors;
  const JitterResult model = SimulateWithJitter(schedule, topology, calibrated, options, jitter);
  CHECK(std::abs(error(model.median_ns)) <= 0.05);

  // The replay of the measured durations, each device's speed per iteration from the trace.
  options.compute_ns = TraceComputeDurations(schedule, steady, name);
  jitter.factors = TraceSpeedFactors(schedule, steady, name);
  REQUIRE(jitter.factors.size() == iterations.size() - 1);
  const JitterResult replay = SimulateWithJitter(schedule, topology, calibrated, options, jitter);
  CHECK(std::abs(error(replay.median_ns)) <= 0.05);
  // The measured median lies inside the replay's spread.
  CHECK(replay.p10_ns <= measured_ns);
  CHECK(measured_ns <= replay.p90_ns);
}

}  // namespace
}  // namespace terasim

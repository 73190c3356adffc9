// The simulator against traces measured on the cpu back end (traces/data/README.md): replaying
// each recorded schedule with its measured compute durations (trace-driven replay, as
// `terasim simulate --durations-from`) reproduces the measured iteration time.
//
// Tolerance 5 %: the replay takes every compute op's measured median duration, so what is
// left is what the `local` topology models of the rest: each stage-boundary transfer as
// 20 us of latency plus a memory copy, against the measured thread wake-ups and the runner's
// bookkeeping between ops (tens of microseconds each, on a critical path of about 10-20 ops
// of milliseconds each) and run-to-run noise of the ops (the median iteration is compared).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "models/model_card.h"
#include "models/roofline_cost.h"
#include "schedule/checker.h"
#include "schedule/pir_format.h"
#include "sim/simulator.h"
#include "sim/trace_durations.h"
#include "topologies/topology.h"
#include "traces/trace_file.h"
#include "traces/validation.h"

namespace terasim {
namespace {

const std::string kData = std::string(TERASIM_TEST_DATA) + "/../../traces/data/";

TEST_CASE("Trace-driven replay reproduces the recorded cpu iteration times within 5 percent",
          "[tools][replay][recorded]") {
  const std::string name = GENERATE(std::string("gpipe_p2_m4"), std::string("1f1b_p2_m4"),
                                    std::string("terapipe_p2_m2_s4"));
  INFO(name);
  const Schedule schedule = ReadPirFile(kData + name + ".pir");
  RequireValidSchedule(schedule);
  const ModelCard card = LoadModelCard(kData + "cpu-small.json");
  const Trace trace = ReadTraceFile(kData + name + ".trace.json");
  // Iteration 0 is the warm-up; the others are measured.
  std::vector<int> iterations = TraceIterations(trace);
  REQUIRE(iterations.size() >= 3);
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

  const Cluster cluster = BuildCluster("local:2");
  const ClusterTopology topology(cluster);
  const RooflineCostModel roofline(card, LoadDeviceSpec(cluster.Instance().device));
  SimOptions options;
  options.compute_ns = TraceComputeDurations(schedule, steady, name);
  const SimResult replay = Simulate(schedule, topology, roofline, options);
  const double error = (replay.iteration_time_ns - measured_ns) / measured_ns;
  // |replayed - measured| / measured <= 5 % (see the header for why 5 %).
  CHECK(std::abs(error) <= 0.05);
}

}  // namespace
}  // namespace terasim

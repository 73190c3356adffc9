// Tests of the sim-vs-real comparison (traces/validation.h), the scatter plot
// (traces/svg_scatter.h) and measured durations for replay (sim/trace_durations.h). Traces
// come from the simulator with a fake cost model, so that every expectation can be written
// down by hand.
#include <catch2/catch.hpp>

#include <string>

#include "models/errors.h"
#include "schedule/pir_format.h"
#include "sim/simulator.h"
#include "sim/trace_durations.h"
#include "tests/sim/fake_cost.h"
#include "topologies/topology.h"
#include "traces/svg_scatter.h"
#include "traces/validation.h"

namespace terasim {
namespace {

const std::string kGolden = std::string(TERASIM_TEST_DATA) + "/../golden/";

// GPipe, 2 stages of 2 layers, 2 micro-batches of 32 tokens: every forward and backward
// takes 2 x 32 x 15625 ns = 1 ms, the optimizer 1 us.
struct GpipeRun {
  Schedule schedule = ReadPirFile(kGolden + "gpipe_p2_m2.pir");
  Cluster cluster = BuildCluster("local:2");
  ClusterTopology topology{cluster};
  testing::FakeCost cost{15625, 15625, 1000};
  SimResult result = Simulate(schedule, topology, cost);
};

// Every time of the trace multiplied by `factor`.
Trace Scaled(const Trace& trace, double factor) {
  Trace out = trace;
  for (TraceRow& r : out.rows) {
    r.start_ns = static_cast<TimeNs>(r.start_ns * factor);
    r.end_ns = static_cast<TimeNs>(r.end_ns * factor);
  }
  return out;
}

TEST_CASE("A trace compared with itself shows no error and full critical-path agreement",
          "[traces][validation]") {
  const GpipeRun run;
  const TraceComparison c = CompareTraces(run.schedule, run.result.trace, 0, run.result.trace);
  // Identical traces: zero errors, identical paths.
  CHECK(c.iteration_error == 0);
  CHECK(c.bubble_error == 0);
  CHECK(c.critical_path_agreement == 1);
  CHECK(c.compute_mean_abs_rel_error == 0);
  // Every op of the schedule is paired.
  CHECK(c.ops.size() == run.schedule.ops.size());
  for (const DurationGroup& g : c.groups) CHECK(g.rel_error == 0);
}

TEST_CASE("Stretching every time by 10 percent shows as +10 percent per group and per iteration",
          "[traces][validation]") {
  const GpipeRun run;
  const Trace slower = Scaled(run.result.trace, 1.1);
  const TraceComparison c = CompareTraces(run.schedule, run.result.trace, 0, slower);
  // (1.1 t - t) / t = 0.1, up to 1 ns of rounding per time.
  CHECK(c.iteration_error == Approx(0.1).margin(1e-5));
  CHECK(c.compute_mean_abs_rel_error == Approx(0.1).margin(1e-5));
  for (const DurationGroup& g : c.groups) {
    if (g.measured_ns > 1000) CHECK(g.rel_error == Approx(0.1).margin(1e-5));
  }
  // Scaling keeps the order of events, so the critical path is the same.
  CHECK(c.critical_path_agreement == 1);
  // The bubble is a fraction of the span: scaling leaves it unchanged.
  CHECK(c.bubble_error == Approx(0).margin(1e-6));
}

TEST_CASE("The bubble fraction of a GPipe trace is (p-1)/(m+p-1)", "[traces][validation]") {
  const GpipeRun run;
  const TraceSummary s = SummarizeTrace(run.schedule, run.result.trace, 0);
  // p = 2 stages, m = 2 micro-batches, forward = backward: 1/3 idle on each device; the
  // transfers (20 us latency each on `local`) stretch the span by well under 1 %.
  REQUIRE(s.device_bubble.size() == 2);
  CHECK(s.bubble_fraction == Approx(1.0 / 3).margin(0.01));
  // The span is (m + p - 1) x (forward + backward) = 6 ms plus the transfers.
  CHECK(s.iteration_ns >= 6'000'000);
  CHECK(s.iteration_ns < 6'200'000);
}

TEST_CASE("The critical path of a GPipe trace runs from the first forward to the optimizer",
          "[traces][validation]") {
  const GpipeRun run;
  const TraceSummary s = SummarizeTrace(run.schedule, run.result.trace, 0);
  REQUIRE(!s.critical_path.empty());
  // Stage 0 starts the pipeline and finishes last (its backwards come last, then OPT).
  CHECK(s.critical_path.front() == "F.s0.m0.t0-32");
  CHECK(s.critical_path.back() == "OPT.s0.d0");
  // It crosses to stage 1 and back: both stages' ops are on it.
  bool stage1 = false;
  for (const std::string& key : s.critical_path) stage1 |= key.find(".s1.") != std::string::npos;
  CHECK(stage1);
}

TEST_CASE("CompareTraces names a compute op missing from the predicted trace",
          "[traces][validation]") {
  const GpipeRun run;
  Trace partial = run.result.trace;
  partial.rows.erase(std::remove_if(partial.rows.begin(), partial.rows.end(),
                                    [](const TraceRow& r) { return r.key == "B.s1.m1.t0-32"; }),
                     partial.rows.end());
  // The op key in the message.
  CHECK_THROWS_WITH(CompareTraces(run.schedule, run.result.trace, 0, partial),
                    Catch::Matchers::Contains("B.s1.m1.t0-32 is missing from the predicted"));
}

TEST_CASE("Measured durations are the median over iterations and replace the cost model",
          "[traces][validation][replay]") {
  const GpipeRun run;
  // Three iterations of the simulated trace with every compute op taking 5, 100 and 7 x its
  // simulated time: the median is 7 x.
  Trace measured;
  for (int it = 0; it < 3; ++it) {
    const double factor = it == 0 ? 5 : it == 1 ? 100 : 7;
    for (TraceRow r : run.result.trace.rows) {
      r.iteration = it;
      r.end_ns = r.start_ns + static_cast<TimeNs>((r.end_ns - r.start_ns) * factor);
      measured.rows.push_back(r);
    }
  }
  const std::vector<TimeNs> durations = TraceComputeDurations(run.schedule, measured, "m.json");
  const int f0 = run.schedule.FindOp("F.s0.m0.t0-32");
  const int send = run.schedule.FindOp("SF.s0.m0.t0-32");
  // 7 x 1 ms for the forward; -1 (cost model / network) for communication.
  CHECK(durations[f0] == 7'000'000);
  CHECK(durations[send] == -1);

  // Replaying with the measured durations: the compute ops take 7 ms each, so the GPipe span
  // becomes (m + p - 1) x 14 ms = 42 ms plus the transfers.
  SimOptions options;
  options.compute_ns = durations;
  const SimResult replay = Simulate(run.schedule, run.topology, run.cost, options);
  CHECK(replay.iteration_time_ns >= 42'000'000);
  CHECK(replay.iteration_time_ns < 42'200'000);

  // A trace of another schedule lacks the ops: an error naming the trace and the op.
  Trace other;
  CHECK_THROWS_WITH(TraceComputeDurations(run.schedule, other, "m.json"),
                    Catch::Matchers::Contains("m.json: no row for compute op F.s0.m0.t0-32"));
}

TEST_CASE("The scatter SVG has one marker per point and is deterministic", "[traces][svg]") {
  ScatterSeries fwd{"FWD", {1e6, 2e6, 4e6}, {1.1e6, 1.9e6, 4.2e6}};
  ScatterSeries bwd{"BWD", {3e6, 0}, {2.5e6, 1e6}};  // the 0 point is skipped
  const std::string svg = ScatterSvg({fwd, bwd}, ScatterOptions{});
  size_t circles = 0;
  for (size_t pos = svg.find("<circle"); pos != std::string::npos;
       pos = svg.find("<circle", pos + 1)) {
    ++circles;
  }
  // 3 + 1 data points, plus one legend marker per series.
  CHECK(circles == 3 + 1 + 2);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg == ScatterSvg({fwd, bwd}, ScatterOptions{}));
}

}  // namespace
}  // namespace terasim

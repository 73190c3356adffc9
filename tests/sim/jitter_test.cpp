// Speed jitter (sim/jitter.h): per-device speed factors scale compute durations; the median of
// sampled iterations is what a pipeline with jittery devices takes. And the factors a measured
// trace gives (sim/trace_durations.h TraceSpeedFactors).
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

#include "models/errors.h"
#include "sim/jitter.h"
#include "sim/trace_durations.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fake_topology.h"
#include "tests/sim/schedule_builder.h"

namespace terasim {
namespace {

using testing::Compute;
using testing::FakeCost;
using testing::FreeTopology;

// Two devices, one independent compute op each: 1000 tokens x 1 ns = 1000 ns at speed 1, so
// the iteration is 1000 ns x max(f0, f1).
Schedule TwoIndependentOps() {
  Schedule schedule;
  schedule.devices = 2;
  schedule.ops = {Compute("A", 0, "compute", 1, 1000), Compute("B", 1, "compute", 1, 1000)};
  return schedule;
}

TEST_CASE("A device's speed factor scales its compute durations") {
  const Schedule schedule = TwoIndependentOps();
  const auto topology = FreeTopology(2);
  const FakeCost cost(1, 2);
  SimOptions options;
  options.device_speed = {2.0, 0.5};
  const SimResult r = Simulate(schedule, topology, cost, options);
  // A: 1000 ns x 2; B: 1000 ns x 0.5; the iteration is the longer.
  for (const TraceRow& row : r.trace.rows) {
    CHECK(row.end_ns - row.start_ns == (row.device == 0 ? 2000 : 500));
  }
  CHECK(r.iteration_time_ns == 2000);
}

TEST_CASE("The median of jittered iterations: the slower device's, unless the slowness is shared") {
  const Schedule schedule = TwoIndependentOps();
  const auto topology = FreeTopology(2);
  const FakeCost cost(1, 2);
  JitterOptions jitter;
  // Each device 0.9 or 1.1, independently: every combination is a row.
  jitter.factors = {{0.9, 0.9}, {0.9, 1.1}, {1.1, 0.9}, {1.1, 1.1}};
  jitter.samples = 101;
  jitter.seed = 7;
  const JitterResult r = SimulateWithJitter(schedule, topology, cost, {}, jitter);
  REQUIRE(r.iteration_ns.size() == 101);
  // max(f0, f1) is 0.9 only when both draw 0.9 (probability 1/4): the median is 1.1 x 1000,
  // above the 1000 ns at the median speed, and the 10th percentile 0.9 x 1000.
  CHECK(r.median_ns == 1100);
  CHECK(r.p10_ns == 900);
  CHECK(r.p90_ns == 1100);
  CHECK(r.median.iteration_time_ns == r.median_ns);
  const auto fast = std::count(r.iteration_ns.begin(), r.iteration_ns.end(), 900);
  // About a quarter of 101 (binomial, sd 4.4): well inside 10..45.
  CHECK(fast > 10);
  CHECK(fast < 45);
  CHECK(fast + std::count(r.iteration_ns.begin(), r.iteration_ns.end(), 1100) == 101);

  // Same seed, same samples.
  CHECK(SimulateWithJitter(schedule, topology, cost, {}, jitter).iteration_ns == r.iteration_ns);
  // The whole machine slow or fast together: no device waits for the other, and the median is
  // the median speed's 1000 ns (the middle row is drawn about a third of the time, so the
  // median sample is it).
  jitter.factors = {{0.9, 0.9}, {1.0, 1.0}, {1.1, 1.1}};
  CHECK(SimulateWithJitter(schedule, topology, cost, {}, jitter).median_ns == 1000);
  // A row gives device d its factor d; a row of one factor serves every device.
  jitter.factors = {{1.0, 2.0}};
  const JitterResult slow = SimulateWithJitter(schedule, topology, cost, {}, jitter);
  CHECK(slow.median_ns == 2000);
  CHECK(slow.p10_ns == 2000);
  jitter.factors = {{3.0}};
  CHECK(SimulateWithJitter(schedule, topology, cost, {}, jitter).median_ns == 3000);
}

TEST_CASE("Jitter options without factors, with a factor <= 0 or no samples are rejected") {
  const Schedule schedule = TwoIndependentOps();
  const auto topology = FreeTopology(2);
  const FakeCost cost(1, 2);
  JitterOptions jitter;
  CHECK_THROWS_AS(SimulateWithJitter(schedule, topology, cost, {}, jitter), InputError);
  jitter.origin = "calib.json";
  jitter.factors = {{1.0, 0.0}};
  CHECK_THROWS_WITH(
      SimulateWithJitter(schedule, topology, cost, {}, jitter),
      Catch::Matchers::Contains("calib.json: speed factors row 0: 0 must be a finite"));
  jitter.factors = {{1.0, std::numeric_limits<double>::infinity()}};
  CHECK_THROWS_AS(SimulateWithJitter(schedule, topology, cost, {}, jitter), InputError);
  // Three devices: a row of 2 factors is neither shared (1) nor one per device.
  Schedule three = schedule;
  three.devices = 3;
  jitter.factors = {{1.0, 1.1}};
  CHECK_THROWS_WITH(
      SimulateWithJitter(three, testing::FreeTopology(3), cost, {}, jitter),
      Catch::Matchers::Contains("calib.json: speed factors row 0 has 2 factors for 3 devices"));
  jitter.factors = {{1.0}};
  jitter.samples = 0;
  CHECK_THROWS_AS(SimulateWithJitter(schedule, topology, cost, {}, jitter), InputError);
}

TEST_CASE("A trace's speed factors: each device's compute time per iteration over its medians") {
  Schedule schedule;
  schedule.devices = 2;
  schedule.ops = {Compute("A", 0, "compute", 1, 10), Compute("B", 0, "compute", 1, 10),
                  Compute("C", 1, "compute", 1, 10)};
  Trace trace;
  auto row = [&](int iteration, const std::string& key, int device, TimeNs ns) {
    TraceRow r;
    r.iteration = iteration;
    r.key = key;
    r.kind = OpKind::kFwd;
    r.device = device;
    r.start_ns = 0;
    r.end_ns = ns;
    trace.rows.push_back(r);
  };
  // Device 0: A 100, 100, 130; B 200, 260, 200 ns. Medians 100 and 200: 300 ns per iteration.
  // Device 1: C 50, 50, 50 ns.
  const TimeNs a[] = {100, 100, 130}, b[] = {200, 260, 200};
  for (int it = 0; it < 3; ++it) {
    row(it, "A", 0, a[it]);
    row(it, "B", 0, b[it]);
    row(it, "C", 1, 50);
  }
  // An iteration without A (B's median stays 200): not a whole one of device 0, left out.
  row(3, "B", 0, 200);
  const std::vector<std::vector<double>> f = TraceSpeedFactors(schedule, trace, "t.json");
  // One row per whole iteration (0, 1, 2), one factor per device: device 0 300 / 300,
  // 360 / 300, 330 / 300; device 1 always 50 / 50.
  REQUIRE(f.size() == 3);
  const double want[] = {1.0, 1.2, 1.1};
  for (int it = 0; it < 3; ++it) {
    REQUIRE(f[it].size() == 2);
    CHECK(f[it][0] == Approx(want[it]));
    CHECK(f[it][1] == Approx(1.0));
  }
}

}  // namespace
}  // namespace terasim

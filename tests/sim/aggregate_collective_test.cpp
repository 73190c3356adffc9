// Collectives as one unit in the flow network (issue #12): each ring run moves as one aggregate
// flow; where its links carry nothing else this ends when the step-by-step replay of its ring
// steps would, to within one ns of rounding per step.
#include <catch2/catch.hpp>

#include "sim/simulator.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fake_topology.h"
#include "tests/sim/schedule_builder.h"

namespace terasim {
namespace {

using testing::CollectiveSchedule;
using testing::CubeMesh;
using testing::FakeCost;
using testing::FakeTopology;

constexpr double kLinkBw = 20e9;    // one NVLink as NCCL plans it (FACTS.md)
constexpr TimeNs kAlphaNs = 3400;   // NCCL's per-NVLink-step latency (FACTS.md)
constexpr double kNicBw = 3.125e9;  // 25 Gbps
constexpr TimeNs kNicLatencyNs = 50000;

SimResult Run(const Schedule& schedule, const NetworkTopology& topology, bool step_by_step) {
  FakeCost cost(1, 2);
  SimOptions options;
  options.network = NetworkMode::kFlow;
  options.collectives.step_by_step = step_by_step;
  return Simulate(schedule, topology, cost, options);
}

std::vector<int> Range(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST_CASE(
    "An aggregate collective ends when its step-by-step replay does where nothing else "
    "runs") {
  const FakeTopology topology = CubeMesh(2, kLinkBw, kAlphaNs, kNicBw, kNicLatencyNs);
  const Bytes n = 48 << 20;
  struct Case {
    const char* name;
    Schedule schedule;
    int steps;  // ring steps of the plan (the rounding allowance, 1 ns each)
  };
  const std::vector<Case> cases = {
      {"all-reduce in a node", CollectiveSchedule(OpKind::kAllReduce, Range(8), n, 16), 14},
      {"hierarchical all-reduce", CollectiveSchedule(OpKind::kAllReduce, Range(16), n, 16),
       7 + 2 + 7},
      {"all-reduce one GPU per node", CollectiveSchedule(OpKind::kAllReduce, {2, 10}, n, 16), 2},
      {"all-gather of 4", CollectiveSchedule(OpKind::kAllGather, {0, 1, 2, 3}, n, 16), 3},
      {"reduce-scatter across nodes",
       CollectiveSchedule(OpKind::kReduceScatter, {0, 1, 8, 9}, n, 16), 3},
      {"broadcast in a node", CollectiveSchedule(OpKind::kBroadcast, Range(8), n, 16, 0), 96 + 6},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const SimResult steps = Run(c.schedule, topology, true);
    const SimResult aggregate = Run(c.schedule, topology, false);
    REQUIRE(steps.iteration_time_ns > 0);
    // Constant rates: steps x (alpha + b / r) either way; the step-by-step replay rounds each
    // step's end up to a whole ns.
    CHECK(aggregate.iteration_time_ns <= steps.iteration_time_ns);
    CHECK(aggregate.iteration_time_ns >= steps.iteration_time_ns - c.steps);
    // One flow per run and phase instead of one per hop and step.
    CHECK(aggregate.flows < steps.flows);
  }
}

TEST_CASE("An aggregate ring all-reduce in a node is one flow per ring and direction") {
  const FakeTopology topology = CubeMesh(1, kLinkBw, kAlphaNs, kNicBw, kNicLatencyNs);
  const Bytes n = 256 << 20;
  const int p = 8;
  const SimResult r = Run(CollectiveSchedule(OpKind::kAllReduce, Range(p), n, p), topology, false);
  // Two rings, each in both directions: 4 flows (the step-by-step replay: 4 x 8 x 14 = 448).
  CHECK(r.flows == 4);
  // 2(p-1) alpha + 2(p-1)/p n / B with B = 6 x 20 GB/s (each GPU sends on 2 + 2 + 1 + 1 lanes).
  const double expected_ns = 2 * (p - 1) * kAlphaNs + 2.0 * (p - 1) / p * n / (6 * kLinkBw) * 1e9;
  CHECK(r.iteration_time_ns == Approx(expected_ns).epsilon(1e-6));
}

}  // namespace
}  // namespace terasim

// The analytic network's sharing (sim/analytic_network.h): what starts together shares its
// links as the flow network shares them; staggered contention is where the two modes differ.
#include <catch2/catch.hpp>

#include "sim/simulator.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fake_topology.h"
#include "tests/sim/schedule_builder.h"

namespace terasim {
namespace {

using testing::Compute;
using testing::FakeCost;
using testing::FakeTopology;
using testing::P2p;

constexpr double kNicBw = 3.125e9;  // 25 Gbps
constexpr TimeNs kNicLatencyNs = 50000;

SimResult Run(const Schedule& schedule, const NetworkTopology& topology, NetworkMode mode) {
  FakeCost cost(1000, 2000);
  SimOptions options;
  options.network = mode;
  return Simulate(schedule, topology, cost, options);
}

// GPU g of node 0 sends `bytes` to GPU g of node 1, for g < senders; all at once.
Schedule Sends(int senders, Bytes bytes) {
  Schedule schedule;
  schedule.devices = 16;
  for (int g = 0; g < senders; ++g) {
    const std::string t = "t" + std::to_string(g);
    schedule.ops.push_back(P2p("S" + t, OpKind::kSend, g, 8 + g, t, bytes));
    schedule.ops.push_back(P2p("R" + t, OpKind::kRecv, 8 + g, g, t, bytes));
  }
  return schedule;
}

TEST_CASE("Transfers that start together share the NIC in both network modes") {
  const FakeTopology topology(2, 8, 10e9, 1000, kNicBw, kNicLatencyNs);
  const Bytes n = 64 << 20;
  for (int senders : {1, 2, 8}) {
    INFO(senders << " senders");
    const SimResult flow = Run(Sends(senders, n), topology, NetworkMode::kFlow);
    const SimResult analytic = Run(Sends(senders, n), topology, NetworkMode::kAnalytic);
    // Every sender gets B / senders of the one NIC: latency + senders x n / B.
    const double expected_ns = kNicLatencyNs + senders * static_cast<double>(n) / kNicBw * 1e9;
    CHECK(flow.iteration_time_ns == Approx(expected_ns).epsilon(1e-6));
    CHECK(analytic.iteration_time_ns == Approx(expected_ns).epsilon(1e-6));
    CHECK(analytic.analytic_staggered_fraction == 0);
  }
}

TEST_CASE(
    "Staggered transfers are where the analytic mode differs from the flow mode, and it "
    "says so") {
  const FakeTopology topology(2, 8, 10e9, 1000, kNicBw, kNicLatencyNs);
  const Bytes n = 64 << 20;
  // GPU 0 sends at once; GPU 1 computes first (1000 ns x 1 layer x 10000 tokens = 10 ms), then
  // sends: the second send starts while the first (about 21.5 ms) is in flight.
  Schedule schedule = Sends(2, n);
  schedule.ops.insert(schedule.ops.begin() + 2, Compute("F", 1, "p2p", 1, 10000));
  const TimeNs delay_ns = 10'000'000;
  const SimResult flow = Run(schedule, topology, NetworkMode::kFlow);
  const SimResult analytic = Run(schedule, topology, NetworkMode::kAnalytic);
  const double alone_ns = static_cast<double>(n) / kNicBw * 1e9;
  // Flow: both move 2 n bytes through the NIC without a gap after the first starts moving, so
  // the second ends at latency + 2 n / B.
  CHECK(flow.iteration_time_ns == Approx(kNicLatencyNs + 2 * alone_ns).epsilon(1e-3));
  // Analytic: the first send keeps the whole NIC (ends at latency + n/B); the second counts it
  // as w = (its remaining time) / (the second's time alone) crossings and ends at
  // delay + latency + (1 + w) n/B, between no sharing and sharing throughout.
  const double first_end_ns = kNicLatencyNs + alone_ns;
  const double w = (first_end_ns - delay_ns) / (kNicLatencyNs + alone_ns);
  const double analytic_ns = static_cast<double>(analytic.iteration_time_ns);
  CHECK(analytic_ns == Approx(delay_ns + kNicLatencyNs + (1 + w) * alone_ns).epsilon(1e-6));
  CHECK(analytic_ns > delay_ns + kNicLatencyNs + alone_ns);
  CHECK(analytic_ns < delay_ns + kNicLatencyNs + 2 * alone_ns);
  // Work-conserving for two sharers: about the flow mode's end (here within 0.1 %).
  CHECK(analytic_ns == Approx(flow.iteration_time_ns).epsilon(1e-3));
  // Half the bytes (the second send's) met a transfer started at another instant.
  CHECK(analytic.analytic_staggered_fraction == Approx(0.5));
  CHECK(flow.analytic_staggered_fraction == 0);
}

}  // namespace
}  // namespace terasim

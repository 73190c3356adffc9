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
using testing::P2p;

constexpr double kLinkBw = 20e9;    // one NVLink as NCCL plans it (FACTS.md)
constexpr TimeNs kAlphaNs = 3400;   // NCCL's per-NVLink-step latency (FACTS.md)
constexpr double kNicBw = 3.125e9;  // 25 Gbps
constexpr TimeNs kNicLatencyNs = 50000;

TimeNs Iteration(const Schedule& schedule, const NetworkTopology& topology, NetworkMode mode) {
  FakeCost cost(1, 2);
  SimOptions options;
  options.network = mode;
  return Simulate(schedule, topology, cost, options).iteration_time_ns;
}

TEST_CASE("A ring all-reduce over 8 GPUs on the NVLink rings matches the alpha-beta formula") {
  const FakeTopology topology = CubeMesh(1, kLinkBw, kAlphaNs, kNicBw, kNicLatencyNs);
  const Bytes n = 256 << 20;
  const int p = 8;
  const Schedule schedule = CollectiveSchedule(OpKind::kAllReduce, {0, 1, 2, 3, 4, 5, 6, 7}, n, p);
  // Both rings in both directions: every GPU sends on 2 + 2 + 1 + 1 NVLinks, B = 6 x 20 GB/s.
  const double bus_bw = 6 * kLinkBw;
  // 2(p-1)/p * n/B + 2(p-1) alpha.
  const double expected_ns = 2.0 * (p - 1) / p * n / bus_bw * 1e9 + 2 * (p - 1) * kAlphaNs;
  const TimeNs flow_ns = Iteration(schedule, topology, NetworkMode::kFlow);
  REQUIRE(flow_ns == Approx(expected_ns).epsilon(0.01));
}

TEST_CASE("Flow and analytic network modes agree where nothing contends") {
  const FakeTopology topology = CubeMesh(2, kLinkBw, kAlphaNs, kNicBw, kNicLatencyNs);
  const Bytes n = 64 << 20;
  std::vector<int> all(16), half = {0, 1, 2, 3};
  for (int i = 0; i < 16; ++i) all[i] = i;

  std::vector<std::pair<std::string, Schedule>> cases = {
      {"all-reduce in a node",
       CollectiveSchedule(OpKind::kAllReduce, {0, 1, 2, 3, 4, 5, 6, 7}, n, 16)},
      {"hierarchical all-reduce", CollectiveSchedule(OpKind::kAllReduce, all, n, 16)},
      {"all-reduce one GPU per node", CollectiveSchedule(OpKind::kAllReduce, {2, 10}, n, 16)},
      {"all-gather of 4", CollectiveSchedule(OpKind::kAllGather, half, n, 16)},
      {"reduce-scatter of 4", CollectiveSchedule(OpKind::kReduceScatter, half, n, 16)},
      {"broadcast in a node",
       CollectiveSchedule(OpKind::kBroadcast, {0, 1, 2, 3, 4, 5, 6, 7}, n, 16, 0)},
  };
  Schedule p2p;
  p2p.devices = 16;
  p2p.ops = {P2p("S", OpKind::kSend, 3, 12, "t", n), P2p("R", OpKind::kRecv, 12, 3, "t", n)};
  cases.emplace_back("send across nodes", p2p);

  for (const auto& [name, schedule] : cases) {
    INFO(name);
    const TimeNs flow_ns = Iteration(schedule, topology, NetworkMode::kFlow);
    const TimeNs analytic_ns = Iteration(schedule, topology, NetworkMode::kAnalytic);
    // The same alpha-beta cost either way, within 2%.
    REQUIRE(flow_ns > 0);
    REQUIRE(static_cast<double>(flow_ns) == Approx(analytic_ns).epsilon(0.02));
  }
}

TEST_CASE("A hierarchical all-reduce pays the NIC shared by the node's GPUs") {
  const FakeTopology topology = CubeMesh(2, kLinkBw, kAlphaNs, kNicBw, kNicLatencyNs);
  const Bytes n = 64 << 20;
  std::vector<int> all(16);
  for (int i = 0; i < 16; ++i) all[i] = i;
  const TimeNs t =
      Iteration(CollectiveSchedule(OpKind::kAllReduce, all, n, 16), topology, NetworkMode::kFlow);
  // Reduce-scatter and all-gather in the node: (g-1) steps each of alpha + n/(g B), B = 120 GB/s;
  // across the 2 nodes: 8 rings of n/8 bytes, 2(N-1) = 2 steps of n/16 bytes, 8 flows sharing
  // each NIC direction: alpha_nic + 8 * n/16 / B_nic per step.
  const double g = 8;
  const double in_node_ns = 2 * (g - 1) * (kAlphaNs + n / g / (6 * kLinkBw) * 1e9);
  const double across_ns = 2 * (kNicLatencyNs + 8 * (n / 16.0) / kNicBw * 1e9);
  REQUIRE(static_cast<double>(t) == Approx(in_node_ns + across_ns).epsilon(0.01));
}

}  // namespace
}  // namespace terasim

#include <catch2/catch.hpp>

#include "sim/simulator.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fake_topology.h"
#include "tests/sim/schedule_builder.h"

namespace terasim {
namespace {

using testing::CollectiveSchedule;
using testing::Compute;
using testing::CubeMesh;
using testing::FakeCost;
using testing::FakeTopology;
using testing::P2p;

constexpr double kLinkBw = 20e9;    // one NVLink as NCCL plans it (FACTS.md)
constexpr TimeNs kAlphaNs = 3400;   // NCCL's per-NVLink-step latency (FACTS.md)
constexpr double kNicBw = 3.125e9;  // 25 Gbps
constexpr TimeNs kNicLatencyNs = 50000;

// FakeCost(fwd_ns, 2 x fwd_ns) per layer and token; step_by_step: CollectiveOptions's.
SimResult Run(const Schedule& schedule, const NetworkTopology& topology, NetworkMode mode,
              bool step_by_step = false, TimeNs fwd_ns = 1) {
  FakeCost cost(fwd_ns, 2 * fwd_ns);
  SimOptions options;
  options.network = mode;
  options.collectives.step_by_step = step_by_step;
  return Simulate(schedule, topology, cost, options);
}

TimeNs Iteration(const Schedule& schedule, const NetworkTopology& topology, NetworkMode mode) {
  return Run(schedule, topology, mode).iteration_time_ns;
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

// Collectives as one unit in the flow network (issue #12): each ring run moves as one aggregate
// flow; where its links carry nothing else this ends when the step-by-step replay of its ring
// steps would, to within one ns of rounding per step.
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
    const SimResult steps = Run(c.schedule, topology, NetworkMode::kFlow, true);
    const SimResult aggregate = Run(c.schedule, topology, NetworkMode::kFlow);
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
  const Schedule schedule = CollectiveSchedule(OpKind::kAllReduce, Range(p), n, p);
  const SimResult r = Run(schedule, topology, NetworkMode::kFlow);
  // Alone on its links, its one phase runs in closed form (sim/exclusive_links.h): no flow in
  // the replay's network. As flows: two rings, each in both directions: 4 flows (the
  // step-by-step replay: 4 x 8 x 14 = 448), ending at the same ns.
  CHECK(r.flows == 0);
  FakeCost cost(1, 2);
  SimOptions as_flows;
  as_flows.collectives.closed_form = false;
  const SimResult flows = Simulate(schedule, topology, cost, as_flows);
  CHECK(flows.flows == 4);
  CHECK(flows.iteration_time_ns == r.iteration_time_ns);
  // 2(p-1) alpha + 2(p-1)/p n / B with B = 6 x 20 GB/s (each GPU sends on 2 + 2 + 1 + 1 lanes).
  const double expected_ns = 2 * (p - 1) * kAlphaNs + 2.0 * (p - 1) / p * n / (6 * kLinkBw) * 1e9;
  CHECK(r.iteration_time_ns == Approx(expected_ns).epsilon(1e-6));
}

// The analytic network's sharing (sim/analytic_network.h): what starts together shares its
// links as the flow network shares them; staggered contention is where the two modes differ.
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
    const SimResult flow = Run(Sends(senders, n), topology, NetworkMode::kFlow, false, 1000);
    const SimResult analytic =
        Run(Sends(senders, n), topology, NetworkMode::kAnalytic, false, 1000);
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
  const SimResult flow = Run(schedule, topology, NetworkMode::kFlow, false, 1000);
  const SimResult analytic = Run(schedule, topology, NetworkMode::kAnalytic, false, 1000);
  const double alone_ns = static_cast<double>(n) / kNicBw * 1e9;
  // Flow: both move 2 n bytes through the NIC without a gap after the first starts moving, so
  // the second ends at latency + 2 n / B.
  CHECK(flow.iteration_time_ns == Approx(kNicLatencyNs + 2 * alone_ns).epsilon(1e-3));
  // Analytic: the first send keeps the whole NIC (ends at latency + n/B); the second counts it
  // as w = (its remaining time once the second's latency is over) / (the second's n/B)
  // crossings and ends at delay + latency + (1 + w) n/B, between no sharing and sharing
  // throughout.
  const double first_end_ns = kNicLatencyNs + alone_ns;
  const double w = (first_end_ns - delay_ns - kNicLatencyNs) / alone_ns;
  const double analytic_ns = static_cast<double>(analytic.iteration_time_ns);
  CHECK(analytic_ns == Approx(delay_ns + kNicLatencyNs + (1 + w) * alone_ns).epsilon(1e-6));
  CHECK(analytic_ns > delay_ns + kNicLatencyNs + alone_ns);
  CHECK(analytic_ns < delay_ns + kNicLatencyNs + 2 * alone_ns);
  // Work-conserving: the flow mode's end, latency + 2 n/B (to the rounding of a few ns).
  CHECK(analytic_ns == Approx(flow.iteration_time_ns).epsilon(1e-6));
  // Half the bytes (the second send's) met a transfer started at another instant.
  CHECK(analytic.analytic_staggered_fraction == Approx(0.5));
  CHECK(flow.analytic_staggered_fraction == 0);
}

// GPU g of node 0 sends bytes[g] to GPU g of node 1, all at once.
Schedule SizedSends(const std::vector<Bytes>& bytes) {
  Schedule schedule;
  schedule.devices = 16;
  for (int g = 0; g < static_cast<int>(bytes.size()); ++g) {
    const std::string t = "t" + std::to_string(g);
    schedule.ops.push_back(P2p("S" + t, OpKind::kSend, g, 8 + g, t, bytes[g]));
    schedule.ops.push_back(P2p("R" + t, OpKind::kRecv, 8 + g, g, t, bytes[g]));
  }
  return schedule;
}

TEST_CASE(
    "A short transfer that starts with long ones on a contended NIC delays them by its "
    "bytes only, in both network modes") {
  // Setting 7's case (gpt3-44b dp2 pp24 tp8): a node's 8 data-parallel all-reduces start with
  // the last pipeline send on the one NIC. Here 7 long sends of n and one short of n / 64.
  const FakeTopology topology(2, 8, 10e9, 1000, kNicBw, kNicLatencyNs);
  const Bytes n = 64 << 20;
  std::vector<Bytes> bytes(7, n);
  bytes.push_back(n / 64);
  for (const std::vector<Bytes>& order :
       {bytes, std::vector<Bytes>(bytes.rbegin(), bytes.rend())}) {
    // Either order of costing (the short first or last): the same sharing.
    const SimResult flow = Run(SizedSends(order), topology, NetworkMode::kFlow, false, 1000);
    const SimResult analytic =
        Run(SizedSends(order), topology, NetworkMode::kAnalytic, false, 1000);
    // Max-min: the NIC moves all 7 n + n / 64 bytes without a gap; the long ones end last.
    const double expected_ns = kNicLatencyNs + (7 + 1.0 / 64) * n / kNicBw * 1e9;
    CHECK(flow.iteration_time_ns == Approx(expected_ns).epsilon(1e-6));
    // Analytic: each long one counts the other six whole and the short one min(1, (n/64) / n).
    CHECK(analytic.iteration_time_ns == Approx(expected_ns).epsilon(1e-6));
    CHECK(static_cast<double>(analytic.iteration_time_ns) ==
          Approx(flow.iteration_time_ns).epsilon(0.05));
  }
}

}  // namespace
}  // namespace terasim

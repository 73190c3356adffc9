// Collectives as NCCL runs them (sim/collective_plan.h, CollectiveAlgorithms::kNccl): NCCL's
// choice of algorithm and protocol, the ring and tree closed forms, and the two network modes'
// agreement where nothing contends, on real p3.16xlarge clusters.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "models/model_card.h"
#include "models/nccl_model.h"
#include "schedule/generator.h"
#include "sim/analytic_network.h"
#include "sim/cluster_topology.h"
#include "sim/collective_plan.h"
#include "sim/route_cache.h"
#include "sim/simulator.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/schedule_builder.h"
#include "tests/sim/test_model.h"
#include "topologies/cluster.h"

namespace terasim {
namespace {

using testing::CollectiveSchedule;

std::string NcclPath() { return DataRoot() + "/models/data/nccl/nccl.json"; }

CollectiveOptions Nccl() {
  CollectiveOptions options = LoadCollectiveOptions(DataRoot() + "/sim/data/collectives.json");
  options.algorithms = CollectiveAlgorithms::kNccl;
  options.nccl = LoadNcclTable(NcclPath());
  return options;
}

// NCCL's view of `nodes` x `per_node` GPUs of p3.16xlarge, as the planner builds it.
NcclSystem P3System(const Cluster& cluster, int nodes, int per_node) {
  const InstanceSpec& instance = cluster.Instance();
  return LoadNcclSystem(
      NcclPath(), instance.name, nodes, per_node,
      instance.NumNics() * instance.network.nic_raw_bw_bytes_per_s * instance.network.efficiency,
      static_cast<double>(instance.network.latency_ns) / 1e3, instance.network.gpudirect);
}

// step_by_step: CollectiveOptions's (every ring step its own flows, not one aggregate flow).
TimeNs Simulated(const Schedule& schedule, const NetworkTopology& topology, NetworkMode mode,
                 bool step_by_step = false) {
  const testing::FakeCost cost(1, 2);
  SimOptions options;
  options.network = mode;
  options.collectives = Nccl();
  options.collectives.step_by_step = step_by_step;
  return Simulate(schedule, topology, cost, options).iteration_time_ns;
}

TEST_CASE("NCCL's choice: tree for a small all-reduce across nodes, ring for a large one") {
  const Cluster cluster = BuildCluster("p3.16xlarge:4");
  const ClusterTopology topology(cluster);
  const std::vector<int> one_per_node = {0, 8, 16, 24};
  const CollectivePlan small =
      PlanCollective(OpKind::kAllReduce, one_per_node, -1, 64 << 10, topology, Nccl());
  REQUIRE(small.nccl);
  CHECK(small.algorithm == NcclAlgorithm::kTree);
  CHECK(small.protocol != NcclProtocol::kSimple);
  REQUIRE(small.phases.size() == 2);  // reduce, then broadcast
  // Two trees over 4 nodes, 3 edges each, none shared: 6 single-step transfers per phase.
  CHECK(small.phases[0].runs.size() == 6);
  const CollectivePlan large =
      PlanCollective(OpKind::kAllReduce, one_per_node, -1, Bytes{256} << 20, topology, Nccl());
  CHECK(large.algorithm == NcclAlgorithm::kRing);
  CHECK(large.protocol == NcclProtocol::kSimple);
  REQUIRE(large.phases.size() == 1);
  // The same choice as the NCCL model's (terasim collective).
  const NcclSystem system = P3System(cluster, 4, 1);
  CHECK(NcclBestTime(system, Collective::kAllReduce, 64 << 10).algorithm == NcclAlgorithm::kTree);
  CHECK(NcclBestTime(system, Collective::kAllReduce, Bytes{256} << 20).algorithm ==
        NcclAlgorithm::kRing);
  // Inside one node a small all-reduce runs LL (0.6 us per NVLink step against Simple's 3.4).
  const CollectivePlan node =
      PlanCollective(OpKind::kAllReduce, {0, 1, 2, 3, 4, 5, 6, 7}, -1, 4096, topology, Nccl());
  CHECK(node.protocol == NcclProtocol::kLL);
  // The ring mode keeps the hierarchical ring plan without NCCL.
  const CollectivePlan ring =
      PlanCollective(OpKind::kAllReduce, one_per_node, -1, 64 << 10, topology, CollectiveOptions{});
  CHECK_FALSE(ring.nccl);
}

TEST_CASE("An NCCL ring all-reduce across two nodes matches the ring closed form") {
  const Cluster cluster = BuildCluster("p3.16xlarge:2");
  const ClusterTopology topology(cluster);
  RouteCache routes(topology);
  const Bytes n = Bytes{256} << 20;
  const int p = 2;
  const CollectivePlan plan = PlanCollective(OpKind::kAllReduce, {0, 8}, -1, n, topology, Nccl());
  REQUIRE(plan.algorithm == NcclAlgorithm::kRing);
  REQUIRE(plan.protocol == NcclProtocol::kSimple);
  const NcclSystem system = P3System(cluster, 2, 1);
  // Simple: the links' latencies per step (alpha: the slower direction's route), NCCL's base
  // latency once, the NIC's achieved rate B:
  //   base + 2 (p - 1) alpha + 2 (p - 1) / p x n / B.
  const double alpha_ns = std::max(routes.Get(0, 8).latency_ns, routes.Get(8, 0).latency_ns);
  const double bw = std::min(routes.Get(0, 8).bottleneck_bw, routes.Get(8, 0).bottleneck_bw);
  const double base_ns =
      NcclBaseLatencyUs(system, NcclAlgorithm::kRing, NcclProtocol::kSimple) * 1e3;
  const double expected_ns = base_ns + 2 * (p - 1) * alpha_ns + 2.0 * (p - 1) / p * n / bw * 1e9;
  CHECK(AnalyticPlanNs(plan, routes) == Approx(expected_ns).epsilon(0.001));
  const Schedule schedule = CollectiveSchedule(OpKind::kAllReduce, {0, 8}, n, 16);
  CHECK(Simulated(schedule, topology, NetworkMode::kFlow) == Approx(expected_ns).epsilon(0.01));
}

TEST_CASE("An NCCL tree all-reduce across four nodes matches the tree closed form") {
  const Cluster cluster = BuildCluster("p3.16xlarge:4");
  const ClusterTopology topology(cluster);
  RouteCache routes(topology);
  const Bytes n = 64 << 10;
  const std::vector<int> gpus = {0, 8, 16, 24};
  const CollectivePlan plan = PlanCollective(OpKind::kAllReduce, gpus, -1, n, topology, Nccl());
  REQUIRE(plan.algorithm == NcclAlgorithm::kTree);
  const NcclSystem system = P3System(cluster, 4, 1);
  // Two trees of n / 2 each; a node is inner in one of them, so its NIC carries two edges of
  // n / 2 in each phase (reduce up, broadcast down): n x w / B per phase, w = 1 / NCCL's
  // bandwidth factor of the pair. Each phase pays log2(4) = 2 network steps of the route's
  // latency plus the protocol's step less Simple's; the base latency once:
  //   base + 2 x (2 alpha + n w / B).
  const double step_delta_us =
      NcclStepLatencyUs(system, NcclAlgorithm::kTree, plan.protocol, NcclHop::kNet) -
      NcclStepLatencyUs(system, NcclAlgorithm::kRing, NcclProtocol::kSimple, NcclHop::kNet);
  double alpha_ns = 0, bw = 0;
  for (int a : gpus) {
    for (int b : gpus) {
      if (a == b) continue;
      alpha_ns = std::max<double>(alpha_ns, routes.Get(a, b).latency_ns + step_delta_us * 1e3);
      bw = bw == 0 ? routes.Get(a, b).bottleneck_bw : std::min(bw, routes.Get(a, b).bottleneck_bw);
    }
  }
  const double w = 1 / NcclBandwidthFactor(system, NcclAlgorithm::kTree, plan.protocol, n);
  const double base_ns = NcclBaseLatencyUs(system, NcclAlgorithm::kTree, plan.protocol) * 1e3;
  const double expected_ns = base_ns + 2 * (2 * alpha_ns + n * w / bw * 1e9);
  CHECK(AnalyticPlanNs(plan, routes) == Approx(expected_ns).epsilon(0.001));
  const Schedule schedule = CollectiveSchedule(OpKind::kAllReduce, gpus, n, 32);
  CHECK(Simulated(schedule, topology, NetworkMode::kFlow) == Approx(expected_ns).epsilon(0.01));
  // Step by step each edge pays its hop's latency (the protocol's, as alpha above) too.
  CHECK(Simulated(schedule, topology, NetworkMode::kFlow, /*step_by_step=*/true) ==
        Approx(expected_ns).epsilon(0.01));
}

TEST_CASE("NCCL collectives: flow and analytic modes agree within 5 % where nothing contends") {
  const Cluster cluster = BuildCluster("p3.16xlarge:2");
  const ClusterTopology topology(cluster);
  std::vector<int> all(16), node = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int i = 0; i < 16; ++i) all[i] = i;
  const Bytes large = Bytes{64} << 20, small = 16 << 10;
  const std::vector<std::pair<std::string, Schedule>> cases = {
      {"large all-reduce in a node", CollectiveSchedule(OpKind::kAllReduce, node, large, 16)},
      {"small all-reduce in a node", CollectiveSchedule(OpKind::kAllReduce, node, small, 16)},
      {"large all-reduce over 16", CollectiveSchedule(OpKind::kAllReduce, all, large, 16)},
      {"small all-reduce over 16", CollectiveSchedule(OpKind::kAllReduce, all, small, 16)},
      {"large all-reduce of 2 nodes", CollectiveSchedule(OpKind::kAllReduce, {3, 11}, large, 16)},
      {"small all-reduce of 2 nodes", CollectiveSchedule(OpKind::kAllReduce, {3, 11}, small, 16)},
      {"all-gather over 16", CollectiveSchedule(OpKind::kAllGather, all, large, 16)},
      {"reduce-scatter over 16", CollectiveSchedule(OpKind::kReduceScatter, all, large, 16)},
      {"broadcast in a node", CollectiveSchedule(OpKind::kBroadcast, node, large, 16, 0)},
  };
  for (const auto& [name, schedule] : cases) {
    INFO(name);
    const TimeNs flow_ns = Simulated(schedule, topology, NetworkMode::kFlow);
    const TimeNs analytic_ns = Simulated(schedule, topology, NetworkMode::kAnalytic);
    REQUIRE(flow_ns > 0);
    CHECK(static_cast<double>(analytic_ns) == Approx(flow_ns).epsilon(0.05));
  }
}

TEST_CASE("NCCL collective plans still fold: folded and full replays end together") {
  // p4d.24xlarge (as symmetry_fold_test): dp2 pp2 tp4 on two nodes folds 8 ways with rings.
  // Also step by step (every ring step its own flows): a folded flow pays the protocol
  // latency of the hop it stands for.
  const Cluster cluster = BuildCluster("p4d.24xlarge:2");
  const ClusterTopology topology(cluster);
  GenerateOptions o;
  o.model = testing::TestModel8();
  o.strategy = Strategy::kOneFOneB;
  o.dp = 2;
  o.pp = 2;
  o.tp = 4;
  o.microbatches = 4;
  const Schedule schedule = Generate(o);
  const testing::FakeCost cost(3, 5, 200);
  for (const bool step_by_step : {false, true}) {
    INFO("step_by_step " << step_by_step);
    SimOptions sim;
    sim.collectives = Nccl();
    sim.collectives.step_by_step = step_by_step;
    sim.fold = true;
    const SimResult folded = Simulate(schedule, topology, cost, sim);
    sim.fold = false;
    const SimResult full = Simulate(schedule, topology, cost, sim);
    INFO("refused: " << folded.fold_note);
    CHECK(folded.fold_order == 8);
    CHECK(folded.iteration_time_ns == full.iteration_time_ns);
  }
}

TEST_CASE("collectives.json: algorithms must be ring or nccl") {
  CHECK_THROWS_WITH(ParseCollectiveAlgorithms("tree", "f.json: algorithms"),
                    "f.json: algorithms: 'tree' must be ring or nccl");
  CHECK(ParseCollectiveAlgorithms("nccl", "x") == CollectiveAlgorithms::kNccl);
}

TEST_CASE("A capped NCCL protocol runs at the capped bus bandwidth in both network modes") {
  // Inside one p3.16xlarge node a 64 KiB all-reduce runs ring LL; LL's limit on Volta
  // (39 GB/s) is below half the NVLink rings' 120 GB/s, so the plan's wire bytes carry it:
  //   time = base + 2 (p - 1) alpha + 2 (p - 1) / p x n / busbw,  busbw = min(ll_max, 0.5 x B).
  const Cluster cluster = BuildCluster("p3.16xlarge:1");
  const ClusterTopology topology(cluster);
  RouteCache routes(topology);
  const std::vector<int> gpus = {0, 1, 2, 3, 4, 5, 6, 7};
  const Bytes n = 64 << 10;
  const int p = 8;
  const CollectivePlan plan = PlanCollective(OpKind::kAllReduce, gpus, -1, n, topology, Nccl());
  REQUIRE(plan.algorithm == NcclAlgorithm::kRing);
  REQUIRE(plan.protocol == NcclProtocol::kLL);
  const NcclSystem system = P3System(cluster, 1, 8);
  const double busbw = NcclBusBandwidth(system, NcclAlgorithm::kRing, NcclProtocol::kLL);
  CHECK(busbw ==
        Approx(std::min(system.constants.ll_max_bw[0] * 1e9, 0.5 * NcclLinkBandwidth(system))));
  REQUIRE(busbw < 0.5 * NcclLinkBandwidth(system));  // the cap binds
  // The rings' links give B = 120 GB/s; the plan's wire bytes make that busbw.
  double wire_bytes = 0;
  for (const RingRun& run : plan.phases[0].runs) wire_bytes += run.bytes_per_flow * p;
  CHECK(wire_bytes / n == Approx(NcclLinkBandwidth(system) / busbw).epsilon(1e-9));
  double alpha_ns = 0;
  for (const RingRun& run : plan.phases[0].runs)
    alpha_ns = std::max<double>(alpha_ns, run.alpha_ns);
  const double base_ns = NcclBaseLatencyUs(system, NcclAlgorithm::kRing, NcclProtocol::kLL) * 1e3;
  const double expected_ns = base_ns + 2 * (p - 1) * alpha_ns + 2.0 * (p - 1) / p * n / busbw * 1e9;
  CHECK(AnalyticPlanNs(plan, routes) == Approx(expected_ns).epsilon(0.01));
  const Schedule schedule = CollectiveSchedule(OpKind::kAllReduce, gpus, n, 8);
  CHECK(Simulated(schedule, topology, NetworkMode::kFlow) == Approx(expected_ns).epsilon(0.01));
  // Step by step (every ring step its own flows; each NVLink ring's hops are alike, so a step
  // ends with its slowest hop) the same: each hop pays LL's 0.6 us step, not the links' 3.4 us
  // (Simple's), which would make it 14 x 2.8 us late on this 18 us all-reduce.
  CHECK(Simulated(schedule, topology, NetworkMode::kFlow, /*step_by_step=*/true) ==
        Approx(expected_ns).epsilon(0.01));
}

TEST_CASE("NCCL's protocol step latency is paid on every hop of every step") {
  // 16 GPUs on two p3.16xlarge nodes: a 64 KiB all-reduce runs LL (not Simple), a 256 MiB one
  // Simple. Each hop's latency: its route's plus NCCL's step latency for the protocol on that
  // kind of hop (NVLink inside a node, the network between) less Simple's ring step, which the
  // topology's latencies already are.
  const Cluster cluster = BuildCluster("p3.16xlarge:2");
  const ClusterTopology topology(cluster);
  RouteCache routes(topology);
  std::vector<int> gpus;
  for (int g = 0; g < 16; ++g) gpus.push_back(g);
  const NcclSystem system = P3System(cluster, 2, 8);
  for (const Bytes n : {Bytes{64} << 10, Bytes{256} << 20}) {
    const CollectivePlan plan = PlanCollective(OpKind::kAllReduce, gpus, -1, n, topology, Nccl());
    INFO(n << " bytes: " << NcclAlgorithmName(plan.algorithm) << " "
           << NcclProtocolName(plan.protocol));
    CHECK((plan.protocol == NcclProtocol::kSimple) == (n > (1 << 20)));
    int hops = 0;
    for (const CollectivePhase& phase : plan.phases) {
      for (const RingRun& run : phase.runs) {
        const int p = static_cast<int>(run.gpus.size());
        REQUIRE(run.hop_latency_ns.size() == static_cast<size_t>(run.closed ? p : p - 1));
        TimeNs alpha_ns = 0;
        for (int i = 0; i < static_cast<int>(run.hop_latency_ns.size()); ++i) {
          const int a = run.gpus[i], b = run.gpus[(i + 1) % p];
          const NcclHop hop =
              cluster.NodeOf(a) != cluster.NodeOf(b) ? NcclHop::kNet : NcclHop::kNvlink;
          const double delta_us =
              NcclStepLatencyUs(system, plan.algorithm, plan.protocol, hop) -
              NcclStepLatencyUs(system, NcclAlgorithm::kRing, NcclProtocol::kSimple, hop);
          const double expected_ns = std::max(0.0, routes.Get(a, b).latency_ns + delta_us * 1e3);
          CHECK(run.hop_latency_ns[i] == Approx(expected_ns).margin(1));
          alpha_ns = std::max(alpha_ns, run.hop_latency_ns[i]);
          ++hops;
        }
        CHECK(run.alpha_ns == alpha_ns);  // a step waits for its slowest hop
      }
    }
    CHECK(hops > 0);
  }
}

TEST_CASE(
    "An NCCL communicator's channels are its own: its NVLink rings in a node, its NICs across") {
  // NCCL's per-channel bandwidth: 20 GB/s per NVLink lane (nccl.json). Inside a node the
  // channels are the bus bandwidth of the group's rings over it; across nodes one per NIC
  // (sim/data/collectives.json nccl_channels_per_nic), at the lane's bandwidth or the NIC's
  // share of the node's network where that is faster.
  const CollectiveOptions options = Nccl();
  REQUIRE(options.nccl_channels_per_nic == 1);
  const Cluster p3(BuildCluster("p3.16xlarge:2"));
  const ClusterTopology p3_topology(p3);
  const std::vector<int> node = {0, 1, 2, 3, 4, 5, 6, 7};
  struct Case {
    std::string name;
    const NetworkTopology* topology;
    std::vector<int> gpus;
    int channels;
    double bus_gbytes_per_s;  // channels x per-channel bandwidth
  };
  const Cluster p4d(BuildCluster("p4d.24xlarge:2"));
  const ClusterTopology p4d_topology(p4d);
  const Cluster p5(BuildCluster("p5.48xlarge:2"));
  const ClusterTopology p5_topology(p5);
  std::vector<int> sixteen(16);
  for (int g = 0; g < 16; ++g) sixteen[g] = g;
  const std::vector<Case> cases = {
      // Two edge-disjoint rings, both ways: 6 lanes x 20 GB/s (FACTS.md: 120 GB/s).
      {"p3 node", &p3_topology, node, 6, 120},
      {"p3 pair on two lanes (NV2)", &p3_topology, {0, 3}, 2, 40},
      {"p3 pair on one lane (NV1)", &p3_topology, {0, 1}, 1, 20},
      // 12 NVLink 3 links into the NVSwitch at 20 GB/s, for any group.
      {"p4d node", &p4d_topology, node, 12, 240},
      {"p4d pair", &p4d_topology, {2, 5}, 12, 240},
      // Across nodes: one channel per NIC (p3: one ENA port; p4d: four EFA interfaces), each
      // at the table's 20 GB/s (the model caps it at its share of the node's network).
      {"p3 two nodes", &p3_topology, sixteen, 1, 20},
      {"p4d two nodes", &p4d_topology, sixteen, 4, 80},
      // p5.48xlarge's eight 400 Gbps NICs at 0.85: a channel's share, 42.5 GB/s, is above an
      // NVLink 4 lane's 20.6, so each runs at it: 8 x 42.5 = the node's 340 GB/s.
      {"p5 two nodes", &p5_topology, sixteen, 8, 340},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::optional<NcclSystem> system = NcclCommunicator(c.gpus, *c.topology, options);
    REQUIRE(system.has_value());
    CHECK(system->channels == c.channels);
    CHECK(system->channels * system->channel_bw_bytes_per_s == Approx(c.bus_gbytes_per_s * 1e9));
  }
  CHECK_FALSE(NcclCommunicator({0, 1}, p3_topology, CollectiveOptions{}).has_value());  // ring mode

  // A 64 KiB all-reduce on the NV2 pair runs ring LL at half the pair's 40 GB/s: 20 GB/s, under
  // LL's 39 GB/s limit on Volta, so no cap applies (with the node's 6 channels the limit bound
  // at 39 / 60 and the pair ran at 13 GB/s):
  //   base + 2 (p - 1) alpha + 2 (p - 1) / p x n / (0.5 x 40 GB/s),  p = 2.
  const Bytes n = 64 << 10;
  const CollectivePlan plan =
      PlanCollective(OpKind::kAllReduce, {0, 3}, -1, n, p3_topology, options);
  REQUIRE(plan.algorithm == NcclAlgorithm::kRing);
  REQUIRE(plan.protocol == NcclProtocol::kLL);
  const NcclSystem pair = *NcclCommunicator({0, 3}, p3_topology, options);
  CHECK(NcclCapFactor(pair, NcclAlgorithm::kRing, NcclProtocol::kLL) == 1.0);
  const double base_ns = NcclBaseLatencyUs(pair, NcclAlgorithm::kRing, NcclProtocol::kLL) * 1e3;
  const double expected_ns =
      base_ns + 2 * plan.phases[0].runs[0].alpha_ns + 1.0 * n / (0.5 * 40e9) * 1e9;
  const Schedule schedule = CollectiveSchedule(OpKind::kAllReduce, {0, 3}, n, 16);
  CHECK(Simulated(schedule, p3_topology, NetworkMode::kFlow) == Approx(expected_ns).epsilon(0.01));
  CHECK(Simulated(schedule, p3_topology, NetworkMode::kAnalytic) ==
        Approx(expected_ns).epsilon(0.01));
}

}  // namespace
}  // namespace terasim

// A declared symmetry (GenerateOptions::representatives_only, SymmetryFold::Declared): the
// schedule holding only the representatives' ops, replayed, gives the whole schedule's results
// (folded and not) on every generator; an input that breaks the declared symmetry is refused.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "models/device_spec.h"
#include "models/errors.h"
#include "schedule/generator.h"
#include "schedule/memory_estimate.h"
#include "sim/cluster_topology.h"
#include "sim/plan_cache.h"
#include "sim/replay_graph.h"
#include "sim/route_cache.h"
#include "sim/simulator.h"
#include "sim/symmetry_fold.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fake_topology.h"
#include "tests/sim/fold_cases.h"
#include "tests/sim/test_model.h"
#include "topologies/cluster.h"

namespace terasim {
namespace {

using testing::FakeCost;
using testing::FakeTopology;
using testing::SlowLink;
using testing::TwoNodes;
constexpr auto Options = testing::FoldOptions;

GenerateOptions Representatives(GenerateOptions o, int tp_ranks = 1,
                                const std::vector<int>& tp_set = {}) {
  o.representatives_only = true;
  o.representative_tp_ranks = tp_ranks;
  o.representative_tp_set = tp_set;
  return o;
}

// The representatives-only replay == the whole schedule's, folded and not: iteration time,
// per-device fractions, link bytes (1e-9 relative: summed as multiplicity x bytes) and busy
// time, model FLOPs, and every simulated op's start and end. `tp_set`: the tp ranks present
// when not 0..tp_ranks-1.
SimResult RequireDeclaredExact(const GenerateOptions& options, const NetworkTopology& topology,
                               SimOptions sim, int tp_ranks = 1,
                               const std::vector<int>& tp_set = {}) {
  const FakeCost cost(3, 5, 200);
  const Schedule whole = Generate(options);
  const Schedule reps = Generate(Representatives(options, tp_ranks, tp_set));
  if (!tp_set.empty()) tp_ranks = static_cast<int>(tp_set.size());
  REQUIRE(reps.symmetry.representatives_only);
  REQUIRE(reps.devices == whole.devices);
  REQUIRE(reps.groups.size() == whole.groups.size());
  // Replica 0's tp_ranks tp ranks of the dp x tp copies of each stage.
  REQUIRE(reps.ops.size() * options.dp * options.tp == whole.ops.size() * tp_ranks);
  sim.fold = true;
  const SimResult declared = Simulate(reps, topology, cost, sim);
  const SimResult folded = Simulate(whole, topology, cost, sim);
  sim.fold = false;
  const SimResult full = Simulate(whole, topology, cost, sim);
  INFO("declared order " << declared.fold_order << ", folded order " << folded.fold_order << " ("
                         << folded.fold_note << ")");
  REQUIRE(declared.fold_order == folded.fold_order);
  for (const SimResult* other : {&folded, &full}) {
    INFO((other == &folded ? "vs folded" : "vs full"));
    REQUIRE(declared.iteration_time_ns == other->iteration_time_ns);
    REQUIRE(declared.devices.size() == other->devices.size());
    for (size_t d = 0; d < other->devices.size(); ++d) {
      INFO("device " << d);
      REQUIRE(declared.devices[d].compute_fraction == other->devices[d].compute_fraction);
      REQUIRE(declared.devices[d].comm_fraction == other->devices[d].comm_fraction);
      REQUIRE(declared.devices[d].idle_fraction == other->devices[d].idle_fraction);
    }
    REQUIRE(declared.links.size() == other->links.size());
    for (size_t l = 0; l < other->links.size(); ++l) {
      INFO(other->links[l].name);
      REQUIRE(declared.links[l].link == other->links[l].link);
      REQUIRE(declared.links[l].bytes == Approx(other->links[l].bytes).epsilon(1e-9));
      REQUIRE(declared.links[l].busy_ns == other->links[l].busy_ns);
    }
    REQUIRE(declared.model_flops == Approx(other->model_flops).epsilon(1e-12));
  }
  std::map<std::string, const TraceRow*> rows;
  for (const TraceRow& row : full.trace.rows) rows[row.key] = &row;
  // The representatives' rows: 1 / (dp x tp / tp_ranks) of the whole's, at the same times.
  REQUIRE(declared.trace.rows.size() * declared.fold_order == full.trace.rows.size());
  for (const TraceRow& row : declared.trace.rows) {
    INFO(row.key);
    const TraceRow& other = *rows.at(row.key);
    REQUIRE(row.start_ns == other.start_ns);
    REQUIRE(row.end_ns == other.end_ns);
  }
  return declared;
}

// tp 8 (the test model with 8 heads).
GenerateOptions Tp8(Strategy strategy, int dp, int pp) {
  GenerateOptions o = Options(strategy, dp, pp, 8);
  o.model.heads = 8;
  return o;
}

// Calls body(strategy, sim) for GPipe, 1F1B and TeraPipe in both network modes, collectives
// whole and step by step.
template <typename Body>
void ForEachP3Case(Body&& body) {
  for (Strategy strategy : {Strategy::kGpipe, Strategy::kOneFOneB, Strategy::kTeraPipe}) {
    for (NetworkMode network : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
      for (bool step_by_step : {false, true}) {
        INFO(StrategyName(strategy) << ", " << NetworkModeName(network) << " network"
                                    << (step_by_step ? ", step by step" : ""));
        SimOptions sim;
        sim.network = network;
        sim.collectives.step_by_step = step_by_step;
        body(strategy, sim);
      }
    }
  }
}

}  // namespace

TEST_CASE("a representatives-only schedule replays as the whole one on every generator") {
  const FakeTopology topology = TwoNodes();
  GenerateOptions megatron = Options(Strategy::kOneFOneB, 2, 2, 2);
  megatron.sequence_parallel = true;
  megatron.recompute = Recompute::kFull;
  GenerateOptions zero1 = Options(Strategy::kOneFOneB, 2, 2, 2);
  zero1.zero = 1;
  GenerateOptions zero3 = Options(Strategy::kGpipe, 2, 2, 2);
  zero3.zero = 3;
  GenerateOptions terapipe_1f1b = Options(Strategy::kTeraPipe, 2, 2, 2);
  terapipe_1f1b.order = SliceOrder::kOneFOneB;
  const std::vector<std::pair<std::string, GenerateOptions>> cases = {
      {"gpipe", Options(Strategy::kGpipe, 2, 2, 2)},
      {"1f1b", Options(Strategy::kOneFOneB, 2, 2, 2)},
      {"interleaved", Options(Strategy::kInterleaved, 2, 2, 2)},
      {"terapipe", Options(Strategy::kTeraPipe, 2, 2, 2)},
      {"terapipe-1f1b", terapipe_1f1b},
      {"zb-h1", Options(Strategy::kZbH1, 2, 2, 2)},
      {"zb-h2", Options(Strategy::kZbH2, 2, 2, 2)},
      {"looped-bfs", Options(Strategy::kLoopedBfs, 2, 2, 2)},
      {"interleaved-zb", Options(Strategy::kInterleavedZb, 2, 2, 2)},
      {"zb-v", Options(Strategy::kZbV, 2, 2, 2)},
      {"dualpipe-v", Options(Strategy::kDualPipeV, 2, 2, 2)},
      {"megatron sp + full recompute", megatron},
      {"zero-1", zero1},
      {"zero-3", zero3},
  };
  for (const auto& [name, options] : cases) {
    for (bool step_by_step : {false, true}) {
      for (NetworkMode network : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
        INFO(name << (step_by_step ? ", collectives step by step" : "") << ", "
                  << NetworkModeName(network) << " network");
        SimOptions sim;
        sim.collectives.step_by_step = step_by_step;
        sim.network = network;
        const SimResult declared = RequireDeclaredExact(options, topology, sim);
        CHECK(declared.fold_order == 4);  // dp 2 x tp 2: one device of 8 per stage pair
      }
    }
  }
}

TEST_CASE("a declared symmetry with data parallelism or tensor parallelism alone") {
  const FakeTopology topology = TwoNodes();
  // dp only: 2 replicas of pp4.
  CHECK(RequireDeclaredExact(Options(Strategy::kOneFOneB, 2, 4, 1), topology, {}).fold_order == 2);
  // tp only (dp 1): the tp rotation alone, by one of 4 ranks, on nodes of 4 GPUs without
  // direct pairs (a host link each) and the ring 0, 1, 2, 3.
  FakeTopology uniform(2, 4, 10e9, 1000, 5e9, 2000);
  uniform.AddRing({0, 1, 2, 3});
  CHECK(RequireDeclaredExact(Options(Strategy::kInterleaved, 1, 2, 4), uniform, {}).fold_order ==
        4);
  // A broadcast boundary breaks the tp rotation (rank 0 receives): replica 0's tp ranks all
  // present, the replica shift declared alone.
  GenerateOptions broadcast = Options(Strategy::kOneFOneB, 2, 2, 2);
  broadcast.boundary = Boundary::kBroadcast;
  const Schedule reps = Generate(Representatives(broadcast));
  CHECK(reps.symmetry.tp == 0);
  CHECK(RequireDeclaredExact(broadcast, topology, {}, /*tp_ranks=*/2).fold_order == 2);
}

TEST_CASE("a real cluster: NICs shared by GPU pairs count their traffic by multiplicity") {
  // p4d.24xlarge: one EFA NIC per pair of GPUs. The rotation by one tp rank maps a pair's NIC
  // onto itself for one GPU and onto the next pair's for the other: the NICs of a tp group are
  // one class, each carrying 2 of the 8 images of a transfer (multiplicity 2). dp2 pp2 tp4 on
  // two nodes: tp rank 0 of replica 0 simulated, 2 replicas x 4 tp ranks = 8, also where tp
  // ranks 0 and 1 are present (the rotation by 1 is tried first; rank 1's ops stand idle).
  const Cluster cluster = BuildCluster("p4d.24xlarge:2");
  const ClusterTopology topology(cluster);
  for (Strategy strategy : {Strategy::kOneFOneB, Strategy::kInterleaved}) {
    for (NetworkMode network : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
      INFO(StrategyName(strategy) << ", " << NetworkModeName(network) << " network");
      const GenerateOptions options = Options(strategy, 2, 2, 4);
      SimOptions sim;
      sim.network = network;
      CHECK(RequireDeclaredExact(options, topology, sim).fold_order == 8);
      CHECK(RequireDeclaredExact(options, topology, sim, /*tp_ranks=*/2).fold_order == 8);
    }
  }
}

TEST_CASE("eight GPUs sharing a NIC and pairs sharing a PCIe switch fold to one tp rank") {
  // p3.16xlarge-like nodes (fold_cases.h), one socket: the 8 tp ranks' transfers cross the one
  // NIC (multiplicity 8) and their pair's switch uplink (multiplicity 2); pp2 tp8 puts a stage
  // on each node, so every activation crosses the NIC. dp 2 adds the replica shift.
  const testing::SharedNicTopology p3like(2, {0, 0, 1, 1, 2, 2, 3, 3});
  const testing::SharedNicTopology p3like4(4, {0, 0, 1, 1, 2, 2, 3, 3});
  ForEachP3Case([&](Strategy strategy, const SimOptions& sim) {
    CHECK(RequireDeclaredExact(Tp8(strategy, 1, 2), p3like, sim).fold_order == 8);
    // Analytic, dp 2: the whole replay itself is not symmetric. The 8 stage-1 gradient
    // all-reduces (one per tp rank, each across the NICs of nodes 1 and 3) start at one
    // instant but end 4.5 us apart, tp rank by tp rank (its costing depends on the order
    // it sees them in); the fold gives them all the earliest end. So flow only.
    if (sim.network == NetworkMode::kFlow) {
      CHECK(RequireDeclaredExact(Tp8(strategy, 2, 2), p3like4, sim).fold_order == 16);
    }
  });
}

TEST_CASE("GPUs sharing a switch unevenly are not folded") {
  // Three of a node's four GPUs behind one switch, the fourth alone behind another, a narrow
  // switch uplink (2 GB/s): rank 3's activations move at 1 GB/s (the NIC's 3 GB/s less the
  // first switch's 2), ranks 0-2's at 2/3 GB/s. Every tp rotation loads the switch uplinks
  // unevenly (3 images on one, 1 on the other): refused, and the automatic fold keeps every tp
  // rank (the replica shift alone).
  const testing::SharedNicTopology uneven(4, {0, 0, 0, 1}, 2e9);
  const FakeCost cost(3, 5, 200);
  const GenerateOptions options = Options(Strategy::kOneFOneB, 2, 2, 4);
  REQUIRE_THROWS_WITH(Simulate(Generate(Representatives(options)), uneven, cost, {}),
                      Catch::Contains("the declared symmetry does not hold: tensor-parallel"));
  SimOptions sim;
  const SimResult folded = Simulate(Generate(options), uneven, cost, sim);
  CHECK(folded.fold_order == 2);
  CHECK_THAT(folded.fold_note, Catch::Contains("carries 3 images"));
  sim.fold = false;
  const SimResult full = Simulate(Generate(options), uneven, cost, sim);
  CHECK(folded.iteration_time_ns == full.iteration_time_ns);
  // The asymmetry is real: rank 3's stage-0 SENDs end before rank 0's.
  std::map<std::string, TimeNs> end;
  for (const TraceRow& row : full.trace.rows) end[row.key] = row.end_ns;
  int earlier = 0;
  for (const auto& [key, end_ns] : end) {
    if (key.rfind("S", 0) != 0 || key.size() < 3 || key.substr(key.size() - 3) != ".r3") continue;
    const auto rank0 = end.find(key.substr(0, key.size() - 3) + ".r0");
    if (rank0 != end.end() && end_ns < rank0->second) ++earlier;
  }
  CHECK(earlier > 0);
  // SimulateGenerated generates replica 0 whole (every tp rank), folded by the replica shift:
  // half the rows, the whole schedule's time (tests/sim/replica_shift_fold_test.cpp).
  CHECK(RepresentativeTpSet(options, uneven, cost, {}) == std::vector<int>{0, 1, 2, 3});
  const SimResult generated = SimulateGenerated(options, uneven, cost, SimOptions{});
  CHECK(generated.fold_order == 2);
  CHECK(generated.trace.rows.size() * 2 == full.trace.rows.size());
  CHECK(generated.iteration_time_ns == full.iteration_time_ns);
}

TEST_CASE("SimulateGenerated takes the fewest tp ranks the network allows, else the whole") {
  const Cluster cluster = BuildCluster("p4d.24xlarge:2");
  const ClusterTopology topology(cluster);
  const FakeCost cost(3, 5, 200);
  const GenerateOptions options = Options(Strategy::kOneFOneB, 2, 2, 4);
  SimOptions sim;
  const SimResult whole = Simulate(Generate(options), topology, cost, sim);
  const SimResult generated = SimulateGenerated(options, topology, cost, sim);
  // The rotation by one tp rank is taken (each NIC carries its GPU pair's transfers by
  // multiplicity): tp rank 0 of replica 0 simulated, 16 / 8 = 2 devices' rows.
  CHECK(generated.fold_order == 8);
  CHECK(generated.trace.rows.size() * 8 == whole.trace.rows.size());
  CHECK(generated.iteration_time_ns == whole.iteration_time_ns);
  // A slow device: the whole schedule, as Simulate of it.
  sim.device_speed.assign(16, 1.0);
  sim.device_speed[9] = 1.25;
  const SimResult slow = SimulateGenerated(options, topology, cost, sim);
  CHECK(slow.trace.rows.size() == whole.trace.rows.size());
  CHECK(slow.iteration_time_ns ==
        Simulate(Generate(options), topology, cost, sim).iteration_time_ns);
  // The analytic network folds too (its per-link state counts images by multiplicity): the
  // representatives, at the whole schedule's time.
  SimOptions analytic;
  analytic.network = NetworkMode::kAnalytic;
  const SimResult ana = SimulateGenerated(options, topology, cost, analytic);
  CHECK(ana.fold_order == 8);
  CHECK(ana.trace.rows.size() * 8 == whole.trace.rows.size());
  CHECK(ana.iteration_time_ns ==
        Simulate(Generate(options), topology, cost, analytic).iteration_time_ns);
  // Link rates are sampled per real link: the whole schedule.
  SimOptions rates;
  rates.record_link_rates = true;
  const SimResult sampled = SimulateGenerated(options, topology, cost, rates);
  CHECK(sampled.trace.rows.size() == whole.trace.rows.size());
  // A placement outside the cluster's 16 GPUs: no representatives, and the whole schedule's
  // replay names the bad device.
  SimOptions outside;
  outside.placement.resize(16);
  for (int d = 0; d < 16; ++d) outside.placement[d] = d;
  outside.placement[5] = 16;
  CHECK(RepresentativeTpSet(options, topology, cost, outside).empty());
  REQUIRE_THROWS_WITH(SimulateGenerated(options, topology, cost, outside),
                      Catch::Contains("device 5 -> GPU 16 is outside the cluster's 16 GPUs"));
}

TEST_CASE("p3.16xlarge: the representatives of the socket-pair permutation, tp ranks 0, 2, 4, 6") {
  // No rotation of the tp ranks keeps p3.16xlarge's routes (the NIC hangs off socket 0);
  // (0 1)(2 3)(4 5)(6 7) does (symmetry_fold_test.cpp): its orbits are the pairs, so a
  // representatives-only schedule holds tp ranks 0, 2, 4 and 6, half of each tp group, and
  // replays as the whole schedule (folded by Find, and not folded) to the ns.
  const Cluster two = BuildCluster("p3.16xlarge:2");
  const Cluster four = BuildCluster("p3.16xlarge:4");
  const ClusterTopology p3(two), p3x4(four);
  const FakeCost cost(3, 5, 200);
  const std::vector<int> pairs = {0, 2, 4, 6};
  ForEachP3Case([&](Strategy strategy, const SimOptions& sim) {
    const GenerateOptions dp1 = Tp8(strategy, 1, 2);
    REQUIRE(RepresentativeTpSet(dp1, p3, cost, sim) == pairs);
    // 8 tp ranks / 4 simulated.
    CHECK(RequireDeclaredExact(dp1, p3, sim, 1, pairs).fold_order == 2);
    // dp 2 (rings): the replica shift too, 16 devices per stage pair / 4.
    if (sim.network == NetworkMode::kFlow && !sim.collectives.step_by_step) {
      const GenerateOptions dp2 = Tp8(strategy, 2, 2);
      REQUIRE(RepresentativeTpSet(dp2, p3x4, cost, sim) == pairs);
      CHECK(RequireDeclaredExact(dp2, p3x4, sim, 1, pairs).fold_order == 4);
    }
  });
  // SimulateGenerated takes them: half the rows, the whole schedule's iteration time.
  const GenerateOptions options = Tp8(Strategy::kTeraPipe, 1, 2);
  const SimResult whole = Simulate(Generate(options), p3, cost, {});
  const SimResult generated = SimulateGenerated(options, p3, cost, {});
  CHECK(generated.fold_order == 2);
  CHECK(generated.trace.rows.size() * 2 == whole.trace.rows.size());
  CHECK(generated.iteration_time_ns == whole.iteration_time_ns);
  CHECK(generated.events == whole.events);  // both replay the representatives' ops alone
}

TEST_CASE("p3.16xlarge: an asymmetric input keeps every tp rank") {
  // Node 2's PCIe link into GPU 5 at half bandwidth (pp4 tp8 on four nodes): the permutation
  // (4 5) no longer keeps the routes, so no tp rank stands for another: the whole schedule.
  const Cluster cluster = BuildCluster("p3.16xlarge:4");
  const ClusterTopology p3(cluster);
  const SlowLink slow(p3, p3.Route(8 + 5, 16 + 5).back());
  const FakeCost cost(3, 5, 200);
  const GenerateOptions options = Tp8(Strategy::kOneFOneB, 1, 4);
  CHECK(RepresentativeTpSet(options, p3, cost, {}) == std::vector<int>{0, 2, 4, 6});
  CHECK(RepresentativeTpSet(options, slow, cost, {}).empty());
  const SimResult generated = SimulateGenerated(options, slow, cost, {});
  const SimResult whole = Simulate(Generate(options), slow, cost, {});
  CHECK(generated.fold_order == 1);
  CHECK(generated.trace.rows.size() == whole.trace.rows.size());
  CHECK(generated.iteration_time_ns == whole.iteration_time_ns);
  // A schedule declaring those ranks anyway is refused, naming the permutation's failure.
  const Schedule reps = Generate(Representatives(options, 1, {0, 2, 4, 6}));
  REQUIRE_THROWS_WITH(Simulate(reps, slow, cost, {}),
                      Catch::Contains("the declared symmetry does not hold: ") &&
                          Catch::Contains(p3.Links()[p3.Route(8 + 5, 16 + 5).back()].name));
  // A slow device: the whole schedule too.
  SimOptions sim;
  sim.device_speed.assign(32, 1.0);
  sim.device_speed[3] = 1.25;
  CHECK(RepresentativeTpSet(options, p3, cost, sim).empty());
  // Ranks that are not one per orbit (0 and 1 are one orbit; 4 is simulated but absent).
  const Schedule prefix = Generate(Representatives(options, 1, {0, 1, 2, 3}));
  REQUIRE_THROWS_WITH(Simulate(prefix, p3, cost, {}),
                      Catch::Contains("device 4 is simulated but its ops are not in the schedule"));
}

TEST_CASE("an input that breaks the declared symmetry is refused") {
  const FakeTopology topology = TwoNodes();
  const FakeCost cost(3, 5, 200);
  const Schedule reps = Generate(Representatives(Options(Strategy::kOneFOneB, 2, 2, 2)));
  SECTION("a slow device") {
    SimOptions sim;
    sim.device_speed = {1, 1, 1, 1, 1, 1, 1.5, 1};  // device 6: replica 1, stage 1, tp 0
    REQUIRE_THROWS_WITH(Simulate(reps, topology, cost, sim), Catch::Contains("speeds"));
  }
  SECTION("a placement that breaks the replica shift") {
    SimOptions sim;
    sim.placement = {0, 1, 2, 3, 4, 6, 5, 7};  // replica 1's stage-0 pair off its direct link
    REQUIRE_THROWS_WITH(Simulate(reps, topology, cost, sim), Catch::Contains("data-parallel"));
  }
  SECTION("measured durations") {
    SimOptions sim;
    sim.compute_ns.assign(reps.ops.size(), 1000);
    REQUIRE_THROWS_WITH(Simulate(reps, topology, cost, sim), Catch::Contains("measured durations"));
  }
  SECTION("link rates (sampled per real link)") {
    SimOptions sim;
    sim.record_link_rates = true;
    REQUIRE_THROWS_WITH(Simulate(reps, topology, cost, sim), Catch::Contains("--link-rates"));
  }
  SECTION("representative tp ranks that do not divide tp") {
    GenerateOptions options = Representatives(Options(Strategy::kOneFOneB, 2, 2, 4), 3);
    REQUIRE_THROWS_WITH(Generate(options), Catch::Contains("must divide --tp 4"));
  }
  SECTION("a representative tp set that does not start at 0 or has every rank") {
    const GenerateOptions options = Options(Strategy::kOneFOneB, 2, 2, 4);
    REQUIRE_THROWS_WITH(Generate(Representatives(options, 1, {1, 3})),
                        Catch::Contains("must ascend from 0 below --tp 4"));
    REQUIRE_THROWS_WITH(Generate(Representatives(options, 1, {0, 1, 2, 3})),
                        Catch::Contains("must ascend from 0 below --tp 4"));
  }
}

TEST_CASE("a declared fold from the replay graph's comm keys is the fold from the ops") {
  // SymmetryFold::Declared reads the plan keys and SEND pairs from ReplayGraph::comm_keys where
  // given (a replay), else from the ops and their groups: the same fold either way, folded
  // (dp2 pp2 tp2: replica shift and tp rotation, order 4) and refused (a slow device).
  const FakeTopology topology = TwoNodes();
  const Schedule reps = Generate(Representatives(Options(Strategy::kOneFOneB, 2, 2, 2)));
  std::vector<int> placement;
  for (int d = 0; d < reps.devices; ++d) placement.push_back(d);
  const ReplayGraph graph = BuildReplayGraph(reps, placement);
  std::vector<int> group(graph.instance.size(), -1);
  for (size_t i = 0; i < group.size(); ++i) {
    if (graph.instance[i] >= 0) group[i] = graph.instances[graph.instance[i]].group;
  }
  const std::vector<int> none;
  const std::vector<TimeNs> measured;
  for (const std::vector<double>& speed : {std::vector<double>{}, std::vector<double>{1, 0.5}}) {
    INFO("speeds " << speed.size());
    const FoldGraph from_ops{reps,          placement, graph.work_tp,
                             graph.partner, group,     graph.succ_begin,
                             graph.succ,    measured,  speed};
    // With the keys, neither the partners nor the groups are read.
    FoldGraph from_keys{reps,       placement, graph.work_tp, none, none, graph.succ_begin,
                        graph.succ, measured,  speed};
    from_keys.comm_keys = &graph.comm_keys;
    RouteCache routes_a(topology), routes_b(topology);
    const SymmetryFold a = SymmetryFold::Declared(from_ops, topology, routes_a, {});
    const SymmetryFold b = SymmetryFold::Declared(from_keys, topology, routes_b, {});
    REQUIRE(a.Order() == (speed.empty() ? 4 : 1));
    REQUIRE(b.Order() == a.Order());
    REQUIRE(b.WhyNot() == a.WhyNot());
    for (int d = 0; d < reps.devices; ++d) REQUIRE(b.RepDevice(d) == a.RepDevice(d));
    for (int l = 0; l < static_cast<int>(topology.Links().size()); ++l) {
      REQUIRE(b.LinkRep(l) == a.LinkRep(l));
      REQUIRE(b.LinkMultiplicity(l) == a.LinkMultiplicity(l));
    }
  }
}

TEST_CASE("a declared fold kept from a probe with fewer micro-batches is the schedule's own") {
  // SimulateGenerated checks a probe (1 micro-batch) and keeps its fold in the PlanCache; the
  // replay's Declared of the real schedule (4 micro-batches) reads the same inputs (devices,
  // declared symmetry, groups, placement, speeds, comm keys: the probe has the same collective
  // keys and SEND pairs), so it gets the kept fold, which is the one it computes on its own
  // (dp2 pp2 tp2: order 4). A slow device is another input: checked again, and refused alike.
  const FakeTopology topology = TwoNodes();
  GenerateOptions options = Representatives(Options(Strategy::kOneFOneB, 2, 2, 2));
  const Schedule reps = Generate(options);
  options.microbatches = 1;
  const Schedule probe = Generate(options);
  REQUIRE(probe.ops.size() < reps.ops.size());
  std::vector<int> placement;
  for (int d = 0; d < reps.devices; ++d) placement.push_back(d);
  const ReplayGraph reps_graph = BuildReplayGraph(reps, placement);
  const ReplayGraph probe_graph = BuildReplayGraph(probe, placement);
  REQUIRE(probe_graph.comm_keys.plans == reps_graph.comm_keys.plans);
  REQUIRE(probe_graph.comm_keys.sends == reps_graph.comm_keys.sends);
  const std::vector<int> none;
  const std::vector<TimeNs> measured;
  const auto graph_of = [&](const Schedule& s, const ReplayGraph& g,
                            const std::vector<double>& speed, PlanCache* plans) {
    FoldGraph graph{s,      placement, g.work_tp, none,    none,   g.succ_begin,
                    g.succ, measured,  speed,     nullptr, nullptr};
    graph.comm_keys = &g.comm_keys;
    graph.plans = plans;
    return graph;
  };
  const auto require_same = [&](const SymmetryFold& a, const SymmetryFold& b) {
    REQUIRE(a.Order() == b.Order());
    REQUIRE(a.WhyNot() == b.WhyNot());
    for (int d = 0; d < reps.devices; ++d) REQUIRE(a.RepDevice(d) == b.RepDevice(d));
    for (int l = 0; l < static_cast<int>(topology.Links().size()); ++l) {
      REQUIRE(a.LinkRep(l) == b.LinkRep(l));
      REQUIRE(a.LinkMultiplicity(l) == b.LinkMultiplicity(l));
    }
    if (!a.Folded()) return;
    for (size_t h = 0; h < reps.groups.size(); ++h) {
      REQUIRE(a.RepMembers(static_cast<int>(h)) == b.RepMembers(static_cast<int>(h)));
    }
    for (const auto& [group, kind, bytes, root] : reps_graph.comm_keys.plans) {
      const int root_gpu = root >= 0 ? placement[root] : -1;
      const FoldedPlan* pa = a.Plan(group, static_cast<OpKind>(kind), bytes, root_gpu);
      const FoldedPlan* pb = b.Plan(group, static_cast<OpKind>(kind), bytes, root_gpu);
      REQUIRE((pa == nullptr) == (pb == nullptr));
      if (pa == nullptr) continue;
      REQUIRE(pa->stabilizer == pb->stabilizer);
      REQUIRE(pa->phases.size() == pb->phases.size());
      for (size_t ph = 0; ph < pa->phases.size(); ++ph) {
        REQUIRE(pa->phases[ph].size() == pb->phases[ph].size());
        for (size_t r = 0; r < pa->phases[ph].size(); ++r) {
          REQUIRE(pa->phases[ph][r].run == pb->phases[ph][r].run);
          REQUIRE(pa->phases[ph][r].flows.size() == pb->phases[ph][r].flows.size());
          for (size_t f = 0; f < pa->phases[ph][r].flows.size(); ++f) {
            REQUIRE(pa->phases[ph][r].flows[f].route == pb->phases[ph][r].flows[f].route);
            REQUIRE(pa->phases[ph][r].flows[f].latency_ns == pb->phases[ph][r].flows[f].latency_ns);
          }
        }
      }
    }
  };
  for (const std::vector<double>& speed : {std::vector<double>{}, std::vector<double>{1, 0.5}}) {
    INFO("speeds " << speed.size());
    PlanCache kept(topology, {});
    kept.KeepDeclaredFolds();
    PlanCache own(topology, {});  // keeps nothing: every Declared checks
    RouteCache probe_routes(topology), reps_routes(topology), own_routes(topology);
    const SymmetryFold from_probe = SymmetryFold::Declared(
        graph_of(probe, probe_graph, speed, &kept), topology, probe_routes, {});
    REQUIRE(kept.DeclaredFoldHits() == 0);
    REQUIRE(kept.DeclaredFolds().size() == 1);
    const SymmetryFold reused =
        SymmetryFold::Declared(graph_of(reps, reps_graph, speed, &kept), topology, reps_routes, {});
    REQUIRE(kept.DeclaredFoldHits() == 1);
    const SymmetryFold checked =
        SymmetryFold::Declared(graph_of(reps, reps_graph, speed, &own), topology, own_routes, {});
    REQUIRE(own.DeclaredFolds().empty());
    REQUIRE(checked.Order() == (speed.empty() ? 4 : 1));
    require_same(reused, checked);
    require_same(from_probe, checked);
    // DeclaredLargest is kept apart from Declared (another result where tp ranks are a set).
    SymmetryFold::DeclaredLargest(graph_of(reps, reps_graph, speed, &kept), topology, reps_routes,
                                  {});
    REQUIRE(kept.DeclaredFoldHits() == 1);
    REQUIRE(kept.DeclaredFolds().size() == 2);
  }
  // Another input (a device 1.25x slower in the second run) is not answered by the first's.
  PlanCache kept(topology, {});
  kept.KeepDeclaredFolds();
  RouteCache routes(topology);
  const std::vector<double> slow{1, 1.25};
  REQUIRE(SymmetryFold::Declared(graph_of(probe, probe_graph, {}, &kept), topology, routes, {})
              .Folded());
  REQUIRE_FALSE(
      SymmetryFold::Declared(graph_of(reps, reps_graph, slow, &kept), topology, routes, {})
          .Folded());
  REQUIRE(kept.DeclaredFoldHits() == 0);
}

TEST_CASE("memory estimates of a representatives-only schedule are the whole one's") {
  // Every device runs its image's program, so its estimate is its image's (device 13 = replica
  // 1, stage 2, tp rank 1 has replica 0's tp rank 0 of stage 2).
  const DeviceSpec v100 = LoadDeviceSpec("v100-sxm2-16gb");
  for (Strategy strategy : {Strategy::kOneFOneB, Strategy::kInterleaved, Strategy::kZbV}) {
    GenerateOptions options = Options(strategy, 2, 4, 2);
    if (strategy == Strategy::kInterleaved) options.virtual_stages = 1;
    options.zero = 1;
    const MemoryEstimate whole = EstimateMemory(Generate(options), options.model, v100);
    const MemoryEstimate reps =
        EstimateMemory(Generate(Representatives(options)), options.model, v100);
    REQUIRE(reps.devices.size() == whole.devices.size());
    for (size_t d = 0; d < whole.devices.size(); ++d) {
      INFO("device " << d);
      CHECK(reps.devices[d].device == whole.devices[d].device);
      CHECK(reps.devices[d].peak == whole.devices[d].peak);
      CHECK(reps.devices[d].stages == whole.devices[d].stages);
      CHECK(reps.devices[d].reason == whole.devices[d].reason);
    }
    CHECK(reps.peak_device == whole.peak_device);
    CHECK(reps.reason == whole.reason);
  }
}

}  // namespace terasim

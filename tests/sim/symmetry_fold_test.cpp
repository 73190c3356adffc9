// Symmetry folding (sim/symmetry_fold.h): a folded replay gives the full replay's results on
// every generator, in both network modes, and an asymmetric input is not folded.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "models/memory_model.h"
#include "schedule/generator.h"
#include "sim/cluster_topology.h"
#include "sim/collective_plan.h"
#include "sim/simulator.h"
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

GenerateOptions Options(Strategy strategy, int dp, int pp, int tp) {
  return testing::FoldOptions(strategy, dp, pp, tp);
}

// The critical path as (kind, start, end) with consecutive repeats merged: the full replay may
// pass through the last member of a collective on another replica and then the member it
// released, which a folded replay sees as one op.
std::vector<std::tuple<OpKind, TimeNs, TimeNs>> PathTimes(const SimResult& r) {
  std::map<std::string, const TraceRow*> rows;
  for (const TraceRow& row : r.trace.rows) rows[row.key] = &row;
  std::vector<std::tuple<OpKind, TimeNs, TimeNs>> path;
  for (const std::string& key : r.critical_path) {
    const TraceRow& row = *rows.at(key);
    const auto entry = std::make_tuple(row.kind, row.start_ns, row.end_ns);
    if (path.empty() || path.back() != entry) path.push_back(entry);
  }
  return path;
}

// Folded == full: iteration time, every op's start and end, per-device fractions and the
// critical path exactly; link bytes to 1e-9 relative (a link's bytes are summed in another
// order: class multiplicity x bytes instead of one addition per flow).
SimResult RequireFoldExact(const Schedule& schedule, const NetworkTopology& topology,
                           SimOptions options) {
  const FakeCost cost(3, 5, 200);
  options.fold = true;
  const SimResult folded = Simulate(schedule, topology, cost, options);
  options.fold = false;
  const SimResult full = Simulate(schedule, topology, cost, options);
  INFO("fold order " << folded.fold_order << ", refused: " << folded.fold_note);
  REQUIRE(full.fold_order == 1);
  REQUIRE(folded.iteration_time_ns == full.iteration_time_ns);
  REQUIRE(folded.trace.rows.size() == full.trace.rows.size());
  for (size_t i = 0; i < full.trace.rows.size(); ++i) {
    INFO(full.trace.rows[i].key);
    REQUIRE(folded.trace.rows[i].start_ns == full.trace.rows[i].start_ns);
    REQUIRE(folded.trace.rows[i].end_ns == full.trace.rows[i].end_ns);
  }
  REQUIRE(folded.devices.size() == full.devices.size());
  for (size_t d = 0; d < full.devices.size(); ++d) {
    INFO("device " << d);
    REQUIRE(folded.devices[d].compute_fraction == full.devices[d].compute_fraction);
    REQUIRE(folded.devices[d].comm_fraction == full.devices[d].comm_fraction);
    REQUIRE(folded.devices[d].idle_fraction == full.devices[d].idle_fraction);
  }
  REQUIRE(folded.links.size() == full.links.size());
  for (size_t l = 0; l < full.links.size(); ++l) {
    INFO(full.links[l].name);
    REQUIRE(folded.links[l].link == full.links[l].link);
    REQUIRE(folded.links[l].bytes == Approx(full.links[l].bytes).epsilon(1e-9));
    REQUIRE(folded.links[l].busy_ns == full.links[l].busy_ns);
  }
  REQUIRE(PathTimes(folded) == PathTimes(full));
  REQUIRE(folded.model_flops == Approx(full.model_flops).epsilon(1e-12));
  return folded;
}

// tp 8 (the test model with 8 heads).
GenerateOptions Tp8(Strategy strategy, int dp, int pp) {
  GenerateOptions o = Options(strategy, dp, pp, 8);
  o.model.heads = 8;
  return o;
}

}  // namespace

TEST_CASE("folded replay equals the full replay on every generator, both network modes") {
  const FakeTopology topology = TwoNodes();
  const std::vector<std::pair<std::string, GenerateOptions>> cases = {
      {"gpipe", Options(Strategy::kGpipe, 2, 2, 2)},
      {"1f1b", Options(Strategy::kOneFOneB, 2, 2, 2)},
      {"interleaved", Options(Strategy::kInterleaved, 2, 2, 2)},
      {"terapipe", Options(Strategy::kTeraPipe, 2, 2, 2)},
      {"zb-h1", Options(Strategy::kZbH1, 2, 2, 2)},
      {"zb-h2", Options(Strategy::kZbH2, 2, 2, 2)},
      {"looped-bfs", Options(Strategy::kLoopedBfs, 2, 2, 2)},
  };
  for (const auto& [name, options] : cases) {
    for (NetworkMode mode : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
      INFO(name << " " << NetworkModeName(mode));
      const Schedule schedule = Generate(options);
      SimOptions sim;
      sim.network = mode;
      const SimResult folded = RequireFoldExact(schedule, topology, sim);
      // Both symmetries hold: one device of the 8 stands for dp x tp = 4, in both networks
      // (the analytic one counts the images on its representative links).
      CHECK(folded.fold_order == 4);
    }
  }
}

TEST_CASE("folded replay equals the full replay with collectives replayed step by step") {
  // The flow network's two collective replays (sim/collective_plan.h): one aggregate flow per
  // ring run (the default, above) and one flow per ring step; the fold must be exact in both.
  const FakeTopology topology = TwoNodes();
  for (Strategy strategy : {Strategy::kOneFOneB, Strategy::kTeraPipe, Strategy::kZbH1}) {
    SimOptions sim;
    sim.network = NetworkMode::kFlow;
    sim.collectives.step_by_step = true;
    const SimResult folded = RequireFoldExact(Generate(Options(strategy, 2, 2, 2)), topology, sim);
    CHECK(folded.fold_order == 4);  // dp 2 x tp 2, as with aggregate flows
  }
}

TEST_CASE("megatron recipes and data-parallel only fold exactly") {
  const FakeTopology topology = TwoNodes();
  GenerateOptions megatron = Options(Strategy::kOneFOneB, 2, 2, 2);
  megatron.sequence_parallel = true;
  megatron.recompute = Recompute::kFull;
  GenerateOptions dp_only = Options(Strategy::kOneFOneB, 2, 4, 1);
  for (const GenerateOptions& options : {megatron, dp_only}) {
    for (NetworkMode mode : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
      SimOptions sim;
      sim.network = mode;
      const SimResult folded = RequireFoldExact(Generate(options), topology, sim);
      // 4 with sp + recompute, 2 dp only.
      CHECK(folded.fold_order == options.dp * options.tp);
    }
  }
}

TEST_CASE("a real cluster folds data-parallel replicas sharing its links") {
  // p4d.24xlarge: 8 A100 per node on NVSwitch, one EFA NIC per pair of GPUs; dp2 pp2 tp4 on
  // two nodes. Each NIC carries its pair's transfers by multiplicity 2 under the tp rotation by
  // 1 (the four NICs one class): 2 replicas x 4 = 8.
  const Cluster cluster = BuildCluster("p4d.24xlarge:2");
  const ClusterTopology topology(cluster);
  for (Strategy strategy : {Strategy::kOneFOneB, Strategy::kInterleaved}) {
    for (NetworkMode mode : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
      SimOptions sim;
      sim.network = mode;
      const SimResult folded =
          RequireFoldExact(Generate(Options(strategy, 2, 2, 4)), topology, sim);
      CHECK(folded.fold_order == 8);
    }
  }
}

TEST_CASE("a slow device is not folded") {
  const FakeTopology topology = TwoNodes();
  const Schedule schedule = Generate(Options(Strategy::kOneFOneB, 2, 2, 2));
  SimOptions sim;
  sim.device_speed = {1, 1, 1, 1, 1, 1, 1.5, 1};  // device 6 (replica 1, stage 1, tp 0) slower
  const SimResult folded = RequireFoldExact(schedule, topology, sim);
  // Device 6 breaks both the replica shift (2 -> 6) and the tp rotation (6 -> 7).
  CHECK(folded.fold_order == 1);
  CHECK(folded.fold_note.find("speeds") != std::string::npos);
}

TEST_CASE("a group the fold's symmetries split, or without its representatives, is named") {
  const FakeTopology topology = TwoNodes();
  SimOptions sim;
  {
    // dp 2 x pp 2: the shift by one replica (0 -> 2 -> 0, 1 -> 3 -> 1) maps group {0, 1, 2}
    // onto {2, 3, 0}, which it meets in two of its three devices.
    Schedule schedule = Generate(Options(Strategy::kOneFOneB, 2, 2, 1));
    schedule.groups.push_back(Group{"split", {0, 1, 2}, 0});
    const SimResult folded = RequireFoldExact(schedule, topology, sim);
    CHECK(folded.fold_order == 1);
    CHECK(folded.fold_note == "a symmetry maps group split partly onto itself");
  }
  {
    // dp 2 x pp 2: the shift by one replica (order 2) keeps devices 0 and 1; group {0, 3} holds
    // representative 0 but not device 3's (device 1).
    Schedule schedule = Generate(Options(Strategy::kOneFOneB, 2, 2, 1));
    schedule.groups.push_back(Group{"cross", {0, 3}, 0});
    const SimResult folded = RequireFoldExact(schedule, topology, sim);
    CHECK(folded.fold_order == 1);
    CHECK(folded.fold_note == "group cross does not hold the representative of device 3");
  }
}

TEST_CASE("a placement that breaks the replica symmetry is not folded across replicas") {
  const FakeTopology topology = TwoNodes();
  const Schedule schedule = Generate(Options(Strategy::kOneFOneB, 2, 2, 2));
  SimOptions sim;
  // Replica 1's stage-0 tp pair on GPUs 4 and 6 (the host link, not a direct pair as replica
  // 0's on GPUs 0 and 1): the replica shift is refused, the tp rotation still holds.
  sim.placement = {0, 1, 2, 3, 4, 6, 5, 7};
  for (NetworkMode mode : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
    sim.network = mode;
    const SimResult folded = RequireFoldExact(schedule, topology, sim);
    CHECK(folded.fold_order == 2);
    CHECK(folded.fold_note.find("data-parallel") != std::string::npos);
  }
}

TEST_CASE("p3.16xlarge folds the tp ranks of each socket in pairs") {
  // GPUs 4-7 reach the NIC (on socket 0) across the inter-socket link, so no permutation that
  // swaps the sockets keeps the routes, and no rotation of the tp ranks does. Within the
  // sockets, the NVLink cube-mesh's automorphisms are the identity and (0 1)(2 3)(4 5)(6 7),
  // which maps each NVLink ring onto itself reversed (a run of the plan, as the rings also run
  // reversed) and each PCIe switch onto itself: order 2, tp ranks 0, 2, 4 and 6 simulated.
  // pp2 tp8 puts a stage on each node, so every activation crosses the NIC; dp 2 adds the
  // replica shift (order 4).
  const Cluster two = BuildCluster("p3.16xlarge:2");
  const Cluster four = BuildCluster("p3.16xlarge:4");
  const ClusterTopology p3(two), p3x4(four);
  CollectiveOptions nccl = LoadCollectiveOptions(DefaultCollectiveOptionsPath());
  REQUIRE(nccl.algorithms == CollectiveAlgorithms::kNccl);
  for (Strategy strategy : {Strategy::kGpipe, Strategy::kOneFOneB, Strategy::kTeraPipe}) {
    for (NetworkMode network : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
      for (bool as_nccl : {false, true}) {
        INFO(StrategyName(strategy)
             << ", " << NetworkModeName(network) << " network" << (as_nccl ? ", nccl" : ", rings"));
        SimOptions sim;
        sim.network = network;
        if (as_nccl) sim.collectives = nccl;
        const SimResult folded = RequireFoldExact(Generate(Tp8(strategy, 1, 2)), p3, sim);
        CHECK(folded.fold_order == 2);
        CHECK_THAT(folded.fold_note, Catch::Contains("permutations [1 0 3 2 5 4 7 6] taken"));
        if (network == NetworkMode::kFlow) {
          SimOptions steps = sim;
          steps.collectives.step_by_step = true;
          CHECK(RequireFoldExact(Generate(Tp8(strategy, 1, 2)), p3, steps).fold_order == 2);
        }
        // dp 2. NCCL may run the replica's all-reduce (16 GPUs on 2 nodes) as one ring in one
        // direction, or trees whose in-node chains are not reversed: the permutation is
        // then refused (rightly: the plan makes the ranks inequivalent), the shift kept.
        const SimResult dp2 = RequireFoldExact(Generate(Tp8(strategy, 2, 2)), p3x4, sim);
        INFO(dp2.fold_note);
        if (as_nccl && dp2.fold_order != 4) {
          CHECK(dp2.fold_order == 2);
          CHECK_THAT(dp2.fold_note, Catch::Contains("[1 0 3 2 5 4 7 6]: the ALLREDUCE plan of "
                                                    "group replica.d0 does not map"));
        } else {
          CHECK(dp2.fold_order == 4);
        }
      }
    }
  }
}

TEST_CASE("a slow link breaks the p3.16xlarge fold and is named") {
  // pp4 tp8 on four p3.16xlarge nodes, node 2's PCIe link into GPU 5 at half bandwidth: the
  // activations from stage 1 to stage 2 of tp rank 5 cross it, rank 4's the link into GPU 4,
  // so the permutation (4 5) of every socket pair does not keep the routes.
  const Cluster cluster = BuildCluster("p3.16xlarge:4");
  const ClusterTopology p3(cluster);
  const int slow = p3.Route(8 + 5, 16 + 5).back();
  const SlowLink topology(p3, slow);
  for (NetworkMode network : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
    SimOptions sim;
    sim.network = network;
    const SimResult folded =
        RequireFoldExact(Generate(Tp8(Strategy::kOneFOneB, 1, 4)), topology, sim);
    CHECK(folded.fold_order == 1);
    CHECK_THAT(folded.fold_note,
               Catch::Contains("tensor-parallel permutations: [1 0 3 2 5 4 7 6]"));
    CHECK_THAT(folded.fold_note, Catch::Contains(p3.Links()[slow].name));
  }
  // The same schedule without the slow link folds.
  CHECK(RequireFoldExact(Generate(Tp8(Strategy::kOneFOneB, 1, 4)), p3, {}).fold_order == 2);
}

}  // namespace terasim

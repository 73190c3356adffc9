// RepresentativeTpSet's last resort (sim/simulator.h): where no tp rank stands for another but
// the data-parallel replicas are symmetric, replica 0 is generated whole (every tp rank) and
// folded by the replica shift alone, with the whole schedule's results.
#include <catch2/catch.hpp>

#include <vector>

#include "schedule/generator.h"
#include "sim/simulator.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fold_cases.h"

namespace terasim {
namespace {

// SimulateGenerated(options) == the whole schedule replayed unfolded: iteration time, per-device
// fractions and link busy times; its trace holds replica 0's rows alone (1 / dp of them).
void RequireReplicaFoldExact(const GenerateOptions& options, const NetworkTopology& topology,
                             SimOptions sim) {
  const testing::FakeCost cost(3, 5, 200);
  std::vector<int> all(options.tp);
  for (int r = 0; r < options.tp; ++r) all[r] = r;
  REQUIRE(RepresentativeTpSet(options, topology, cost, sim) == all);
  const SimResult folded = SimulateGenerated(options, topology, cost, sim);
  sim.fold = false;
  const Schedule whole = Generate(options);
  const SimResult full = Simulate(whole, topology, cost, sim);
  CHECK(folded.fold_order == options.dp);  // the replica shift alone
  CHECK(folded.trace.rows.size() * options.dp == whole.ops.size());
  REQUIRE(folded.iteration_time_ns == full.iteration_time_ns);
  REQUIRE(folded.devices.size() == full.devices.size());
  for (size_t d = 0; d < full.devices.size(); ++d) {
    INFO("device " << d);
    CHECK(folded.devices[d].compute_fraction == full.devices[d].compute_fraction);
    CHECK(folded.devices[d].comm_fraction == full.devices[d].comm_fraction);
    CHECK(folded.devices[d].idle_fraction == full.devices[d].idle_fraction);
  }
  REQUIRE(folded.links.size() == full.links.size());
  for (size_t l = 0; l < full.links.size(); ++l) {
    INFO(full.links[l].name);
    CHECK(folded.links[l].busy_ns == full.links[l].busy_ns);
    CHECK(folded.links[l].bytes == Approx(full.links[l].bytes).epsilon(1e-9));
  }
}

}  // namespace

TEST_CASE("GPUs sharing a switch unevenly keep every tp rank of replica 0, replicas folded") {
  // declared_fold_test.cpp's uneven switches: three of a node's four GPUs behind one switch,
  // the fourth behind another, so every tp rotation loads the switch uplinks unevenly and tp
  // rank 0 alone is refused; the 2 replicas (pp2 tp4 on two nodes each) still fold: replica
  // 0's 4 tp ranks simulated, fold order 2.
  const testing::SharedNicTopology uneven(4, {0, 0, 0, 1}, 2e9);
  for (Strategy strategy : {Strategy::kGpipe, Strategy::kOneFOneB, Strategy::kInterleaved}) {
    for (NetworkMode network : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
      INFO(StrategyName(strategy) << ", " << NetworkModeName(network) << " network");
      SimOptions sim;
      sim.network = network;
      RequireReplicaFoldExact(testing::FoldOptions(strategy, 2, 2, 4), uneven, sim);
    }
  }
}

TEST_CASE("without replicas or with a slow device the whole schedule runs") {
  const testing::FakeCost cost(3, 5, 200);
  const testing::SharedNicTopology uneven(4, {0, 0, 0, 1}, 2e9);
  // dp 1 (pp2 tp4): nothing to fold by the replica shift.
  CHECK(RepresentativeTpSet(testing::FoldOptions(Strategy::kOneFOneB, 1, 2, 4), uneven, cost, {})
            .empty());
  // A slow device of replica 1 breaks the replica shift too.
  SimOptions slow;
  slow.device_speed.assign(16, 1.0);
  slow.device_speed[11] = 1.25;
  CHECK(RepresentativeTpSet(testing::FoldOptions(Strategy::kOneFOneB, 2, 2, 4), uneven, cost, slow)
            .empty());
}

}  // namespace terasim

// One PlanCache per simulation (sim/plan_cache.h): a replay given plans and routes computed
// already gives the results of one planning and routing its own and plans and routes nothing
// again; SimulateGenerated hands its probe's plans and routes to its replay; and where the
// representatives' replay throws, SimulateGenerated throws what Simulate of the named schedule
// does.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "models/errors.h"
#include "schedule/generator.h"
#include "sim/cluster_topology.h"
#include "sim/plan_cache.h"
#include "sim/replay.h"
#include "sim/simulator.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fold_cases.h"
#include "topologies/cluster.h"

namespace terasim {
namespace {

struct Outcome {
  TimeNs end_ns = 0;
  int64_t events = 0;
  int64_t flows = 0;
  int64_t closed_form_phases = 0;
};

Outcome Run(const Schedule& schedule, const NetworkTopology& topology,
            const std::shared_ptr<PlanCache>& plans) {
  const testing::FakeCost cost(3, 5, 200);
  ReplayOptions options;
  options.fold = true;
  options.plans = plans;
  Replay replay(schedule, topology, cost, options);
  replay.Run();
  return {replay.EndNs(), replay.Events(), replay.Flows(), replay.ClosedFormPhases()};
}

// A cost model that refuses the optimizer step (as a model without the figures would: an
// InputError from inside the replay) and counts the works it was asked.
class RefusingCost : public testing::FakeCost {
 public:
  RefusingCost() : FakeCost(3, 5, 200) {}
  TimeNs Time(const SliceWork& work) const override {
    ++asked_;
    if (work.pass == Pass::kOptimizer) ThrowInput("refusing cost: no optimizer time");
    return FakeCost::Time(work);
  }
  int Asked() const { return asked_; }

 private:
  mutable int asked_ = 0;
};

}  // namespace

TEST_CASE("a replay given a shared PlanCache gives its own planning's results, planning nothing") {
  const Cluster p3 = BuildCluster("p3.16xlarge:2");
  const ClusterTopology topology(p3);
  for (Strategy strategy : {Strategy::kTeraPipe, Strategy::kOneFOneB}) {
    INFO(StrategyName(strategy));
    const Schedule schedule = Generate(testing::FoldOptions(strategy, 2, 2, 4));
    const Outcome own = Run(schedule, topology, nullptr);
    const auto plans = std::make_shared<PlanCache>(topology, CollectiveOptions{});
    const Outcome first = Run(schedule, topology, plans);
    const int planned = plans->Plans();
    const int routed = plans->Routes().Size();
    CHECK(planned > 0);  // tp all-reduces and dp gradient all-reduces
    CHECK(routed > 0);   // the replay's routes are the cache's (PlanCache::Routes)
    const Outcome second = Run(schedule, topology, plans);
    CHECK(plans->Plans() == planned);         // every plan the second replay needed was there
    CHECK(plans->Routes().Size() == routed);  // and every route
    // Routes computed before the replay, as SimulateGenerated's probe does (every pair here,
    // in another order than the replay's): the same results, and no route computed again.
    const auto routes_first = std::make_shared<PlanCache>(topology, CollectiveOptions{});
    const int gpus = topology.NumGpus();
    for (int src = gpus - 1; src >= 0; --src) {
      for (int dst = 0; dst < gpus; ++dst) routes_first->Routes().Get(src, dst);
    }
    const Outcome prerouted = Run(schedule, topology, routes_first);
    CHECK(routes_first->Routes().Size() == gpus * gpus);
    for (const Outcome& shared : {first, second, prerouted}) {
      CHECK(shared.end_ns == own.end_ns);
      CHECK(shared.events == own.events);
      CHECK(shared.flows == own.flows);
      CHECK(shared.closed_form_phases == own.closed_form_phases);
    }
  }
}

// Its plans and routes (PlanCache::Routes) are another topology's: refused, not used.
TEST_CASE("a replay refuses a PlanCache of another topology") {
  const Cluster p3 = BuildCluster("p3.16xlarge:2");
  const ClusterTopology topology(p3);
  const ClusterTopology other(p3);
  const Schedule schedule = Generate(testing::FoldOptions(Strategy::kOneFOneB, 2, 2, 4));
  REQUIRE_THROWS_AS(
      Run(schedule, topology, std::make_shared<PlanCache>(other, CollectiveOptions{})),
      InternalError);
}

TEST_CASE("SimulateGenerated throws what Simulate of the named schedule throws") {
  const testing::FakeTopology topology = testing::TwoNodes();
  const GenerateOptions gen = testing::FoldOptions(Strategy::kOneFOneB, 2, 2, 2);
  const SimOptions sim;
  const RefusingCost named_cost;
  const Schedule reps = GenerateForSimulation(gen, topology, named_cost, sim);
  REQUIRE(reps.symmetry.representatives_only);  // the representatives-only path is taken
  std::string named_message;
  try {
    Simulate(reps, topology, named_cost, sim);
  } catch (const InputError& e) {
    named_message = e.what();
  }
  REQUIRE(named_message.find("no optimizer time") != std::string::npos);
  const RefusingCost generated_cost;
  std::string generated_message;
  try {
    SimulateGenerated(gen, topology, generated_cost, sim);
  } catch (const InputError& e) {
    generated_message = e.what();
  }
  CHECK(generated_message == named_message);
  // The representatives' replay (keys apart) threw, then the named schedule's replay threw the
  // message: two replays, each asking the works up to the optimizer's.
  CHECK(generated_cost.Asked() == 2 * named_cost.Asked());
}

}  // namespace terasim

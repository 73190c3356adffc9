// The strategy search's lower bounds (schedule/strategy_search.h) against the simulator: with
// the network terms of tools/planning_context (SetNetworkBounds), every candidate's bound must
// not exceed its replayed iteration time, or the search would prune a candidate that wins.
#include <algorithm>

#include <catch2/catch.hpp>

#include "schedule/strategy_search.h"
#include "sim/simulator.h"
#include "tools/planning_context.h"

using namespace terasim;
using namespace terasim::cli;

namespace {

// Replays the candidates of every family that fit, up to `per_family` of each in ascending bound
// order (the callback returns a time no bound reaches, so nothing is pruned by the bound), and
// checks bound <= replay. Returns how many were replayed.
int CheckBounds(const std::string& model, const std::string& cluster, int batch,
                NetworkMode network, int per_family,
                const std::vector<Family>& families = AllFamilies()) {
  PlanningInputs inputs;
  inputs.model = model;
  inputs.cluster = cluster;
  inputs.network = network;
  PlanningContext context(inputs);
  SearchRequest request;
  request.batch = batch;
  request.max_evaluations_per_family = per_family;
  request.families = families;
  context.SetNetworkBounds(request);
  StrategySearch search(context.model(), context.cluster(), context.device(), context.cost());
  int replayed = 0;
  search.Run(request, [&](const Candidate& c, const Schedule& schedule) {
    const double seconds = NsToSeconds(context.Evaluate(schedule).iteration_time_ns);
    INFO(FamilyName(c.family) << " " << DegreesText(c.options) << " " << c.options.microbatches
                              << " x " << c.options.microbatch_size << " v"
                              << c.options.virtual_stages << " " << RecipeText(c.options)
                              << ": bound " << c.bound_s << " s, replay " << seconds << " s");
    CHECK(c.bound_s <= seconds);
    CHECK(c.bound_s > 0);
    ++replayed;
    return 1e9;
  });
  return replayed;
}

// gpt3-1b on two p3.16xlarge nodes, batch 8, with the network bounds of `network`'s context.
struct TwoNodes {
  explicit TwoNodes(NetworkMode network)
      : context(Inputs(network)),
        search(context.model(), context.cluster(), context.device(), context.cost()) {
    request.batch = 8;
    context.SetNetworkBounds(request);
  }
  static PlanningInputs Inputs(NetworkMode network) {
    PlanningInputs inputs;
    inputs.model = "gpt3-1b";
    inputs.cluster = "p3.16xlarge:2";
    inputs.network = network;
    return inputs;
  }
  PlanningContext context;
  SearchRequest request;
  StrategySearch search;
};

}  // namespace

TEST_CASE("The search's lower bounds never exceed the flow replay", "[search][bounds]") {
  // 16 V100s on two nodes (the pipeline crosses the network between them), gpt3-1b's 24
  // layers: P = 16 leaves stages of 1 and 2 layers (the fill scaled by floor / ceil). The first
  // 8 of each family by bound.
  CHECK(CheckBounds("gpt3-1b", "p3.16xlarge:2", 8, NetworkMode::kFlow, 8) > 20);
}

TEST_CASE("The search's lower bounds never exceed the analytic replay", "[search][bounds]") {
  // 24 A100s on three nodes: D x P x T with P = 3, 6, 12, 24 over 24 layers, ZeRO over D. The
  // first 8 of each family (as in the flow case): all of them take minutes under ASan.
  CHECK(CheckBounds("gpt3-1b", "p4d.24xlarge:3", 12, NetworkMode::kAnalytic, 8) > 20);
}

TEST_CASE("The search's lower bounds never exceed the replay on A100 nodes with NVSwitch",
          "[search][bounds]") {
  // 32 A100s on four p4d nodes (NVSwitch inside, EFA between): megatron's recipe (T = 8 with
  // sequence parallelism, ZeRO-1 over D = 2 or 4, interleaved chunks), where the pipeline's
  // replay (PipelineTimesOf) and the distributed optimizer's tail (PipelineTailNs) bring the
  // bounds within a few per cent of the replays. The first 4 of each micro-batch family
  // (terapipe's bound is the slicing planner's, not replayed here).
  std::vector<Family> families = AllFamilies();
  families.erase(std::find(families.begin(), families.end(), Family::kTeraPipe));
  CHECK(CheckBounds("gpt3-1b", "p4d.24xlarge:4", 32, NetworkMode::kFlow, 4, families) >= 28);
}

TEST_CASE("The search's bounds of megatron's interleaved candidates come near their replays",
          "[search][bounds]") {
  // gpt3-1b on p4d.24xlarge:4, batch 32: megatron's first candidates by bound (2x2x8, 4 x 4,
  // V = 3..7, sp, selective recomputation, ZeRO-1). The rank's M V chunk steps in series gave
  // 0.250 s against a replay of 0.288 s (87 %); with every rank's order replayed at its steps'
  // lower bounds (the first micro-batch's trip through the 2 V virtual stages and back, each
  // rank's waits) and the V chunks' ZeRO-1 all-gathers after the last OPTIMIZER (the dp
  // stream runs them one after another), 0.283 s (98 %).
  PlanningInputs inputs;
  inputs.model = "gpt3-1b";
  inputs.cluster = "p4d.24xlarge:4";
  PlanningContext context(inputs);
  SearchRequest request;
  request.batch = 32;
  context.SetNetworkBounds(request);
  StrategySearch search(context.model(), context.cluster(), context.device(), context.cost());
  std::vector<Candidate> candidates = search.Enumerate(Family::kMegatron, request);
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.bound_s < b.bound_s; });
  int checked = 0;
  for (const Candidate& c : candidates) {
    if (!c.analytic_fits || c.options.dp != 2 || c.options.virtual_stages < 2) continue;
    const double seconds = NsToSeconds(context.Evaluate(Generate(c.options)).iteration_time_ns);
    INFO(DegreesText(c.options) << " " << c.options.microbatches << " x "
                                << c.options.microbatch_size << " v" << c.options.virtual_stages
                                << " " << RecipeText(c.options) << ": bound " << c.bound_s
                                << " s, replay " << seconds << " s");
    CHECK(c.bound_s <= seconds);
    CHECK(c.bound_s >= 0.95 * seconds);
    if (++checked == 3) break;
  }
  CHECK(checked == 3);
}

TEST_CASE("The search's lower bounds hold for ZeRO-1 and 2 steps sharing a node's links",
          "[search][bounds]") {
  // D = 2 replicas on two nodes (GPU d P T + p T + t): every tp rank's dp group crosses the
  // network, the T tp ranks of a stage share their node's links (busiest_link_ns), and with
  // V >= 2 each chunk's step follows its own last backward (ChunkStepsNs). Each family's first
  // candidates with 2 replicas, replayed as they are and with ZeRO-0 / 1 / 2 recipes.
  for (NetworkMode network : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
    TwoNodes two(network);
    PlanningContext& context = two.context;
    SearchRequest& request = two.request;
    StrategySearch& search = two.search;
    int replayed = 0;
    for (Family family : {Family::kOneFOneB, Family::kInterleaved, Family::kInterleavedZb,
                          Family::kZbV, Family::kGpipe}) {
      int taken = 0;
      for (const Candidate& base : search.Enumerate(family, request)) {
        if (base.options.dp != 2 || base.options.tp < 2 || taken == 2) continue;
        ++taken;
        for (int zero : {0, 1, 2}) {
          Candidate c = base;
          c.options.zero = zero;
          c.options.recompute = Recompute::kNone;
          REQUIRE(search.Estimate(c, request));
          const double seconds =
              NsToSeconds(context.Evaluate(Generate(c.options)).iteration_time_ns);
          INFO(NetworkModeName(network)
               << " " << FamilyName(family) << " " << DegreesText(c.options) << " "
               << c.options.microbatches << " x " << c.options.microbatch_size << " v"
               << c.options.virtual_stages << " " << RecipeText(c.options) << ": bound "
               << c.bound_s << " s, replay " << seconds << " s");
          CHECK(c.bound_s <= seconds);
          ++replayed;
        }
      }
    }
    CHECK(replayed >= 24);
  }
}

TEST_CASE("The search's bound carries the first rank's whole data-parallel step",
          "[search][bounds]") {
  // ChunkStepsNs: every gradient of the first pipeline rank's layers leaves over its dp groups
  // after the backward that produced it, so the bound of a candidate with D >= 2 (ZeRO 0-2) is
  // at least the busiest link's time for all of them (its T tp ranks' steps of every layer of
  // its chunks, StageLayers), on top of the rank's M forwards of the first stage at least.
  TwoNodes two(NetworkMode::kFlow);
  const PlanningContext& context = two.context;
  SearchRequest& request = two.request;
  int checked = 0;
  for (Family family : {Family::kOneFOneB, Family::kGpipe, Family::kInterleaved}) {
    for (const Candidate& c : two.search.Enumerate(family, request)) {
      const GenerateOptions& o = c.options;
      if (o.dp < 2 || o.zero == 3) continue;
      const std::vector<Range> layers = StageLayers(context.model().layers, o.pp, o.virtual_stages);
      std::vector<CollectiveLoad> loads;
      for (int chunk = 0; chunk < o.virtual_stages; ++chunk) {
        const Bytes bytes = 2 * static_cast<Bytes>(layers[chunk * o.pp].Length()) *
                            context.model().ParamsPerLayer() / o.tp;
        for (int t = 0; t < o.tp; ++t) {
          std::vector<int> group;
          for (int d = 0; d < o.dp; ++d) group.push_back(d * o.pp * o.tp + t);
          if (o.zero == 0) {
            loads.push_back({OpKind::kAllReduce, group, bytes, 1});
          } else {
            loads.push_back({OpKind::kReduceScatter, group, bytes, 1});
            loads.push_back({OpKind::kAllGather, group, bytes, 1});
          }
        }
      }
      const double step_s = request.busiest_link_ns(loads) / 1e9;
      INFO(FamilyName(family) << " " << DegreesText(o) << " " << o.microbatches << " x "
                              << o.microbatch_size << " v" << o.virtual_stages << " "
                              << RecipeText(o) << ": bound " << c.bound_s << " s, dp step "
                              << step_s << " s");
      CHECK(c.bound_s > step_s);
      ++checked;
    }
  }
  CHECK(checked > 10);
}

TEST_CASE("The search's pipeline replay bound holds for every order, recipe and dp step",
          "[search][bounds]") {
  // PipelineTimesOf replays every pipeline rank's order at its steps' lower bounds and
  // PipelineTailNs adds the generator's dp steps and OPTIMIZERs after the first rank's last
  // step: per order (1F1B, ZB-H1 / H2, interleaved over V chunks, interleaved zero bubble, the
  // V placements, GPipe's flush), recomputation (full recomputation's RECOMPUTE ops run before
  // the gradient arrives), sequence parallelism (ARSP), ZeRO-0 / 1 / 2 and each dp step
  // (ZeRO-1 / 2 turn bucketed into per stage: every ALLGATHER after the last OPTIMIZER). Each
  // family's first candidate with 2 replicas and T >= 2, replayed under six recipes.
  struct Recipe {
    Recompute recompute;
    bool sp;
    int zero;
    DpStep step;
  };
  const std::vector<Recipe> recipes = {
      {Recompute::kNone, false, 1, DpStep::kBucketed},
      {Recompute::kSelective, true, 1, DpStep::kAuto},
      {Recompute::kFull, true, 2, DpStep::kPerStage},
      {Recompute::kNone, true, 0, DpStep::kFlattened},
      {Recompute::kSelective, false, 0, DpStep::kPerStage},
      {Recompute::kFull, false, 0, DpStep::kBucketed},
  };
  for (NetworkMode network : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
    TwoNodes two(network);
    int replayed = 0;
    for (Family family :
         {Family::kGpipe, Family::kOneFOneB, Family::kZeroBubble, Family::kInterleaved,
          Family::kInterleavedZb, Family::kZbV, Family::kDualPipeV}) {
      int taken = 0;
      for (const Candidate& base : two.search.Enumerate(family, two.request)) {
        if (base.options.dp != 2 || base.options.tp < 2 || taken == 1) continue;
        ++taken;
        for (const Recipe& recipe : recipes) {
          Candidate c = base;
          c.options.recompute = recipe.recompute;
          c.options.sequence_parallel = recipe.sp;
          if (recipe.sp) c.options.boundary = Boundary::kPointToPoint;
          c.options.zero = recipe.zero;
          c.options.dp_step = recipe.step;
          REQUIRE(two.search.Estimate(c, two.request));
          const double seconds =
              NsToSeconds(two.context.Evaluate(Generate(c.options)).iteration_time_ns);
          INFO(NetworkModeName(network)
               << " " << FamilyName(family) << " " << DegreesText(c.options) << " "
               << c.options.microbatches << " x " << c.options.microbatch_size << " v"
               << c.options.virtual_stages << " " << RecipeText(c.options) << " "
               << DpStepName(ResolvedDpStep(c.options)) << ": bound " << c.bound_s << " s, replay "
               << seconds << " s");
          CHECK(c.bound_s <= seconds);
          ++replayed;
        }
      }
    }
    CHECK(replayed >= 7 * 6);
  }
}

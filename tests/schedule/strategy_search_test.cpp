#include <catch2/catch.hpp>

#include <set>

#include "models/device_spec.h"
#include "models/errors.h"
#include "models/roofline_cost.h"
#include "schedule/checker.h"
#include "schedule/slicing_spec.h"
#include "schedule/stage_cost.h"
#include "schedule/strategy_search.h"
#include "topologies/topology.h"

using namespace terasim;

namespace {

struct Setup {
  ModelCard model;
  Cluster cluster;
  DeviceSpec device;
  RooflineCostModel cost;
  Setup(const std::string& m, const std::string& c)
      : model(LoadModelCard(m)),
        cluster(BuildCluster(c)),
        device(LoadDeviceSpec(cluster.Instance().device)),
        cost(model, device) {}
};

}  // namespace

TEST_CASE("StageCost sums the stage's compute and its transfers", "[schedule][search]") {
  Setup s("gpt3-1b", "p3.16xlarge:2");
  // One stage of the whole model on one GPU: forward + backward of 24 layers, no transfers.
  StageCost whole(s.model, s.cost, s.cluster, {1, 1, Boundary::kPointToPoint});
  SliceWork fwd{Pass::kForward, 24, Block::kWhole, 1, 256, 512, 1};
  SliceWork bwd = fwd;
  bwd.pass = Pass::kBackward;
  CHECK(whole.ComputeNs(1, 256, 512) == Approx(s.cost.Time(fwd) + s.cost.Time(bwd)));
  CHECK(whole.CommunicationNs(1, 256) == 0);

  // Four stages of 6 layers, tp 4: stage boundaries cross nodes between GPU 4 and GPU 8...
  // operator-innermost ranks put stage s on GPUs 4s..4s+3, so 1 -> 2 crosses the network.
  StageCost split(s.model, s.cost, s.cluster, {4, 4, Boundary::kPointToPoint});
  CHECK(split.LayersPerStage() == 6);
  // Compute: 6 layers x (attention + MLP blocks) forward and backward at tp 4.
  double expected = 0;
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (Block block : {Block::kAttention, Block::kMlp}) {
      expected += 6.0 * s.cost.Time({pass, 1, block, 2, 128, 0, 4});
    }
  }
  CHECK(split.ComputeNs(2, 128, 0) == Approx(expected));
  // Communication: 2 x the slowest boundary transfer (the network hop 4 -> 8) plus 4 all-reduces
  // per layer; it must exceed the boundary alone: 2 (alpha + n / B).
  const double n = 2.0 * 128 * s.model.hidden * 2;
  const double boundary =
      2 * (s.cluster.RouteLatencyNs(4, 8) + n / s.cluster.RouteBottleneckBytesPerS(4, 8) * 1e9);
  CHECK(split.CommunicationNs(2, 128) > boundary * 0.999);
  CHECK(split.UnitNs(2, 128, 0) ==
        Approx(split.ComputeNs(2, 128, 0) + split.CommunicationNs(2, 128)));
  CHECK_THROWS_AS(StageCost(s.model, s.cost, s.cluster, {32, 1, Boundary::kPointToPoint}),
                  InputError);
}

TEST_CASE("Enumerate uses every GPU with degrees that fit the model", "[schedule][search]") {
  Setup s("gpt3-1b", "p3.16xlarge:2");
  StrategySearch search(s.model, s.cluster, s.device, s.cost);
  SearchRequest request;
  request.batch = 4;
  request.recipes = false;  // the plain variants: the bounds below have no recomputation
  for (Family f : AllFamilies()) {
    for (const Candidate& c : search.Enumerate(f, request)) {
      const GenerateOptions& o = c.options;
      INFO(FamilyName(f) << " " << DegreesText(o));
      // D x P x T = 16 GPUs; D divides the batch; T divides the 16 heads and fits a node.
      CHECK(o.dp * o.pp * o.tp == 16);
      CHECK(4 % o.dp == 0);
      CHECK(o.tp <= 8);
      if (f == Family::kMegatron) {
        // Megatron-LM's recipe: a node of tensor parallelism with sequence parallelism,
        // selective recomputation, the distributed optimizer where D >= 2.
        CHECK(o.tp == 8);
        CHECK(o.sequence_parallel);
        CHECK(o.recompute == Recompute::kSelective);
        CHECK(o.zero == (o.dp > 1 ? 1 : 0));
        continue;  // its bound counts the recomputation (checked below)
      }
      if (f == Family::kInterleaved) {
        CHECK(o.virtual_stages >= 2);
        // PyTorch's rounds of M / floor(M / P) micro-batches, or one group of fewer than P.
        CHECK((o.microbatches % std::max(1, o.microbatches / o.pp) == 0));
      }
      if (f == Family::kTeraPipe) {
        CHECK_FALSE(c.slicing.empty());
      } else {
        // Micro-batch families: rows x micro-batches = the replica's share of the batch.
        CHECK(o.microbatches * o.microbatch_size * o.dp == 4);
        // The compute-only bound: (M + P - 1) steps (interleaved: (M V + P - 1) / V).
        StageCost stage(s.model, s.cost, s.cluster, {o.pp, o.tp, o.boundary});
        const double unit = stage.ComputeNs(o.microbatch_size, s.model.sequence, 0);
        double steps =
            o.virtual_stages == 1
                ? o.microbatches + o.pp - 1
                : (1.0 * o.microbatches * o.virtual_stages + o.pp - 1) / o.virtual_stages;
        // Zero bubble: M units and a third of each of the P - 1 fill steps.
        if (f == Family::kZeroBubble) steps = o.microbatches + (o.pp - 1) / 3.0;
        // Zero bubble over V chunks: a third of a chunk for each of the P - 1 fill steps.
        if (f == Family::kInterleavedZb || f == Family::kZbV || f == Family::kDualPipeV) {
          steps = o.microbatches + (o.pp - 1) / (3.0 * o.virtual_stages);
        }
        // Without the network callbacks the lower bound is compute only: M units of the first
        // (largest) stage and the fill steps on stages of floor(L / (P V)) layers (scaled by
        // floor / ceil), or one micro-batch's chain through the P ranks of floor-sized
        // stages (half of it with a split backward), whichever is longer; then the first
        // rank's last chunk's OPTIMIZER (floor(L / (P V)) layers of its tp shard). At least
        // that: the bound also replays every rank's order at its steps' lower bounds
        // (PipelineTimesOf; tests/tools/search_bounds_test.cpp checks it against replays).
        const int stages = o.pp * o.virtual_stages;
        const double scale = 1.0 * (24 / stages) / ((24 + stages - 1) / stages);
        const bool split = f == Family::kZeroBubble || f == Family::kInterleavedZb ||
                           f == Family::kZbV || f == Family::kDualPipeV;
        const double pipeline = o.microbatches * unit + (steps - o.microbatches) * unit * scale;
        const double chain = o.pp * unit * scale * (split ? 0.5 : 1.0);
        SliceWork opt{Pass::kOptimizer, 24 / stages, Block::kWhole, 1, 0, 0, o.tp};
        CHECK(c.bound_s >= Approx((std::max(pipeline, chain) + s.cost.Time(opt)) / 1e9));
      }
    }
  }
}

TEST_CASE("Run keeps each family's fastest fitting candidate", "[schedule][search]") {
  Setup s("gpt3-1b", "p3.16xlarge:2");
  StrategySearch search(s.model, s.cluster, s.device, s.cost);
  SearchRequest request;
  request.batch = 4;
  request.max_evaluations_per_family = 3;
  request.families = {Family::kOneFOneB, Family::kTeraPipe};
  // A fake simulator: the estimate itself, so the best is the smallest evaluated estimate.
  int calls = 0;
  auto results = search.Run(request, [&](const Candidate& c, const Schedule& schedule) {
    ++calls;
    CHECK(schedule.devices == 16);
    return c.estimate_s;
  });
  REQUIRE(results.size() == 2);
  for (const FamilyResult& r : results) {
    REQUIRE(r.found);
    int evaluated = 0;
    for (const Evaluation& e : r.tried) {
      if (!e.evaluated) continue;
      ++evaluated;
      CHECK(e.fits);
      CHECK(r.best.iteration_s <= e.iteration_s);
    }
    CHECK(evaluated >= 1);
    CHECK(evaluated <= 3);
  }
  CHECK(calls <= 6);
}

TEST_CASE("Run asks SearchRequest::fold once per generated candidate and generates its answer",
          "[schedule][search]") {
  Setup s("gpt3-1b", "p3.16xlarge:2");
  StrategySearch search(s.model, s.cluster, s.device, s.cost);
  SearchRequest request;
  request.batch = 4;
  request.max_evaluations_per_family = 3;
  request.families = {Family::kOneFOneB};
  request.recipes = false;       // one variant per candidate: no fallbacks to generate
  request.folded_above_ops = 0;  // every candidate goes through fold
  // The fold a simulator would declare: the candidate's own options without the OPTIMIZER ops,
  // standing for 2 devices each (so the op budget counts half the ops).
  int folds = 0;
  request.fold = [&folds](const GenerateOptions& o) {
    ++folds;
    FoldedGeneration f{o, 2};
    f.options.optimizer = false;
    return f;
  };
  int evaluations = 0;
  auto results = search.Run(request, [&](const Candidate& c, const Schedule& schedule) {
    ++evaluations;
    // The schedule generated is fold's: no OPTIMIZER op.
    for (const Op& op : schedule.ops) CHECK(op.kind != OpKind::kOptimizer);
    return c.estimate_s;
  });
  REQUIRE(results.size() == 1);
  int generated = 0;  // evaluated, generated and found over memory, or failed to generate
  for (const Evaluation& e : results[0].tried) {
    generated +=
        e.evaluated || !e.memory.devices.empty() || e.note.rfind("cannot generate", 0) == 0;
  }
  REQUIRE(evaluations >= 1);
  // One fold per candidate that passed the analytic memory test and was reached: those
  // generated, plus those left out by the op budget (none here: no max_ops).
  CHECK(folds == generated);
}

TEST_CASE("gpt3-175b with batch 2 on 48 nodes interleaves fewer micro-batches than stages",
          "[schedule][search]") {
  Setup s("gpt3-175b", "p3.16xlarge:48");
  StrategySearch search(s.model, s.cluster, s.device, s.cost);
  SearchRequest request;
  request.batch = 2;
  // M <= 2 while P >= 24 with every GPU used: one group of M < P. 384 GPUs, 96 layers,
  // T <= 8: (D, T, P) = (1, 8, 48) with V = 2, (2, 4, 48) with V = 2, (2, 8, 24) with
  // V = 2..4; D = 1 has M = 1 or 2, D = 2 has M = 1.
  const std::vector<Candidate> candidates = search.Enumerate(Family::kInterleaved, request);
  // (1 + 1 + 3) V choices for M = 1, plus (1, 8, 48) V = 2 with M = 2: 6 candidates.
  CHECK(candidates.size() == 6u);
  for (const Candidate& c : candidates) {
    INFO(DegreesText(c.options) << " v " << c.options.virtual_stages);
    CHECK(c.options.microbatches < c.options.pp);
    CHECK(c.options.virtual_stages >= 2);
    CHECK(c.options.pp * c.options.virtual_stages <= 96);
  }
  CHECK_THROWS_WITH(ParseFamily("pipedream"),
                    "--strategy: 'pipedream' must be one of gpipe, 1f1b, interleaved, "
                    "zero-bubble, megatron, terapipe, interleaved-zb, zb-v, dualpipe-v");
}

TEST_CASE("The search evaluates interleaved candidates with fewer micro-batches than stages",
          "[schedule][search]") {
  Setup s("gpt3-1b", "p3.16xlarge:1");
  StrategySearch search(s.model, s.cluster, s.device, s.cost);
  SearchRequest request;
  request.batch = 1;  // M = 1 on every candidate, so M < P wherever P >= 2
  request.max_evaluations_per_family = 2;
  request.families = {Family::kInterleaved};
  int calls = 0;
  auto results = search.Run(request, [&](const Candidate& c, const Schedule& schedule) {
    ++calls;
    // The schedule the search generated checks: no deadlock in the dry run.
    CHECK(CheckSchedule(schedule).empty());
    return c.estimate_s;
  });
  REQUIRE(results.size() == 1);
  REQUIRE(results[0].found);
  const GenerateOptions& best = results[0].best.candidate.options;
  // One micro-batch over P >= 2 stages of V >= 2 chunks.
  CHECK(best.microbatches == 1);
  CHECK(best.pp >= 2);
  CHECK(best.virtual_stages >= 2);
  CHECK(calls >= 1);
}

TEST_CASE("Interleaving without a pipeline of 2 P layers says why there is no configuration",
          "[schedule][search]") {
  // tiny: 4 layers, 4 heads; 16 GPUs with batch 1: D = 1, T <= 4, so P >= 4 and 2 P > 4.
  Setup s("tiny", "p3.16xlarge:2");
  StrategySearch search(s.model, s.cluster, s.device, s.cost);
  SearchRequest request;
  request.batch = 1;
  CHECK(search.Enumerate(Family::kInterleaved, request).empty());
  request.families = {Family::kInterleaved};
  auto results = search.Run(request, [](const Candidate&, const Schedule&) { return 1.0; });
  REQUIRE(results.size() == 1);
  CHECK_FALSE(results[0].found);
  CHECK(results[0].reason ==
        "no configuration: interleaving needs every GPU used with a pipeline degree P >= 2 and "
        "at least 2 P layers (batch 1)");
}

TEST_CASE("The search picks recomputation only where the cheaper variants do not fit",
          "[schedule][search]") {
  // gpt3-1b on one p4d node (8 x A100 40 GB), batch 8: everything fits without
  // recomputation, so no candidate of the plain families recomputes or shards (sequence
  // parallelism may be chosen: it costs nothing and its p2p boundary estimates cheaper).
  Setup small("gpt3-1b", "p4d.24xlarge:1");
  StrategySearch search(small.model, small.cluster, small.device, small.cost);
  SearchRequest request;
  request.batch = 8;
  for (const Candidate& c : search.Enumerate(Family::kOneFOneB, request)) {
    INFO(DegreesText(c.options) << " b " << c.options.microbatch_size);
    CHECK(c.analytic_fits);
    CHECK(c.options.recompute == Recompute::kNone);
    CHECK(c.options.zero == 0);
  }
  // gpt3-175b on 64 p4d nodes, batch 512: plain 1F1B does not fit at 1 x 8 x 8 with
  // micro-batch 1... every fitting candidate's recipe is the cheapest that fits: a
  // candidate with full recomputation has no fitting variant without it (checked against
  // AnalyticMemory of the same options with the recomputation dropped or made selective).
  Setup large("gpt3-175b", "p4d.24xlarge:64");
  StrategySearch big(large.model, large.cluster, large.device, large.cost);
  request.batch = 512;
  int fitting = 0, full = 0;
  for (const Candidate& c : big.Enumerate(Family::kOneFOneB, request)) {
    if (!c.analytic_fits) continue;
    ++fitting;
    if (c.options.recompute != Recompute::kFull) continue;
    ++full;
    for (Recompute cheaper : {Recompute::kNone, Recompute::kSelective}) {
      for (int zero = 0; zero <= (c.options.dp > 1 ? 3 : 0); ++zero) {
        for (bool sp : {false, true}) {
          if (sp && c.options.tp < 2) continue;
          GenerateOptions o = c.options;
          o.recompute = cheaper;
          o.zero = zero;
          o.sequence_parallel = sp;
          Candidate other = c;
          other.options = o;
          INFO(DegreesText(o) << " b " << o.microbatch_size << " " << RecipeText(o));
          // Cheaper in time (no ZeRO-3) means it would have been chosen had it fit.
          if (zero < 3) CHECK(AnalyticMemory(o).peak > large.device.CapacityBytes());
        }
      }
    }
  }
  CHECK(fitting > 0);
  CHECK(full > 0);
}

TEST_CASE("Analytic memory follows the formulas term by term", "[schedule][search]") {
  GenerateOptions o;
  o.model = LoadModelCard("gpt3-175b");
  o.strategy = Strategy::kOneFOneB;
  o.dp = 8;
  o.pp = 8;
  o.tp = 8;
  o.microbatches = 64;
  o.microbatch_size = 1;
  o.recompute = Recompute::kSelective;
  o.sequence_parallel = true;
  o.zero = 1;
  const int64_t s = 2048, h = 12288, layers = 12;
  const int64_t shard = LayerShardParams(o.model, 8, Block::kWhole);
  // State, ZeRO-1 over 8: 4 Psi + 12 ceil(Psi / 8), Psi = 12 layers' tp shard.
  const int64_t psi = layers * shard;
  const Bytes state = 4 * psi + 12 * ((psi + 7) / 8);
  // 1F1B's first stage: P = 8 micro-batches in flight x 12 layers x 34 s b h / t.
  const Bytes activations = 8 * layers * (34 * s * h / 8);
  // Two boundary tensors of 2 s b h.
  const Bytes boundary = 2 * 2 * s * h;
  const AnalyticMemoryResult r = AnalyticMemory(o);
  CHECK(r.peak == state + activations + boundary);
  CHECK(r.largest_term == "activations");
  CHECK(RecipeText(o) == "sp, selective recompute, ZeRO-1");
}

TEST_CASE("The search takes full recomputation exactly where only it fits", "[schedule][search]") {
  // gpt3-1b on one p4d node, 1F1B at D x P x T = 1 x 2 x 4 (12 layers a stage), micro-batch 8
  // (batch 8): the device's capacity set between the peaks of the variants (each recomputation
  // the smaller peak of with and without sequence parallelism). Recipes ascend in estimated
  // time none < selective < full (each adds recomputed work), so the search takes the first
  // that fits analytically.
  Setup s("gpt3-1b", "p4d.24xlarge:1");
  SearchRequest request;
  request.batch = 8;
  request.microbatch_size = 8;
  auto peak = [&](Recompute rc) {
    Bytes smallest = 0;
    for (bool sp : {false, true}) {
      GenerateOptions o;
      o.model = s.model;
      o.strategy = Strategy::kOneFOneB;
      o.pp = 2;
      o.tp = 4;
      o.microbatches = 1;
      o.microbatch_size = 8;
      o.recompute = rc;
      o.sequence_parallel = sp;
      const Bytes p = AnalyticMemory(o).peak;
      if (smallest == 0 || p < smallest) smallest = p;
    }
    return smallest;
  };
  const Bytes none = peak(Recompute::kNone), selective = peak(Recompute::kSelective),
              full = peak(Recompute::kFull);
  REQUIRE(full < selective);
  REQUIRE(selective < none);
  auto chosen = [&](Bytes capacity) {
    DeviceSpec device = s.device;
    device.memory_reserve_bytes = 0;
    device.memory_bytes = capacity;
    StrategySearch search(s.model, s.cluster, device, s.cost);
    for (const Candidate& c : search.Enumerate(Family::kOneFOneB, request)) {
      if (c.options.dp == 1 && c.options.pp == 2 && c.options.tp == 4) return c;
    }
    FAIL("no 1 x 2 x 4 candidate");
    return Candidate{};
  };
  // Everything fits: no recomputation.
  CHECK(chosen(none).options.recompute == Recompute::kNone);
  // Between selective and none: selective (the cheaper recomputation).
  CHECK(chosen((selective + none) / 2).options.recompute == Recompute::kSelective);
  // Only full fits: full.
  const Candidate only_full = chosen((full + selective) / 2);
  CHECK(only_full.options.recompute == Recompute::kFull);
  CHECK(only_full.analytic_fits);
  // Nothing fits: the smallest peak is kept to say why.
  const Candidate none_fits = chosen(full - 1);
  CHECK_FALSE(none_fits.analytic_fits);
  CHECK(none_fits.options.recompute == Recompute::kFull);
}

TEST_CASE("EstimateOps is close to the generated schedule's op count", "[schedule][search]") {
  Setup s("gpt3-1b", "p3.16xlarge:2");
  struct Shape {
    Strategy strategy;
    int dp, pp, tp, m, v, zero;
    bool sp;
  };
  // Counted per device: M V chunk units of (passes x parts x (1 + collectives)) ops per layer
  // with tp or ZeRO-3 (one op per pass otherwise), 4 boundary ops, and a few per-stage ops.
  for (const Shape& shape : {Shape{Strategy::kOneFOneB, 2, 4, 2, 4, 1, 0, false},
                             Shape{Strategy::kGpipe, 1, 16, 1, 8, 1, 0, false},
                             Shape{Strategy::kInterleaved, 1, 4, 4, 4, 2, 0, true},
                             Shape{Strategy::kZbH1, 2, 8, 1, 8, 1, 1, false},
                             Shape{Strategy::kOneFOneB, 4, 2, 2, 2, 1, 3, false}}) {
    GenerateOptions o;
    o.model = s.model;
    o.strategy = shape.strategy;
    o.dp = shape.dp;
    o.pp = shape.pp;
    o.tp = shape.tp;
    o.microbatches = shape.m;
    o.virtual_stages = shape.v;
    o.zero = shape.zero;
    o.sequence_parallel = shape.sp;
    if (shape.sp) o.boundary = Boundary::kPointToPoint;
    const double generated = static_cast<double>(Generate(o).ops.size());
    const double estimated = static_cast<double>(EstimateOps(o, o.microbatches));
    INFO(StrategyName(o.strategy) << " " << DegreesText(o) << " generated " << generated
                                  << " estimated " << estimated);
    CHECK(estimated > 0.7 * generated);
    CHECK(estimated < 1.4 * generated);
  }
}

TEST_CASE("The ZeRO-3 estimate moves each of a device's layers once per micro-batch, any V",
          "[schedule][search]") {
  Setup s("gpt3-1b", "p3.16xlarge:2");
  StrategySearch search(s.model, s.cluster, s.device, s.cost);
  SearchRequest request;
  request.batch = 8;
  int checked = 0;
  for (const Candidate& c : search.Enumerate(Family::kInterleaved, request)) {
    const GenerateOptions& o = c.options;
    if (o.dp < 2 || o.virtual_stages < 2) continue;
    INFO(DegreesText(o) << " v " << o.virtual_stages);
    Candidate plain = c, zero3 = c;
    plain.options.zero = 0;
    zero3.options.zero = 3;
    REQUIRE(search.Estimate(plain, request));
    REQUIRE(search.Estimate(zero3, request));
    // Per micro-batch the device's ceil(L / P) layers (all of its V chunks together) are
    // all-gathered forward and backward and reduce-scattered: 3 (D - 1) / D of 2 bytes per
    // parameter of the tp shard over the dp route. V does not multiply it.
    const int layers = (s.model.layers + o.pp - 1) / o.pp;
    const double bytes =
        2.0 * layers * static_cast<double>(LayerShardParams(s.model, o.tp, Block::kWhole));
    const double bw = s.cluster.RouteBottleneckBytesPerS(0, o.pp * o.tp);
    const double expected = o.microbatches * 3.0 * (o.dp - 1) / o.dp * bytes / bw;
    CHECK(zero3.estimate_s - plain.estimate_s == Approx(expected).epsilon(1e-9));
    ++checked;
  }
  CHECK(checked > 0);
}

TEST_CASE("TeraPipe's memory lower bound never exceeds the generated schedule's estimate",
          "[schedule][search]") {
  // The search rejects a terapipe candidate on TeraPipeMemoryLowerBound without generating it,
  // so the bound must not exceed EstimateMemory's peak of the first device (stage 0, tp rank
  // 0); in flush order it is that peak less the boundary buffers (the bound leaves them out).
  // Without a slicing it is the least any slicing keeps: at most the planned slicing's bound.
  Setup s("gpt3-1b", "p3.16xlarge:1");
  struct Case {
    int dp, pp, tp;
    const char* slicing;
  };
  for (const Case& k : {Case{1, 1, 1, "1:[2048]"}, Case{1, 2, 4, "1:[1024,512,512]x2"},
                        Case{2, 4, 1, "2:[512,512,1024]"}, Case{1, 4, 2, "1:[1536,512]+2:[2048]"},
                        Case{1, 8, 1, "1:[256,256,256,256,256,256,256,256]x2"}}) {
    GenerateOptions o;
    o.model = s.model;
    o.strategy = Strategy::kTeraPipe;
    o.order = SliceOrder::kFlush;
    o.dp = k.dp;
    o.pp = k.pp;
    o.tp = k.tp;
    o.slicing = ParseSlicingSpec(k.slicing);
    int rows = 0;
    for (const MicrobatchSlices& mb : ReplicaMicrobatches(o)) rows += mb.rows;
    const MemoryEstimate exact = EstimateMemory(Generate(o), s.model, s.device);
    const DeviceMemory& first = exact.devices.front();
    const AnalyticMemoryResult bound = TeraPipeMemoryLowerBound(o, rows);
    INFO(DegreesText(o) << " " << k.slicing << ": bound " << bound.peak << ", exact " << first.peak
                        << ", boundary " << first.boundary);
    CHECK(bound.peak <= first.peak);
    CHECK(bound.peak == first.peak - first.boundary);
    GenerateOptions any = o;
    any.slicing.clear();
    const AnalyticMemoryResult least = TeraPipeMemoryLowerBound(any, rows);
    CHECK(least.peak <= bound.peak);
    // Above the training state alone: the activations of `rows` sequences count.
    CHECK(least.peak > TeraPipeMemoryLowerBound(
                           [&] {
                             GenerateOptions none = any;
                             none.order = SliceOrder::kOneFOneB;
                             return none;
                           }(),
                           rows)
                           .peak);
  }
}

// terasim plan: the TeraPipe slicing DP for one pipeline shape (--pp given), or the strategy
// search over every family's configurations ranked by simulated iteration time.
#include <chrono>
#include <iostream>
#include <vector>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/limits.h"
#include "schedule/slicing_planner.h"
#include "schedule/slicing_spec.h"
#include "schedule/stage_cost.h"
#include "schedule/strategy_search.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/planning_context.h"
#include "tools/schedule_flags.h"

namespace terasim::cli {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

nlohmann::json EvaluationJson(const Evaluation& e) {
  const GenerateOptions& o = e.candidate.options;
  nlohmann::json j = {{"family", FamilyName(e.candidate.family)},
                      {"dp", o.dp},
                      {"pp", o.pp},
                      {"tp", o.tp},
                      {"microbatches", e.candidate.units},
                      {"microbatch_size", o.microbatch_size},
                      {"virtual_stages", o.virtual_stages},
                      {"slicing", e.candidate.slicing},
                      {"estimate_s", e.candidate.estimate_s},
                      {"fits", e.fits},
                      {"evaluated", e.evaluated}};
  if (e.evaluated) j["iteration_time_s"] = e.iteration_s;
  if (e.fits || e.memory.peak_bytes > 0) j["peak_memory_bytes"] = e.memory.peak_bytes;
  if (!e.note.empty()) j["note"] = e.note;
  return j;
}

}  // namespace

int RunPlan(const Args& args) {
  po::options_description options("terasim plan");
  // clang-format off
  options.add_options()
      ("model", po::value<std::string>()->default_value("gpt3-175b"), "model card name or path")
      ("cluster", po::value<std::string>()->default_value("p3.16xlarge:48"), "INSTANCE:COUNT")
      ("batch", po::value<int>()->default_value(2),
       "global batch (sequences; alias --global-batch-size)")
      ("strategy", po::value<std::string>()->default_value("all"),
       "family to search: gpipe | 1f1b | interleaved | zero-bubble | megatron | terapipe | "
       "interleaved-zb | zb-v | dualpipe-v | all")
      ("microbatch-size", po::value<int>()->default_value(0, "search"),
       "sequences per micro-batch: with --pp, every micro-batch of the slicing plan; without, "
       "the micro-batch families' candidates (the terapipe search picks its own split) (alias "
       "--micro-batch-size)")
      ("granularity", po::value<int>()->default_value(8), "token granularity of the slicing DP")
      ("pp", po::value<int>()->default_value(0, "search"),
       "plan only the token slicing of this pipeline degree (with --tp, --dp; alias "
       "--pipeline-model-parallel-size)")
      ("tp", po::value<int>()->default_value(1),
       "with --pp: tensor-parallel degree (alias --tensor-model-parallel-size)")
      ("dp", po::value<int>()->default_value(0, "GPUs / (pp x tp)"),
       "with --pp: data-parallel degree")
      ("boundary", po::value<std::string>()->default_value("broadcast"), "with --pp: p2p | broadcast")
      ("network", po::value<std::string>()->default_value("flow"), "flow | analytic (search)")
      ("max-evaluations", po::value<int>()->default_value(6), "simulations per family at most")
      ("json", po::bool_switch(), "print JSON");
  // clang-format on
  AddDpStepOptions(options);
  AddJobsOption(options);
  po::variables_map vm;
  if (!Parse("plan",
             "[--model M] [--cluster C] [--batch B] [--strategy S] [--pp P --tp T] [--json]",
             options, {}, args, vm)) {
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  PlanningInputs inputs;
  inputs.model = vm["model"].as<std::string>();
  inputs.cluster = vm["cluster"].as<std::string>();
  inputs.network = ParseNetworkMode(vm["network"].as<std::string>());
  PlanningContext context(inputs);
  const int batch = vm["batch"].as<int>();
  if (batch < 1 || batch > limits::kMaxBatch) {
    ThrowInput("--batch {}: must be in [1, {}] (kMaxBatch, models/limits.h)", batch,
               limits::kMaxBatch);
  }
  const int granularity = vm["granularity"].as<int>();
  const bool json = vm["json"].as<bool>();
  const int microbatch_size = vm["microbatch-size"].as<int>();
  if (microbatch_size < 0) ThrowInput("--microbatch-size {}: must be >= 1", microbatch_size);
  const std::string strategy = vm["strategy"].as<std::string>();

  if (vm["pp"].as<int>() > 0) {
    if (strategy != "all" && strategy != "terapipe") {
      ThrowInput(
          "--strategy {}: with --pp, plan runs only the TeraPipe slicing DP; leave out --pp to "
          "search {}",
          strategy, strategy);
    }
    // The slicing DP alone, for one shape.
    StageShape shape{vm["pp"].as<int>(), vm["tp"].as<int>(),
                     ParseBoundary(vm["boundary"].as<std::string>())};
    const int dp = DataParallelDegree("plan", vm["dp"].as<int>(), context.cluster().NumGpus(),
                                      shape.pp, shape.tp);
    if (batch % dp != 0) ThrowInput("dp {} does not divide --batch {}", dp, batch);
    const int replica = batch / dp;
    // --microbatch-size fixes every micro-batch's rows; otherwise the DP chooses the split
    // (DESIGN.md section 3: a knapsack over micro-batch sizes).
    std::vector<int> sizes;
    if (microbatch_size > 0) {
      if (replica % microbatch_size != 0) {
        ThrowInput(
            "--microbatch-size {}: must divide the {} sequences of each of the dp {} replicas "
            "(--batch {})",
            microbatch_size, replica, dp, batch);
      }
      sizes = {microbatch_size};
    }
    StageCost stage(context.model(), context.cost(), context.cluster(), shape);
    const auto plan_start = std::chrono::steady_clock::now();
    SlicingPlan plan =
        PlanSlicing({context.model().sequence, shape.pp, replica, granularity, sizes, false},
                    stage.AsSliceCost());
    const double plan_time = SecondsSince(plan_start);
    const std::string spec = FormatSlicingSpec(FoldPlan(plan.microbatches));
    if (json) {
      PrintJson({{"model", context.model().name},
                 {"cluster", context.cluster().Spec()},
                 {"dp", dp},
                 {"pp", shape.pp},
                 {"tp", shape.tp},
                 {"batch", batch},
                 {"granularity", granularity},
                 {"slicing", spec},
                 {"estimate_s", plan.latency / 1e9},
                 {"sum_s", plan.sum / 1e9},
                 {"max_unit_s", plan.max / 1e9},
                 {"bounds_tried", plan.bounds_tried},
                 {"plan_time_s", plan_time}});
    } else {
      std::cout << fmt::format(
          "{} on {} ({}x{}x{}, batch {}, granularity {}):\n  slicing   {}\n"
          "  estimate  {:.4f} s = sum {:.4f} s + ({} - 1) x max {:.4f} s\n"
          "  planned   in {:.3f} s ({} bounds)\n",
          context.model().name, context.cluster().Spec(), dp, shape.pp, shape.tp, batch,
          granularity, spec, plan.latency / 1e9, plan.sum / 1e9, shape.pp, plan.max / 1e9,
          plan_time, plan.bounds_tried);
    }
    return 0;
  }

  SearchRequest request;
  request.batch = batch;
  request.granularity = granularity;
  request.max_evaluations_per_family = vm["max-evaluations"].as<int>();
  request.microbatch_size = microbatch_size;
  GenerateOptions dp_step;  // --dp-step, --dp-bucket-mb
  ReadRecipeFlags(vm, dp_step);
  request.dp_step = dp_step.dp_step;
  request.dp_bucket_bytes = dp_step.dp_bucket_bytes;
  if (strategy != "all") request.families = {ParseFamily(strategy)};
  request.jobs = ReadJobs(vm);
  // One write per line: whole lines where several families' threads report at once.
  request.progress = [](const std::string& line) { std::cerr << "terasim plan: " + line + "\n"; };
  context.SetNetworkBounds(request);
  context.SetFoldedGeneration(request);
  StrategySearch search(context.model(), context.cluster(), context.device(), context.cost());
  std::vector<FamilyResult> results =
      search.Run(request, [&](const Candidate&, const Schedule& schedule) {
        return NsToSeconds(context.Evaluate(schedule).iteration_time_ns);
      });
  // Every evaluated candidate, fastest first.
  std::vector<Evaluation> ranked;
  std::vector<Evaluation> skipped;
  for (const FamilyResult& r : results) {
    for (const Evaluation& e : r.tried) (e.evaluated ? ranked : skipped).push_back(e);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Evaluation& a, const Evaluation& b) {
    return a.iteration_s < b.iteration_s;
  });
  const double plan_time = SecondsSince(start);
  if (json) {
    nlohmann::json candidates = nlohmann::json::array();
    for (const Evaluation& e : ranked) candidates.push_back(EvaluationJson(e));
    nlohmann::json rejected = nlohmann::json::array();
    for (const Evaluation& e : skipped) rejected.push_back(EvaluationJson(e));
    PrintJson({{"model", context.model().name},
               {"cluster", context.cluster().Spec()},
               {"batch", batch},
               {"candidates", candidates},
               {"rejected", rejected},
               {"plan_time_s", plan_time}});
    return 0;
  }
  std::cout << fmt::format("{} on {}, batch {}: {} configurations simulated in {:.1f} s\n",
                           context.model().name, context.cluster().Spec(), batch, ranked.size(),
                           plan_time);
  std::cout << fmt::format("  {:>4} {:<12} {:<9} {:>6} {:>10}  {}\n", "rank", "family", "DxPxT",
                           "units", "time (s)", "slicing");
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Evaluation& e = ranked[i];
    std::cout << fmt::format("  {:>4} {:<12} {:<9} {:>6} {:>10.4f}  {}\n", i + 1,
                             FamilyName(e.candidate.family), DegreesText(e.candidate.options),
                             e.candidate.units, e.iteration_s, e.candidate.slicing);
  }
  for (const FamilyResult& r : results) {
    if (!r.found) std::cout << fmt::format("  {}: {}\n", FamilyName(r.family), r.reason);
  }
  return 0;
}

}  // namespace terasim::cli

// terasim compare: the main job. For a model on a cluster, the best configuration of every
// strategy family (schedule/strategy_search.h), simulated and ranked; stored in the results
// database in one transaction, with an SVG bar chart and the winner's Perfetto trace.
// `--paper` instead replays the published experiment's settings without and with token slicing.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/json_reader.h"
#include "schedule/memory_estimate.h"
#include "schedule/slicing_planner.h"
#include "schedule/slicing_spec.h"
#include "schedule/stage_cost.h"
#include "schedule/strategy_search.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/planning_context.h"
#include "traces/svg_bar_chart.h"
#include "traces/traces.h"

namespace terasim::cli {
namespace {

struct CompareRow {
  Family family = Family::kTeraPipe;
  bool found = false;
  std::string reason;
  Evaluation evaluation;
  SimResult result;
  double speedup = 0;  // over the best strategy without token slicing
};

std::string UnitsText(const Candidate& c) {
  if (c.family == Family::kTeraPipe) return fmt::format("{} slices", c.units);
  std::string text = fmt::format("{} x {}", c.options.microbatches, c.options.microbatch_size);
  if (c.options.virtual_stages > 1) text += fmt::format(" v{}", c.options.virtual_stages);
  return text;
}

nlohmann::json OptionsJson(const GenerateOptions& o) {
  return {{"strategy", StrategyName(o.strategy)},
          {"dp", o.dp},
          {"pp", o.pp},
          {"tp", o.tp},
          {"microbatches", o.microbatches},
          {"microbatch_size", o.microbatch_size},
          {"virtual_stages", o.virtual_stages},
          {"slicing", FormatSlicingSpec(o.slicing)},
          {"order", SliceOrderName(o.order)},
          {"boundary", BoundaryName(o.boundary)},
          {"optimizer", o.optimizer}};
}

void WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !(out << text) || !out.flush()) ThrowInput("{}: cannot write", path);
}

int RunPaper(const po::variables_map& vm) {
  const std::string path = DataRoot() + "/tools/data/paper_settings.json";
  nlohmann::json doc = ParseJson(ReadTextFile(path), path);
  JsonReader root(doc, path);
  const std::string instance = root.RequireString("cluster");
  const nlohmann::json& settings = root.RequireArray("settings");
  const int granularity = vm["granularity"].as<int>();
  const bool json = vm["json"].as<bool>();
  const std::string only = vm["setting"].as<std::string>();
  nlohmann::json out = nlohmann::json::array();
  if (!json) {
    std::cout << fmt::format("{:<9} {:<14} {:>4} {:>9} {:>10} {:>10} {:>8} {:>12}  {}\n", "setting",
                             "model", "B", "DxPxT", "without_s", "with_s", "speedup", "published",
                             "slicing");
  }
  for (size_t i = 0; i < settings.size(); ++i) {
    JsonReader s = JsonReader::Element(settings, i, path, "settings");
    const std::string name = s.RequireString("setting");
    if (!only.empty() && only != name) continue;
    std::cerr << fmt::format("terasim compare --paper: setting {} ...\n", name);
    PlanningInputs inputs;
    inputs.model = s.RequireString("model");
    inputs.cluster = fmt::format("{}:{}", instance, s.RequireInt("instances", 1));
    inputs.network = ParseNetworkMode(vm["network"].as<std::string>());
    PlanningContext context(inputs);
    const int batch = static_cast<int>(s.RequireInt("batch", 1));
    GenerateOptions base;
    base.model = context.model();
    base.dp = static_cast<int>(s.RequireInt("dp", 1));
    base.pp = static_cast<int>(s.RequireInt("pp", 1));
    base.tp = static_cast<int>(s.RequireInt("tp", 1));
    base.boundary = base.tp > 1 ? Boundary::kBroadcast : Boundary::kPointToPoint;
    if (batch % base.dp != 0) ThrowInput("{}: settings[{}]: dp does not divide batch", path, i);
    const int replica = batch / base.dp;
    // Without TeraPipe: one micro-batch per sequence, no token slicing (GPipe flush).
    GenerateOptions without = base;
    without.strategy = Strategy::kGpipe;
    without.microbatches = replica;
    without.microbatch_size = 1;
    Schedule without_schedule = Generate(without);
    MemoryEstimate without_memory =
        EstimateMemory(without_schedule, context.model(), context.device());
    const double without_s =
        NsToSeconds(context.Evaluate(without_schedule, &without_memory).iteration_time_ns);
    // With TeraPipe: the planner's slicing of every sequence (one sequence per micro-batch as
    // the paper ran it), flush order.
    StageCost stage(context.model(), context.cost(), context.cluster(),
                    {base.pp, base.tp, base.boundary});
    SlicingRequest request{context.model().sequence, base.pp, replica, granularity, {1}, false};
    SlicingPlan plan = PlanSlicing(request, stage.AsSliceCost());
    GenerateOptions with = base;
    with.strategy = Strategy::kTeraPipe;
    with.slicing = FoldPlan(plan.microbatches);
    Schedule with_schedule = Generate(with);
    MemoryEstimate with_memory = EstimateMemory(with_schedule, context.model(), context.device());
    const double with_s =
        NsToSeconds(context.Evaluate(with_schedule, &with_memory).iteration_time_ns);
    const std::string slicing = FormatSlicingSpec(with.slicing);
    nlohmann::json row = {{"setting", name},
                          {"model", context.model().name},
                          {"cluster", context.cluster().Spec()},
                          {"batch", batch},
                          {"dp", base.dp},
                          {"pp", base.pp},
                          {"tp", base.tp},
                          {"without_s", without_s},
                          {"with_s", with_s},
                          {"speedup", without_s / with_s},
                          {"slicing", slicing},
                          {"fits", without_memory.fits && with_memory.fits}};
    // The uniform-slicing curve where the paper measured one: each sequence in n equal slices.
    std::string curve_text;
    if (s.Has("published_uniform")) {
      nlohmann::json curve = nlohmann::json::array();
      const nlohmann::json& points = s.RequireArray("published_uniform");
      for (size_t j = 0; j < points.size(); ++j) {
        JsonReader point = JsonReader::Element(points, j, path, "published_uniform");
        GenerateOptions uniform = base;
        uniform.strategy = Strategy::kTeraPipe;
        uniform.microbatches = replica;
        uniform.uniform_slices = static_cast<int>(point.RequireInt("slices", 1));
        Schedule uniform_schedule = Generate(uniform);
        const double predicted_s =
            NsToSeconds(context.Evaluate(uniform_schedule).iteration_time_ns);
        const double published_s = point.RequireDouble("published_s");
        curve.push_back({{"slices", uniform.uniform_slices},
                         {"predicted_s", predicted_s},
                         {"published_s", published_s}});
        curve_text += fmt::format("{}{}: {:.3f} ({:.3f})", curve_text.empty() ? "" : ", ",
                                  uniform.uniform_slices, predicted_s, published_s);
      }
      row["uniform"] = curve;
    }
    std::string published = "";
    if (s.Has("published_without_s")) {
      row["published_without_s"] = s.RequireDouble("published_without_s");
      row["published_with_s"] = s.RequireDouble("published_with_s");
      published = fmt::format("{:.3f}/{:.3f}", s.RequireDouble("published_without_s"),
                              s.RequireDouble("published_with_s"));
    }
    out.push_back(row);
    if (!json) {
      std::cout << fmt::format(
          "{:<9} {:<14} {:>4} {:>9} {:>10.3f} {:>10.3f} {:>7.2f}x {:>12}  {}\n", name,
          context.model().name, batch, fmt::format("{}x{}x{}", base.dp, base.pp, base.tp),
          without_s, with_s, without_s / with_s, published, slicing);
      if (!curve_text.empty()) {
        std::cout << fmt::format("{:<9} uniform slicing, slices: predicted s (published): {}\n", "",
                                 curve_text);
      }
      std::cout.flush();
    }
  }
  if (!only.empty() && out.empty()) ThrowInput("--setting {}: no such setting in {}", only, path);
  if (json) PrintJson(out);
  return 0;
}

}  // namespace

int RunCompare(const Args& args) {
  po::options_description options("terasim compare");
  // clang-format off
  options.add_options()
      ("model", po::value<std::string>()->default_value("gpt3-175b"), "model card name or path")
      ("cluster", po::value<std::string>()->default_value("p3.16xlarge:48"), "INSTANCE:COUNT")
      ("batch", po::value<int>()->default_value(2),
       "global batch (sequences; alias --global-batch-size)")
      ("db", po::value<std::string>()->default_value("terasim.db"), "results database")
      ("out", po::value<std::string>()->default_value("terasim-out"),
       "folder for the SVG chart and the winner's trace")
      ("strategy", po::value<std::string>()->default_value("all"),
       "families: all, or one of gpipe | 1f1b | interleaved | megatron | terapipe")
      ("microbatch-size", po::value<int>()->default_value(0, "search"),
       "sequences per micro-batch of the micro-batch families (alias --micro-batch-size)")
      ("granularity", po::value<int>()->default_value(8), "token granularity of the slicing DP")
      ("network", po::value<std::string>()->default_value("flow"), "flow | analytic")
      ("max-evaluations", po::value<int>()->default_value(4), "simulations per family at most")
      ("nic-gbps", po::value<double>()->default_value(0, "instance's"),
       "what-if: NIC line rate, Gbit/s")
      ("paper", po::bool_switch(), "the published experiment's settings, without and with slicing")
      ("setting", po::value<std::string>()->default_value(""), "with --paper: only this setting")
      ("no-trace", po::bool_switch(), "do not write the winner's trace")
      ("json", po::bool_switch(), "print JSON");
  // clang-format on
  po::variables_map vm;
  if (!Parse("compare",
             "[--model M] [--cluster C] [--batch B] [--db FILE] [--out DIR] [--json]\n"
             "       terasim compare --paper [--setting S] [--json]",
             options, {}, args, vm)) {
    return 0;
  }
  if (vm["paper"].as<bool>()) return RunPaper(vm);

  const auto start = std::chrono::steady_clock::now();
  PlanningInputs inputs;
  inputs.model = vm["model"].as<std::string>();
  inputs.cluster = vm["cluster"].as<std::string>();
  inputs.network = ParseNetworkMode(vm["network"].as<std::string>());
  if (!vm["nic-gbps"].defaulted()) inputs.cluster_options.nic_gbps = vm["nic-gbps"].as<double>();
  PlanningContext context(inputs);
  SearchRequest request;
  request.batch = vm["batch"].as<int>();
  request.granularity = vm["granularity"].as<int>();
  request.max_evaluations_per_family = vm["max-evaluations"].as<int>();
  request.microbatch_size = vm["microbatch-size"].as<int>();
  const std::string strategy = vm["strategy"].as<std::string>();
  if (strategy != "all") request.families = {ParseFamily(strategy)};
  request.progress = [](const std::string& line) {
    std::cerr << "terasim compare: " << line << "\n";
  };

  // The simulator's full result for each family's best candidate so far.
  std::map<Family, SimResult> best_results;
  std::map<Family, double> best_times;
  StrategySearch search(context.model(), context.cluster(), context.device(), context.cost());
  std::vector<FamilyResult> families =
      search.Run(request, [&](const Candidate& c, const Schedule& schedule) {
        MemoryEstimate memory = EstimateMemory(schedule, context.model(), context.device());
        SimResult result = context.Evaluate(schedule, &memory);
        const double seconds = NsToSeconds(result.iteration_time_ns);
        auto it = best_times.find(c.family);
        if (it == best_times.end() || seconds < it->second) {
          best_times[c.family] = seconds;
          best_results[c.family] = std::move(result);
        }
        return seconds;
      });

  std::vector<CompareRow> rows;
  double best_without = 0;
  for (FamilyResult& f : families) {
    CompareRow row;
    row.family = f.family;
    row.found = f.found;
    row.reason = f.reason;
    if (f.found) {
      row.evaluation = f.best;
      row.result = std::move(best_results[f.family]);
      if (f.family != Family::kTeraPipe &&
          (best_without == 0 || f.best.iteration_s < best_without)) {
        best_without = f.best.iteration_s;
      }
    }
    rows.push_back(std::move(row));
  }
  int winner = -1;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].found) continue;
    if (best_without > 0) rows[i].speedup = best_without / rows[i].evaluation.iteration_s;
    if (winner < 0 || rows[i].evaluation.iteration_s < rows[winner].evaluation.iteration_s) {
      winner = static_cast<int>(i);
    }
  }

  // Store every row in one transaction.
  const nlohmann::json config = {{"model", context.model().name},
                                 {"cluster", context.cluster().Spec()},
                                 {"batch", request.batch},
                                 {"granularity", request.granularity},
                                 {"network", NetworkModeName(context.network())},
                                 {"cost_model", context.cost().Name()},
                                 {"families", strategy}};
  std::vector<std::pair<RunRecord, const std::vector<TraceRow>*>> runs;
  for (const CompareRow& row : rows) {
    if (!row.found) continue;
    const Candidate& c = row.evaluation.candidate;
    RunRecord r;
    r.kind = "sim";
    r.model = context.model().name;
    r.cluster = context.cluster().Spec();
    r.strategy = FamilyName(row.family);
    r.dp = c.options.dp;
    r.pp = c.options.pp;
    r.tp = c.options.tp;
    r.microbatches = c.family == Family::kTeraPipe ? c.units : c.options.microbatches;
    r.slicing = c.slicing;
    r.config = config;
    r.config["schedule"] = OptionsJson(c.options);
    r.label = "terasim compare";
    r.metrics = {{"iteration_time_s", row.evaluation.iteration_s},
                 {"tflops_per_gpu", row.result.tflops_per_gpu},
                 {"bubble_fraction", row.result.bubble_fraction},
                 {"peak_memory_bytes", static_cast<double>(row.evaluation.memory.peak_bytes)},
                 {"speedup", row.speedup}};
    runs.emplace_back(std::move(r), &row.result.trace.rows);
  }
  const std::string db_path = vm["db"].as<std::string>();
  std::vector<int64_t> run_ids;
  int64_t comparison_id = -1;
  if (!db_path.empty() && !runs.empty()) {
    ResultStore store = ResultStore::OpenOrCreate(db_path);
    comparison_id = store.WriteComparisonWithRuns(
        fmt::format("compare {} on {}", context.model().name, context.cluster().Spec()), config,
        runs, &run_ids);
  }

  // The chart and the winner's trace.
  const std::string out_dir = vm["out"].as<std::string>();
  std::string chart_path, trace_path;
  if (!out_dir.empty()) {
    std::filesystem::create_directories(out_dir);
    std::vector<Bar> bars;
    for (size_t i = 0; i < rows.size(); ++i) {
      const CompareRow& row = rows[i];
      Bar bar;
      if (row.found) {
        bar.label = fmt::format("{} {}", FamilyName(row.family),
                                DegreesText(row.evaluation.candidate.options));
        bar.value = row.evaluation.iteration_s;
        bar.annotation = fmt::format("{:.3f} s ({:.2f}x)", row.evaluation.iteration_s, row.speedup);
        bar.highlight = static_cast<int>(i) == winner;
      } else {
        bar.label = FamilyName(row.family);
        bar.missing = true;
        bar.annotation = "no configuration fits";
      }
      bars.push_back(bar);
    }
    chart_path = out_dir + "/compare.svg";
    WriteTextFile(
        chart_path,
        SvgBarChart(fmt::format("{} on {}, batch {}: iteration time per strategy",
                                context.model().name, context.cluster().Spec(), request.batch),
                    "iteration time (s), simulated", bars));
    if (winner >= 0 && !vm["no-trace"].as<bool>()) {
      trace_path = out_dir + "/winner.trace.json";
      WriteChromeTraceFile(trace_path, rows[winner].result.trace, {});
    }
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (vm["json"].as<bool>()) {
    nlohmann::json out = nlohmann::json::array();
    size_t stored = 0;
    for (const CompareRow& row : rows) {
      nlohmann::json j = {{"family", FamilyName(row.family)}, {"found", row.found}};
      if (row.found) {
        const Candidate& c = row.evaluation.candidate;
        j.update({{"dp", c.options.dp},
                  {"pp", c.options.pp},
                  {"tp", c.options.tp},
                  {"units", UnitsText(c)},
                  {"slicing", c.slicing},
                  {"iteration_time_s", row.evaluation.iteration_s},
                  {"speedup", row.speedup},
                  {"tflops_per_gpu", row.result.tflops_per_gpu},
                  {"bubble_fraction", row.result.bubble_fraction},
                  {"peak_memory_bytes", row.evaluation.memory.peak_bytes},
                  {"fits", row.evaluation.fits}});
        if (stored < run_ids.size()) j["run_id"] = run_ids[stored++];
      } else {
        j["reason"] = row.reason;
      }
      out.push_back(j);
    }
    PrintJson({{"model", context.model().name},
               {"cluster", context.cluster().Spec()},
               {"batch", request.batch},
               {"strategies", out},
               {"winner", winner >= 0 ? FamilyName(rows[winner].family) : ""},
               {"db", db_path},
               {"comparison_id", comparison_id},
               {"chart", chart_path},
               {"trace", trace_path},
               {"wall_time_s", wall}});
    return 0;
  }
  std::cout << fmt::format("{} on {}, batch {} ({} network, {})\n", context.model().name,
                           context.cluster().Spec(), request.batch,
                           NetworkModeName(context.network()), context.cost().Name());
  std::cout << fmt::format("  {:<12} {:<9} {:<12} {:>9} {:>8} {:>8} {:>7} {:>10} {:>5}\n",
                           "strategy", "DxPxT", "units", "time (s)", "speedup", "TFLOP/s", "bubble",
                           "peak mem", "fits");
  for (const CompareRow& row : rows) {
    if (!row.found) {
      std::cout << fmt::format("  {:<12} {}\n", FamilyName(row.family), row.reason);
      continue;
    }
    const Candidate& c = row.evaluation.candidate;
    std::cout << fmt::format(
        "  {:<12} {:<9} {:<12} {:>9.3f} {:>7.2f}x {:>8.2f} {:>6.1f}% {:>10} {:>5}\n",
        FamilyName(row.family), DegreesText(c.options), UnitsText(c), row.evaluation.iteration_s,
        row.speedup, row.result.tflops_per_gpu, 100 * row.result.bubble_fraction,
        FormatGiB(row.evaluation.memory.peak_bytes), row.evaluation.fits ? "yes" : "no");
  }
  if (winner >= 0 && rows[winner].family == Family::kTeraPipe) {
    std::cout << fmt::format("  terapipe slicing: {}\n", rows[winner].evaluation.candidate.slicing);
  }
  if (comparison_id >= 0) {
    std::cout << fmt::format("  stored as comparison {} in {}\n", comparison_id, db_path);
  }
  if (!chart_path.empty()) std::cout << fmt::format("  chart: {}\n", chart_path);
  if (!trace_path.empty()) std::cout << fmt::format("  winner's trace: {}\n", trace_path);
  std::cout << fmt::format("  ({:.1f} s)\n", wall);
  return 0;
}

}  // namespace terasim::cli

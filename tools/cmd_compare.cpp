// terasim compare: the main job. For a model on a cluster, the best configuration of every
// strategy family (schedule/strategy_search.h), simulated and ranked; stored in the results
// database in one transaction, with an SVG bar chart, the winner's timeline (gantt) and its
// Perfetto trace. `--paper` instead replays the published experiment's settings without and
// with token slicing.
//
// Exit codes: 0 a winner was found; 4 no configuration of any family fits in memory (the
// message names the closest one and its largest memory term; nothing is stored and the
// outputs of an earlier run in --out are removed). Errors exit as every command does (1, 3).
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/limits.h"
#include "schedule/memory_estimate.h"
#include "schedule/slicing_planner.h"
#include "schedule/slicing_spec.h"
#include "schedule/stage_cost.h"
#include "schedule/strategy_search.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/planning_context.h"
#include "tools/schedule_flags.h"
#include "traces/gantt_svg.h"
#include "traces/run_config.h"
#include "traces/svg_bar_chart.h"
#include "traces/trace_links.h"
#include "traces/traces.h"

namespace terasim::cli {
namespace {

// `terasim compare` exits with this when no configuration of any family fits in memory.
constexpr int kExitNothingFits = 4;

// --max-ops' default: a candidate of more ops (EstimateOps) is not generated. About 10 s of
// generation and replay on one core of the build machine (a 0.74 M-op gpt3-175b candidate on
// p4d.24xlarge:64 took 13 s); a what-if study that needs the bigger ones raises it.
constexpr int64_t kDefaultMaxOps = 2'000'000;

// The files a comparison writes into --out; removed before each run writes them anew.
constexpr const char* kChartFile = "compare.svg";
constexpr const char* kTraceFile = "winner.trace.json";
constexpr const char* kGanttFile = "winner.gantt.svg";

struct CompareRow {
  Family family = Family::kTeraPipe;
  bool found = false;
  std::string reason;
  Evaluation evaluation;
  SimResult result;
  Schedule schedule;   // the best candidate's
  double speedup = 0;  // over the best strategy without token slicing
  // The search's account (schedule/strategy_search.h).
  int candidates = 0, simulated = 0, over_memory = 0, over_memory_analytic = 0, not_generated = 0;
  int pruned_by_bound = 0, pruned_by_budget = 0, pruned_by_ops = 0;
};

// "12 configurations: 4 simulated, 3 over memory, 5 pruned (bound)": what the search did with
// a family's candidates and why it left the rest out.
std::string SearchText(const CompareRow& row) {
  std::string text = fmt::format("{} configuration{}: {} simulated", row.candidates,
                                 row.candidates == 1 ? "" : "s", row.simulated);
  if (row.over_memory > 0) {
    text += fmt::format(", {} over memory ({} analytic, not generated)", row.over_memory,
                        row.over_memory_analytic);
  }
  if (row.not_generated > 0) text += fmt::format(", {} not generated", row.not_generated);
  if (row.pruned_by_bound > 0) {
    text += fmt::format(", {} pruned (lower bound >= best simulated time)", row.pruned_by_bound);
  }
  if (row.pruned_by_ops > 0) {
    text += fmt::format(", {} not generated (over --max-ops)", row.pruned_by_ops);
  }
  if (row.pruned_by_budget > 0) {
    text += fmt::format(", {} not tried (--max-evaluations reached)", row.pruned_by_budget);
  }
  return text;
}

// The configuration that came closest to fitting (smallest peak memory) and its largest term.
struct Closest {
  bool any = false;
  Family family = Family::kTeraPipe;
  Candidate candidate;
  Bytes peak = 0, capacity = 0;
  std::string term;
  Bytes term_bytes = 0;
};

Closest FindClosest(const std::vector<FamilyResult>& families, const ModelCard& model,
                    const DeviceSpec& device, int batch) {
  Closest best;
  for (const FamilyResult& f : families) {
    for (const Evaluation& e : f.tried) {
      Closest c;
      c.any = true;
      c.family = f.family;
      c.candidate = e.candidate;
      c.capacity = device.CapacityBytes();
      std::vector<std::pair<std::string, Bytes>> terms;
      if (!e.memory.devices.empty()) {
        const DeviceMemory& d = e.memory.devices[e.memory.peak_device];
        c.peak = d.peak;
        terms = {{"weights", d.state.weights},
                 {"gradients", d.state.gradients},
                 {"optimizer state", d.state.optimizer_state},
                 {"activations", d.activations},
                 {"key/value cache", d.kv_cache},
                 {"boundary buffers", d.boundary}};
      } else if (f.family == Family::kTeraPipe && e.candidate.analytic_peak > 0) {
        // Rejected on its analytic lower bound (the search's, recomputed for its terms).
        const AnalyticMemoryResult bound =
            TeraPipeMemoryLowerBound(e.candidate.options, batch / e.candidate.options.dp);
        c.peak = bound.peak;
        terms = {{bound.largest_term, bound.largest_bytes}};
      } else if (e.note.rfind("does not fit", 0) == 0) {
        // Rejected on its training state alone (the search's quick test, same formula).
        const int layers = (model.layers + e.candidate.options.pp - 1) / e.candidate.options.pp;
        const TrainingStateBytes state =
            TrainingState(static_cast<int64_t>(layers) *
                          (LayerShardParams(model, e.candidate.options.tp, Block::kAttention) +
                           LayerShardParams(model, e.candidate.options.tp, Block::kMlp)));
        c.peak = state.Total();
        terms = {{"weights", state.weights},
                 {"gradients", state.gradients},
                 {"optimizer state", state.optimizer_state}};
      } else {
        continue;  // could not be generated: no memory figure
      }
      for (const auto& [name, bytes] : terms) {
        if (bytes > c.term_bytes) {
          c.term = name;
          c.term_bytes = bytes;
        }
      }
      if (!best.any || c.peak < best.peak) best = c;
    }
  }
  return best;
}

// The rows of one device per set of pipeline stages: the lowest-ranked device computing those
// stages (the first tensor-parallel rank of the first data-parallel replica); its peers run the
// same stages at nearly the same times. What `--store-ops winner` stores, so that a big
// cluster's store stays small; the full trace is in --out's winner.trace.json.
std::vector<TraceRow> StageRepresentativeRows(const Schedule& schedule,
                                              const std::vector<TraceRow>& rows) {
  std::map<int, std::set<int>> stages;  // device -> stages it computes
  for (const Op& op : schedule.ops) {
    if (IsCompute(op.kind) && op.stage >= 0) stages[op.device].insert(op.stage);
  }
  std::set<std::set<int>> seen;
  std::set<int> keep;
  for (const auto& [device, set] : stages) {
    if (seen.insert(set).second) keep.insert(device);
  }
  std::vector<TraceRow> out;
  for (const TraceRow& r : rows) {
    if (keep.count(r.device)) out.push_back(r);
  }
  return out;
}

// Two 64-bit hashes of everything a replay reads from a generated schedule (its ops, groups,
// sizes and declared symmetry; not its informational shape): schedules with equal
// fingerprints replay the same (e.g. ZB-H1 and ZB-H2 where M is too small for H2's extra
// warm-up forwards). Strings enter as their length and std::hash.
class Fingerprint {
 public:
  void Add(uint64_t value) {
    a_ = Mix(a_ ^ value);
    b_ = Mix(b_ + value * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL);
  }
  // Two 32-bit values as one word (each cast to 32 bits: one-to-one for ints).
  void Add(int64_t high, int64_t low) {
    Add((static_cast<uint64_t>(static_cast<uint32_t>(high)) << 32) | static_cast<uint32_t>(low));
  }
  // Its length and its bytes' 64-bit hash (std::hash): one word each, not one per 8 bytes.
  void Add(const std::string& text) {
    Add(static_cast<uint64_t>(text.size()));
    Add(static_cast<uint64_t>(std::hash<std::string_view>{}(text)));
  }
  std::pair<uint64_t, uint64_t> Value() const { return {a_, b_}; }

 private:
  // splitmix64's finalizer.
  static uint64_t Mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  uint64_t a_ = 0x243f6a8885a308d3ULL, b_ = 0x13198a2e03707344ULL;
};

std::pair<uint64_t, uint64_t> ScheduleFingerprint(const Schedule& s) {
  Fingerprint f;
  f.Add(s.model);
  for (int64_t n : {s.layers, s.sequence, s.devices, s.batch}) f.Add(static_cast<uint64_t>(n));
  f.Add(s.symmetry.representatives_only);
  for (int n : {s.symmetry.replica_block, s.symmetry.tp, s.symmetry.tp_ranks}) {
    f.Add(static_cast<uint64_t>(n));
  }
  for (const Group& g : s.groups) {
    f.Add(g.name);
    f.Add(g.ranks.size());
    for (int r : g.ranks) f.Add(static_cast<uint64_t>(r));
  }
  f.Add(s.ops.size());
  for (const Op& op : s.ops) {
    f.Add(op.key);
    f.Add(op.stream);
    f.Add(op.group);
    f.Add(op.tensor);
    f.Add(static_cast<int64_t>(op.kind), op.device);
    f.Add(op.stage, op.layers.begin);
    f.Add(op.layers.end, static_cast<int64_t>(op.part));
    f.Add(op.microbatch, op.rows);
    f.Add(op.tokens.begin, op.tokens.end);
    f.Add(op.peer, static_cast<int64_t>(op.recompute));
    f.Add(static_cast<int64_t>(op.sequence_parallel), op.zero);
    f.Add(static_cast<uint64_t>(op.bytes));
    f.Add(op.after.size());
    for (const std::string& key : op.after) f.Add(key);
  }
  return f.Value();
}

void RemoveStaleOutputs(const std::string& out_dir) {
  if (out_dir.empty()) return;
  for (const char* name : {kChartFile, kTraceFile, kGanttFile}) {
    std::error_code ignored;
    std::filesystem::remove(std::filesystem::path(out_dir) / name, ignored);
  }
}

std::string UnitsText(const Candidate& c) {
  if (c.family == Family::kTeraPipe) {
    // Not planned: rejected on memory for any slicing (schedule/strategy_search.h).
    return c.units > 0 ? fmt::format("{} slices", c.units) : "slicing not planned";
  }
  std::string text = fmt::format("{} x {}", c.options.microbatches, c.options.microbatch_size);
  if (c.options.virtual_stages > 1) text += fmt::format(" v{}", c.options.virtual_stages);
  return text;
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
  // What --db and --out get: two runs per setting (no per-op rows) and two bars.
  std::vector<std::pair<RunRecord, const std::vector<TraceRow>*>> runs;
  std::vector<Bar> bars;
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
    inputs.fold = !vm["no-fold"].as<bool>();
    PlanningContext context(inputs);
    const int batch = static_cast<int>(s.RequireInt("batch", 1));
    GenerateOptions base;
    base.model = context.model();
    base.dp = static_cast<int>(s.RequireInt("dp", 1));
    base.pp = static_cast<int>(s.RequireInt("pp", 1));
    base.tp = static_cast<int>(s.RequireInt("tp", 1));
    base.boundary = base.tp > 1 ? Boundary::kBroadcast : Boundary::kPointToPoint;
    ReadRecipeFlags(vm, base);  // --dp-step, --dp-bucket-mb
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
    for (const auto& [options, seconds, fits] :
         {std::make_tuple(&without, without_s, without_memory.fits),
          std::make_tuple(&with, with_s, with_memory.fits)}) {
      RunConfig config;
      config.command = "compare --paper";
      config.model = context.model().name;
      config.cluster = context.cluster().Spec();
      config.batch = batch;
      config.network = NetworkModeName(context.network());
      config.cost_model = context.cost().Name();
      config.schedule = ScheduleConfigJson(*options);
      config.options = {{"setting", name}, {"granularity", granularity}};
      RunRecord r;
      r.model = config.model;
      r.cluster = config.cluster;
      r.strategy = StrategyName(options->strategy);
      r.dp = options->dp;
      r.pp = options->pp;
      r.tp = options->tp;
      r.microbatches = config.schedule["microbatches"].get<int>();
      r.slicing = options->slicing.empty() ? "" : slicing;
      r.config = RunConfigJson(config);
      r.label = "terasim compare --paper";
      r.metrics = {{"iteration_time_s", seconds}, {"fits", fits ? 1.0 : 0.0}};
      runs.emplace_back(std::move(r), nullptr);
      Bar bar;
      bar.label = fmt::format("{} {}", name, options->slicing.empty() ? "without" : "with");
      bar.value = seconds;
      bar.annotation = fmt::format("{:.3f} s", seconds);
      bar.highlight = !options->slicing.empty();
      bars.push_back(bar);
    }
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
  const std::string db_path = vm["db"].as<std::string>();
  int64_t comparison_id = -1;
  if (!db_path.empty() && !runs.empty()) {
    ResultStore store = ResultStore::OpenOrCreate(db_path);
    comparison_id = store.WriteComparisonWithRuns(
        fmt::format("compare --paper{}", only.empty() ? "" : " --setting " + only),
        {{"command", "compare --paper"}, {"setting", only}, {"granularity", granularity}}, runs);
  }
  const std::string out_dir = vm["out"].as<std::string>();
  std::string chart_path;
  if (!out_dir.empty() && !bars.empty()) {
    std::filesystem::create_directories(out_dir);
    chart_path = out_dir + "/paper.svg";
    WriteFileAtomically(chart_path,
                        SvgBarChart("the published settings without and with token slicing",
                                    "iteration time (s), simulated", bars));
  }
  // With --json stdout holds only the JSON array; where the results went goes to stderr.
  std::ostream& note = json ? std::cerr : std::cout;
  if (json) PrintJson(out);
  if (comparison_id >= 0) {
    note << fmt::format("stored as comparison {} in {}\n", comparison_id, db_path);
  }
  if (!chart_path.empty()) note << fmt::format("chart: {}\n", chart_path);
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
       "families: all, or one of gpipe | 1f1b | interleaved | zero-bubble | megatron | terapipe | "
       "interleaved-zb | zb-v | dualpipe-v")
      ("microbatch-size", po::value<int>()->default_value(0, "search"),
       "sequences per micro-batch of the micro-batch families (alias --micro-batch-size)")
      ("granularity", po::value<int>()->default_value(8), "token granularity of the slicing DP")
      ("network", po::value<std::string>()->default_value("flow"), "flow | analytic")
      ("max-evaluations", po::value<int>()->default_value(16),
       "simulations per family at most (the output counts what the budget left out)")
      ("max-ops", po::value<int64_t>()->default_value(kDefaultMaxOps),
       "candidates of more ops (estimated; of the representatives where the replay folds) are "
       "not generated; 0: no limit")
      ("nic-gbps", po::value<double>()->default_value(0, "instance's"),
       "what-if: NIC line rate, Gbit/s")
      ("paper", po::bool_switch(), "the published experiment's settings, without and with slicing")
      ("setting", po::value<std::string>()->default_value(""), "with --paper: only this setting")
      ("no-trace", po::bool_switch(), "do not write the winner's trace and timeline")
      ("no-fold", po::bool_switch(),
       "replay every device, not one per class of identical devices (same results, slower)")
      ("store-ops", po::value<std::string>()->default_value("winner"),
       "per-op trace rows stored: none | winner (one device per pipeline stage) | all")
      ("json", po::bool_switch(), "print JSON");
  // clang-format on
  AddDpStepOptions(options);
  AddJobsOption(options);
  po::variables_map vm;
  if (!Parse("compare",
             "[--model M] [--cluster C] [--batch B] [--db FILE] [--out DIR] [--json]\n"
             "       terasim compare --paper [--setting S] [--json]",
             options, {}, args, vm)) {
    return 0;
  }
  const std::string store_ops = vm["store-ops"].as<std::string>();
  if (store_ops != "none" && store_ops != "winner" && store_ops != "all") {
    ThrowInput("--store-ops: '{}' must be one of none, winner, all", store_ops);
  }
  if (vm["paper"].as<bool>()) return RunPaper(vm);

  const auto start = std::chrono::steady_clock::now();
  PlanningInputs inputs;
  inputs.model = vm["model"].as<std::string>();
  inputs.cluster = vm["cluster"].as<std::string>();
  inputs.network = ParseNetworkMode(vm["network"].as<std::string>());
  inputs.fold = !vm["no-fold"].as<bool>();
  if (!vm["nic-gbps"].defaulted()) {
    // A negative value would silently mean "the instance's" (ClusterOptions' sentinel).
    const double nic_gbps = vm["nic-gbps"].as<double>();
    if (!(std::isfinite(nic_gbps) && nic_gbps > 0)) {
      ThrowInput("--nic-gbps {}: must be a finite number > 0", nic_gbps);
    }
    inputs.cluster_options.nic_gbps = nic_gbps;
  }
  PlanningContext context(inputs);
  SearchRequest request;
  request.batch = vm["batch"].as<int>();
  if (request.batch < 1 || request.batch > limits::kMaxBatch) {
    ThrowInput("--batch {}: must be in [1, {}] (kMaxBatch, models/limits.h)", request.batch,
               limits::kMaxBatch);
  }
  // The store and the output folder are checked before the search, so that a bad --db or --out
  // fails at once instead of after minutes of simulation.
  const std::string db_path = vm["db"].as<std::string>();
  std::optional<ResultStore> store;
  if (!db_path.empty()) store.emplace(ResultStore::OpenOrCreate(db_path));
  const std::string out_dir = vm["out"].as<std::string>();
  if (!out_dir.empty()) {
    std::error_code dir_error;
    std::filesystem::create_directories(out_dir, dir_error);
    if (dir_error) ThrowInput("--out: {}: {}", out_dir, dir_error.message());
    RequireReplaceableOutput(out_dir + "/compare.svg");
    RequireReplaceableOutput(out_dir + "/winner.trace.json");
    RequireReplaceableOutput(out_dir + "/winner.gantt.svg");
  }
  request.granularity = vm["granularity"].as<int>();
  request.max_evaluations_per_family = vm["max-evaluations"].as<int>();
  request.max_ops = vm["max-ops"].as<int64_t>();
  if (request.max_ops < 0) ThrowInput("--max-ops {}: must be >= 0", request.max_ops);
  request.microbatch_size = vm["microbatch-size"].as<int>();
  GenerateOptions dp_step;  // --dp-step, --dp-bucket-mb
  ReadRecipeFlags(vm, dp_step);
  request.dp_step = dp_step.dp_step;
  request.dp_bucket_bytes = dp_step.dp_bucket_bytes;
  const std::string strategy = vm["strategy"].as<std::string>();
  if (strategy != "all") request.families = {ParseFamily(strategy)};
  request.jobs = ReadJobs(vm);
  // One write per line: whole lines where several families' threads report at once.
  request.progress = [](const std::string& line) {
    std::cerr << "terasim compare: " + line + "\n";
  };
  context.SetNetworkBounds(request);
  context.SetFoldedGeneration(request);

  // The simulator's full result for each family's best candidate so far.
  std::map<Family, std::shared_ptr<SimResult>> best_results;
  std::map<Family, double> best_times;
  // The winner so far: of the families' bests the least time, the first in request order among
  // equal ones (as the winner is chosen below); it keeps its schedule and its trace rows, for
  // the trace, the timeline and the stored ops. Without --store-ops all a result drops its
  // trace rows once it is slower than the winner so far: it can never become the winner (the
  // winner's time only falls), nor can a replay reused from it (the same time). Whatever order
  // the families' threads (--jobs) report in, the winner and what it keeps are the same.
  const bool keep_every_trace = store.has_value() && store_ops == "all";
  std::map<Family, size_t> request_index;
  for (size_t i = 0; i < request.families.size(); ++i)
    request_index.emplace(request.families[i], i);
  const auto ahead = [&](Family a, Family b) {
    return best_times[a] < best_times[b] ||
           (best_times[a] == best_times[b] && request_index[a] < request_index[b]);
  };
  std::optional<Family> winning;
  Schedule winning_schedule;
  // Every replay's time by its generation options, across families (megatron's candidates are
  // often interleaved's): a schedule generated from the same options is the same schedule, and
  // its replay the same. The result itself is kept where it is some family's best.
  struct Replayed {
    double seconds = 0;
    std::shared_ptr<SimResult> result;
  };
  std::map<std::string, Replayed> replayed;
  // The replays by the generated schedule's fingerprint (ScheduleFingerprint).
  std::map<std::pair<uint64_t, uint64_t>, std::map<std::string, Replayed>::iterator> by_fingerprint;
  // Under `mutex`, as the families' threads call at once; a replay runs outside it, and one
  // of a schedule already being replayed (by its options or fingerprint) waits for that one.
  std::mutex mutex;
  std::condition_variable replay_done;
  std::set<std::string> replaying;
  std::set<std::pair<uint64_t, uint64_t>> replaying_fingerprints;
  StrategySearch search(context.model(), context.cluster(), context.device(), context.cost());
  std::vector<FamilyResult> families = search.Run(
      request, [&](const Candidate& c, const Schedule& schedule, const MemoryEstimate& memory) {
        const std::string key =
            fmt::format("{} {} {}", ScheduleConfigJson(c.options).dump(),
                        DpStepName(ResolvedDpStep(c.options)), c.options.dp_bucket_bytes);
        std::optional<std::pair<uint64_t, uint64_t>> fingerprint;
        std::unique_lock<std::mutex> lock(mutex);
        std::map<std::string, Replayed>::iterator at;
        for (;;) {
          at = replayed.find(key);
          if (at == replayed.end() && fingerprint) {
            // Other options may generate the very same schedule: replayed once.
            const auto same = by_fingerprint.find(*fingerprint);
            if (same != by_fingerprint.end()) {
              at = replayed.emplace(key, same->second->second).first;
              request.progress(
                  fmt::format("{} {}: the same schedule as an earlier candidate; its replay reused",
                              FamilyName(c.family), DegreesText(c.options)));
            }
          }
          if (at != replayed.end()) {
            // A replay whose result was let go is replayed again where it is a family's best.
            const auto best = best_times.find(c.family);
            const bool better = best == best_times.end() || at->second.seconds < best->second;
            if (!better || at->second.result) break;
          } else if (!fingerprint) {
            lock.unlock();
            fingerprint = ScheduleFingerprint(schedule);
            lock.lock();
            continue;
          }
          if (replaying.count(key) || (fingerprint && replaying_fingerprints.count(*fingerprint))) {
            replay_done.wait(lock);
            continue;
          }
          // Replay it here.
          if (!fingerprint) {
            lock.unlock();
            fingerprint = ScheduleFingerprint(schedule);
            lock.lock();
            continue;
          }
          replaying.insert(key);
          replaying_fingerprints.insert(*fingerprint);
          lock.unlock();
          std::shared_ptr<SimResult> result;
          try {
            result = std::make_shared<SimResult>(context.Evaluate(schedule, &memory));
          } catch (...) {
            lock.lock();
            replaying.erase(key);
            replaying_fingerprints.erase(*fingerprint);
            replay_done.notify_all();
            throw;
          }
          lock.lock();
          replaying.erase(key);
          replaying_fingerprints.erase(*fingerprint);
          at = replayed
                   .insert_or_assign(
                       key, Replayed{NsToSeconds(result->iteration_time_ns), std::move(result)})
                   .first;
          by_fingerprint[*fingerprint] = at;
          replay_done.notify_all();
          break;
        }
        Replayed& r = at->second;
        const auto best = best_times.find(c.family);
        if (best == best_times.end() || r.seconds < best->second) {
          best_times[c.family] = r.seconds;
          best_results[c.family] = r.result;
          const auto drop_rows_if_slower = [&](const std::shared_ptr<SimResult>& result,
                                               double seconds, Family than) {
            if (!keep_every_trace && result != best_results[than] && seconds > best_times[than]) {
              result->trace.rows = {};
            }
          };
          if (!winning || *winning == c.family || ahead(c.family, *winning)) {
            if (winning && *winning != c.family) {
              drop_rows_if_slower(best_results[*winning], best_times[*winning], c.family);
            }
            winning = c.family;
            winning_schedule = schedule;
          } else {
            drop_rows_if_slower(r.result, r.seconds, *winning);
          }
        }
        const double seconds = r.seconds;
        // Only the families' bests keep their results (entries of one fingerprint share theirs).
        std::set<const SimResult*> kept;
        for (const auto& [family, result] : best_results) kept.insert(result.get());
        for (auto& [ignored, entry] : replayed) {
          if (!kept.count(entry.result.get())) entry.result.reset();
        }
        return seconds;
      });
  replayed.clear();

  std::vector<CompareRow> rows;
  double best_without = 0;
  for (FamilyResult& f : families) {
    CompareRow row;
    row.family = f.family;
    row.found = f.found;
    row.reason = f.reason;
    row.candidates = f.candidates;
    row.pruned_by_bound = f.pruned_by_bound;
    row.pruned_by_budget = f.pruned_by_budget;
    row.pruned_by_ops = f.pruned_by_ops;
    for (const Evaluation& e : f.tried) {
      if (e.evaluated) {
        ++row.simulated;
      } else if (e.note.rfind("cannot generate", 0) == 0) {
        ++row.not_generated;
      } else {
        ++row.over_memory;
        if (e.memory.devices.empty()) ++row.over_memory_analytic;
      }
    }
    if (f.found) {
      row.evaluation = f.best;
      std::shared_ptr<SimResult>& result = best_results[f.family];
      row.result = result.use_count() == 1 ? std::move(*result) : *result;
      result.reset();
      if (winning == f.family) row.schedule = std::move(winning_schedule);
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

  RemoveStaleOutputs(out_dir);
  if (winner < 0) {
    const Closest closest = FindClosest(families, context.model(), context.device(), request.batch);
    std::string message =
        fmt::format("no configuration of {} fits in memory on {}",
                    strategy == "all" ? "any family" : strategy, context.cluster().Spec());
    if (closest.any) {
      message +=
          fmt::format("; the closest is {} {} ({}): peak {} of {} per GPU, largest term {} ({})",
                      FamilyName(closest.family), DegreesText(closest.candidate.options),
                      UnitsText(closest.candidate), FormatGiB(closest.peak),
                      FormatGiB(closest.capacity), closest.term, FormatGiB(closest.term_bytes));
    }
    if (vm["json"].as<bool>()) {
      nlohmann::json j = {{"model", context.model().name},
                          {"cluster", context.cluster().Spec()},
                          {"batch", request.batch},
                          {"winner", ""},
                          {"fits", false},
                          {"message", message}};
      if (closest.any) {
        j["closest"] = {
            {"family", FamilyName(closest.family)}, {"dp", closest.candidate.options.dp},
            {"pp", closest.candidate.options.pp},   {"tp", closest.candidate.options.tp},
            {"peak_memory_bytes", closest.peak},    {"capacity_bytes", closest.capacity},
            {"largest_term", closest.term},         {"largest_term_bytes", closest.term_bytes}};
      }
      PrintJson(j);
    } else {
      for (const CompareRow& row : rows) {
        std::cerr << fmt::format("terasim compare: {:<12} {}; {}\n", FamilyName(row.family),
                                 row.reason, SearchText(row));
      }
    }
    std::cerr << "terasim compare: " << message << "\n";
    return kExitNothingFits;
  }

  // Store every row in one transaction.
  RunConfig base_config;
  base_config.command = "compare";
  base_config.model = context.model().name;
  base_config.cluster = context.cluster().Spec();
  base_config.batch = request.batch;
  base_config.network = NetworkModeName(context.network());
  base_config.cost_model = context.cost().Name();
  base_config.options = {{"granularity", request.granularity},
                         {"families", strategy},
                         {"max_evaluations", request.max_evaluations_per_family},
                         {"store_ops", store_ops}};
  if (!context.fold()) base_config.options["fold"] = false;  // recorded when not the default
  const nlohmann::json config = RunConfigJson(base_config);
  std::vector<std::pair<RunRecord, const std::vector<TraceRow>*>> runs;
  const std::vector<TraceRow> winner_ops =
      store_ops == "winner"
          ? StageRepresentativeRows(rows[winner].schedule, rows[winner].result.trace.rows)
          : std::vector<TraceRow>{};
  for (size_t i = 0; i < rows.size(); ++i) {
    const CompareRow& row = rows[i];
    if (!row.found) continue;
    const Candidate& c = row.evaluation.candidate;
    RunConfig run_config = base_config;
    run_config.schedule = ScheduleConfigJson(c.options);
    RunRecord r;
    r.kind = "sim";
    r.model = context.model().name;
    r.cluster = context.cluster().Spec();
    r.strategy = FamilyName(row.family);
    r.dp = c.options.dp;
    r.pp = c.options.pp;
    r.tp = c.options.tp;
    r.microbatches = run_config.schedule["microbatches"].get<int>();
    r.slices = c.units;
    r.slicing = c.slicing;
    r.config = RunConfigJson(run_config);
    r.label = "terasim compare";
    r.metrics = {{"iteration_time_s", row.evaluation.iteration_s},
                 {"tflops_per_gpu", row.result.tflops_per_gpu},
                 {"bubble_fraction", row.result.bubble_fraction},
                 {"peak_memory_bytes", static_cast<double>(row.evaluation.memory.peak_bytes)},
                 {"speedup", row.speedup}};
    const std::vector<TraceRow>* ops = nullptr;
    if (store_ops == "all") ops = &row.result.trace.rows;
    if (store_ops == "winner" && static_cast<int>(i) == winner) ops = &winner_ops;
    runs.emplace_back(std::move(r), ops);
  }
  std::vector<int64_t> run_ids;
  int64_t comparison_id = -1;
  if (store && !runs.empty()) {
    comparison_id = store->WriteComparisonWithRuns(
        fmt::format("compare {} on {}", context.model().name, context.cluster().Spec()), config,
        runs, &run_ids);
  }

  // The chart, the winner's timeline and its trace.
  std::string chart_path, trace_path, gantt_path;
  if (!out_dir.empty()) {
    std::error_code dir_error;
    std::filesystem::create_directories(out_dir, dir_error);
    if (dir_error) ThrowInput("--out: {}: {}", out_dir, dir_error.message());
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
    chart_path = out_dir + "/" + kChartFile;
    WriteFileAtomically(
        chart_path,
        SvgBarChart(fmt::format("{} on {}, batch {}: iteration time per strategy",
                                context.model().name, context.cluster().Spec(), request.batch),
                    "iteration time (s), simulated", bars));
    if (!vm["no-trace"].as<bool>()) {
      const CompareRow& best = rows[winner];
      trace_path = out_dir + "/" + kTraceFile;
      // The rows' links, for the trace's flows and RECV split and the timeline's RECV waits.
      const TraceLinks links = LinkTrace(best.schedule, best.result.trace);
      WriteChromeTraceFile(trace_path, best.result.trace, links);
      GanttOptions gantt;
      gantt.title = fmt::format("{} {}: pipeline timeline of the winner", FamilyName(best.family),
                                DegreesText(best.evaluation.candidate.options));
      gantt.subtitle =
          fmt::format("{} on {}, batch {}, {}", context.model().name, context.cluster().Spec(),
                      request.batch, UnitsText(best.evaluation.candidate));
      gantt.critical_path = best.result.critical_path;
      for (const auto& [index, start] : RecvTransferStarts(best.result.trace, links)) {
        gantt.recv_transfer_start[best.result.trace.rows[index].key] = start;
      }
      gantt_path = out_dir + "/" + kGanttFile;
      WriteFileAtomically(gantt_path, GanttSvg(best.result.trace, gantt));
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
                  {"schedule", StrategyName(c.options.strategy)},
                  {"recipe", RecipeText(c.options)},
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
      j["search"] = {{"candidates", row.candidates},
                     {"simulated", row.simulated},
                     {"over_memory", row.over_memory},
                     {"not_generated", row.not_generated},
                     {"pruned_by_bound", row.pruned_by_bound},
                     {"pruned_by_budget", row.pruned_by_budget},
                     {"over_memory_analytic", row.over_memory_analytic},
                     {"pruned_by_ops", row.pruned_by_ops}};
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
               {"timeline", gantt_path},
               {"wall_time_s", wall}});
    return 0;
  }
  std::cout << fmt::format("{} on {}, batch {} ({} network, {})\n", context.model().name,
                           context.cluster().Spec(), request.batch,
                           NetworkModeName(context.network()), context.cost().Name());
  std::cout << fmt::format("  {:<14} {:<9} {:<12} {:>9} {:>8} {:>8} {:>7} {:>10} {:>5}\n",
                           "strategy", "DxPxT", "units", "time (s)", "speedup", "TFLOP/s", "bubble",
                           "peak mem", "fits");
  for (const CompareRow& row : rows) {
    if (!row.found) {
      std::cout << fmt::format("  {:<14} {}\n", FamilyName(row.family), row.reason);
      continue;
    }
    const Candidate& c = row.evaluation.candidate;
    std::cout << fmt::format(
        "  {:<14} {:<9} {:<12} {:>9.3f} {:>7.2f}x {:>8.2f} {:>6.1f}% {:>10} {:>5}\n",
        FamilyName(row.family), DegreesText(c.options), UnitsText(c), row.evaluation.iteration_s,
        row.speedup, row.result.tflops_per_gpu, 100 * row.result.bubble_fraction,
        FormatGiB(row.evaluation.memory.peak_bytes), row.evaluation.fits ? "yes" : "no");
    // With D >= 2, the data-parallel step it ran (GenerateOptions::dp_step).
    const std::string dp_step =
        c.options.dp > 1 ? "; dp step: " + DpStepName(ResolvedDpStep(c.options)) : "";
    std::cout << fmt::format("  {:<14} {}; recipe: {}{}\n", "", StrategyName(c.options.strategy),
                             RecipeText(c.options), dp_step);
  }
  std::cout << "  search:\n";
  for (const CompareRow& row : rows) {
    std::cout << fmt::format("    {:<14} {}\n", FamilyName(row.family), SearchText(row));
  }
  if (rows[winner].family == Family::kTeraPipe) {
    std::cout << fmt::format("  terapipe slicing: {}\n", rows[winner].evaluation.candidate.slicing);
  }
  if (comparison_id >= 0) {
    std::cout << fmt::format("  stored as comparison {} in {}\n", comparison_id, db_path);
  }
  if (!chart_path.empty()) std::cout << fmt::format("  chart: {}\n", chart_path);
  if (!gantt_path.empty()) std::cout << fmt::format("  winner's timeline: {}\n", gantt_path);
  if (!trace_path.empty()) std::cout << fmt::format("  winner's trace: {}\n", trace_path);
  std::cout << fmt::format("  ({:.1f} s)\n", wall);
  return 0;
}

}  // namespace terasim::cli

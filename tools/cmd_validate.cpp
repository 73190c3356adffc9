// terasim validate: runs a schedule for real (exec), simulates it with a calibrated compute
// model on the `local` topology (topologies/data/local.json, one device per core), and reports
// how well the prediction matches: the iteration time error, per-op-kind duration errors by
// slice length and context, the bubble fraction of each, and how much the two critical paths
// agree (traces/validation.h). It also replays the schedule with each compute op's measured
// duration (sim/trace_durations.h), so that the schedule / network model's error shows apart
// from the compute model's. Optionally stores the runs and the comparison in the results
// store and writes a predicted-vs-measured scatter (SVG) and the three traces to a folder.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "exec/executor.h"
#include "exec/profiler.h"
#include "models/calibrated_cost.h"
#include "models/calibration_fit.h"
#include "models/device_spec.h"
#include "models/errors.h"
#include "models/model_card.h"
#include "models/roofline_cost.h"
#include "schedule/checker.h"
#include "schedule/pir_format.h"
#include "sim/jitter.h"
#include "sim/op_work.h"
#include "sim/simulator.h"
#include "sim/trace_durations.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/progress_line.h"
#include "topologies/topology.h"
#include "traces/code_version.h"
#include "traces/svg_scatter.h"
#include "traces/traces.h"
#include "traces/validation.h"

namespace terasim::cli {
namespace {

nlohmann::json SummaryJson(const TraceSummary& s) {
  return {{"iteration_time_s", NsToSeconds(s.iteration_ns)},
          {"bubble_fraction", s.bubble_fraction},
          {"device_bubble", s.device_bubble},
          {"critical_path_ops", s.critical_path.size()}};
}

nlohmann::json ComparisonJson(const TraceComparison& c) {
  nlohmann::json groups = nlohmann::json::array();
  for (const DurationGroup& g : c.groups) {
    groups.push_back({{"kind", std::string(OpKindName(g.kind))},
                      {"tokens", g.tokens},
                      {"context", g.context},
                      {"count", g.count},
                      {"measured_s", g.measured_ns / 1e9},
                      {"predicted_s", g.predicted_ns / 1e9},
                      {"rel_error", g.rel_error}});
  }
  return {{"iteration_error", c.iteration_error},
          {"bubble_error", c.bubble_error},
          {"critical_path_agreement", c.critical_path_agreement},
          {"compute_mean_abs_rel_error", c.compute_mean_abs_rel_error},
          {"measured", SummaryJson(c.measured)},
          {"predicted", SummaryJson(c.predicted)},
          {"groups", groups}};
}

// Rows of `trace` whose iteration is in [first, ...), for the store.
std::vector<TraceRow> RowsFrom(const Trace& trace, int first) {
  std::vector<TraceRow> rows;
  for (const TraceRow& r : trace.rows) {
    if (r.iteration >= first) rows.push_back(r);
  }
  return rows;
}

// The profile grid of --calib auto: the micro-batch sizes, slice lengths and contexts of the
// schedule's compute ops (plus length 1, so that every base curve has two lengths), on a shard
// of as many layers as its largest stage op holds.
ProfileGrid ScheduleGrid(const Schedule& schedule) {
  std::set<int> rows;
  std::set<int64_t> tokens = {1}, contexts = {0};
  int layers = 1;
  // The most slices a device holds between their forwards and backwards.
  // A slice is held from its first forward op on a device (of any layer or block) to its
  // first backward op there; ops are listed per device in the order they run.
  size_t in_flight = 1;
  std::map<int, std::set<std::tuple<int, int, int64_t, int64_t>>> live;  // device -> slices
  for (const Op& op : schedule.ops) {
    const auto slice = std::make_tuple(op.stage, op.microbatch, op.tokens.begin, op.tokens.end);
    if (op.kind == OpKind::kFwd) {
      live[op.device].insert(slice);
      in_flight = std::max(in_flight, live[op.device].size());
    }
    if (IsBackwardCoverage(op.kind)) live[op.device].erase(slice);
    if (!IsCompute(op.kind)) continue;
    const SliceWork work = SliceWorkOf(schedule, op);
    if (work.pass == Pass::kOptimizer) continue;  // profiled once per round anyway
    layers = std::max(layers, work.layers);
    rows.insert(work.rows);
    tokens.insert(work.tokens);
    contexts.insert(work.context);
  }
  ProfileGrid grid;
  grid.rows.assign(rows.begin(), rows.end());
  grid.tokens.assign(tokens.begin(), tokens.end());
  grid.contexts.assign(contexts.begin(), contexts.end());
  grid.layers = layers;
  grid.in_flight = static_cast<int>(in_flight);
  return grid;
}

// --calib auto: `iterations` rounds, each one run of the schedule (its warm-up iterations, then
// one measured) and one profile of every grid point. Returns the run as one trace (round 0's
// warm-up iterations, then measured iteration warmup + r of round r) and fills `points`.
ExecResult RunInterleaved(const Schedule& schedule, const ModelCard& card, const ExecOptions& exec,
                          const std::string& backend, int warmup, int iterations,
                          std::vector<ProfilePoint>* points) {
  ExecResult all;
  const ProfileGrid shape = ScheduleGrid(schedule);
  const BackendFactory factory = MakeBackendFactory(backend, card, exec.seed);
  ExecOptions round_exec = exec;
  round_exec.iterations = warmup + 1;
  TimeNs end_ns = 0;
  ProgressLine progress("validate", "rounds", iterations, std::cerr, StderrIsTerminal());
  for (int round = 0; round < iterations; ++round) {
    ExecResult one = ExecuteInProcess(schedule, card, round_exec, backend);
    if (round == 0) {
      all.losses = one.losses;
      all.trace.metadata = one.trace.metadata;
    }
    // Each round's clock starts at 0: lay the rounds one after another on the timeline.
    const TimeNs offset = end_ns;
    for (TraceRow& row : one.trace.rows) {
      if (row.iteration < warmup && round > 0) continue;
      if (row.iteration == warmup) row.iteration = warmup + round;
      row.start_ns += offset;
      row.end_ns += offset;
      end_ns = std::max(end_ns, row.end_ns);
      all.trace.rows.push_back(std::move(row));
    }
    ProfileGrid grid = shape;
    grid.repetitions = 1;
    // Every round profiles on fresh back ends: each point once untimed first (a fresh back
    // end's first calls pay for first touches of its memory).
    grid.warmup = 1;
    grid.round = round;
    // As many profilers at once as the schedule has devices (threads in the run), so that the
    // cores, caches and memory are shared as in the run.
    const std::vector<ProfilePoint> measured =
        ProfileLayerOnThreads(card, grid, factory, schedule.devices);
    points->insert(points->end(), measured.begin(), measured.end());
    progress.Update(round + 1);
  }
  progress.Finish();
  return all;
}

}  // namespace

int RunValidate(const Args& args) {
  po::options_description options("terasim validate");
  // clang-format off
  options.add_options()
      ("pir", po::value<std::string>()->default_value(""), "schedule file (.pir)")
      ("model", po::value<std::string>()->default_value("", "the schedule's"),
       "model card name or path")
      ("backend", po::value<std::string>()->default_value("cpu"), "executor back end: cpu | cuda")
      ("calib", po::value<std::string>()->default_value(""),
       "calibration table of this back end and model (terasim calibrate; required), or 'auto': "
       "profile the layer here, one round of the schedule's slice shapes between measured "
       "iterations, so that both see the machine at the same moments")
      ("cluster", po::value<std::string>()->default_value("local", "local:DEVICES"),
       "instance type of the simulated machine, one device per node")
      ("network", po::value<std::string>()->default_value("flow"), "flow | analytic")
      ("collectives", po::value<std::string>()->default_value("sim/data/collectives.json"),
       "collective algorithm parameters (relative paths: under the data root)")
      ("iterations", po::value<int>()->default_value(5), "measured iterations (after warm-up)")
      ("warmup", po::value<int>()->default_value(1), "untimed warm-up iterations")
      ("blas-threads", po::value<int>()->default_value(1),
       "OpenBLAS threads per call (1: a device is one core)")
      ("seed", po::value<uint64_t>()->default_value(1), "seed of the weights and the data")
      ("jitter-samples", po::value<int>()->default_value(101),
       "simulate this many iterations with per-device speed factors drawn from the calibration's "
       "speed_factors (and, for the replay, from the run's own iterations) and compare their "
       "median; 0: one iteration at the median speed")
      ("exec-threads", po::value<std::string>()->default_value("auto"),
       "device (one thread per device runs its streams' ops as they become ready: a cpu device "
       "is one core) | stream (one thread per stream) | auto (device where the transport polls "
       "and no op is a collective)")
      ("db", po::value<std::string>()->default_value(""),
       "store the measured and simulated runs and their comparison in this results store")
      ("out", po::value<std::string>()->default_value(""),
       "write scatter.svg and the measured / predicted / replay traces (JSON) to this folder "
       "(and, with --calib auto, calib.json: the table it fitted, profile.csv: what it measured)")
      ("json", po::bool_switch(), "print JSON");
  // clang-format on
  po::positional_options_description positional;
  positional.add("pir", 1);
  po::variables_map vm;
  if (!Parse("validate",
             "FILE.pir --calib CALIB.json [--model M] [--backend cpu] [--db FILE] [--out DIR] "
             "[--json]",
             options, positional, args, vm)) {
    return 0;
  }
  const std::string pir = vm["pir"].as<std::string>();
  const std::string calib_path = vm["calib"].as<std::string>();
  if (pir.empty()) ThrowInput("terasim validate: a schedule FILE.pir is required");
  if (calib_path.empty()) ThrowInput("terasim validate: --calib is required");
  const std::string backend = vm["backend"].as<std::string>();
  const int iterations = vm["iterations"].as<int>();
  const int warmup = vm["warmup"].as<int>();
  if (iterations < 1) ThrowInput("--iterations: must be >= 1");
  if (warmup < 0) ThrowInput("--warmup: must be >= 0");
  const int blas_threads = vm["blas-threads"].as<int>();
  if (blas_threads < 1) ThrowInput("--blas-threads: must be >= 1");
  const int jitter_samples = vm["jitter-samples"].as<int>();
  if (jitter_samples < 0) ThrowInput("--jitter-samples: must be >= 0");

  Schedule schedule = ReadPirFile(pir);
  RequireValidSchedule(schedule);
  const std::string model_name =
      vm["model"].as<std::string>().empty() ? schedule.model : vm["model"].as<std::string>();
  const ModelCard card = LoadModelCard(model_name);
  const bool auto_calib = calib_path == "auto";
  CalibrationTable table;
  if (!auto_calib) {
    table = LoadCalibrationTable(calib_path);
    if (table.model != card.name) {
      std::cerr << fmt::format("terasim validate: warning: {} was measured with {}, not {}\n",
                               calib_path, table.model, card.name);
    }
  }
  const std::string instance = vm["cluster"].as<std::string>();
  if (instance.find(':') != std::string::npos) {
    ThrowInput(
        "--cluster: '{}': give the instance type only; the count is the schedule's {} "
        "devices",
        instance, schedule.devices);
  }
  const std::string cluster_spec = fmt::format("{}:{}", instance, schedule.devices);
  const Cluster cluster = BuildCluster(cluster_spec);
  const ClusterTopology topology(cluster);

  // 1. Run it for real.
  const uint64_t seed = vm["seed"].as<uint64_t>();
  MakeBackendFactory(backend, ModelCard{}, seed);  // an unknown back end fails first
  if (backend == "cpu") SetBlasThreads(blas_threads);
  ExecOptions exec;
  exec.iterations = warmup + iterations;
  exec.seed = seed;
  exec.threads = ParseStreamThreads(vm["exec-threads"].as<std::string>(), "--exec-threads");
  exec.threads_per_device = blas_threads;
  std::cerr << fmt::format("validate: running {} for {} iterations on {}\n", pir, exec.iterations,
                           backend);
  ExecResult measured;
  std::vector<ProfilePoint> points;  // --calib auto's measurements
  if (auto_calib) {
    const ProfileGrid shape = ScheduleGrid(schedule);
    measured = RunInterleaved(schedule, card, exec, backend, warmup, iterations, &points);
    table = FitCalibration(
        points, cluster.Instance().device, card.name,
        fmt::format(
            "terasim validate --calib auto: {} rounds of {} interleaved with its measured "
            "iterations (stack of {} layers, {} slices in flight, blas threads {}); code {}",
            iterations, pir, shape.layers, shape.in_flight, blas_threads, CodeVersion()));
  } else {
    measured = ExecuteInProcess(schedule, card, exec, backend);
  }
  measured.trace.label = fmt::format("{} on {} ({})", pir, card.name, backend);
  // The representative iteration: the median span among the measured ones.
  std::vector<std::pair<TimeNs, int>> spans;
  for (int it = warmup; it < exec.iterations; ++it) {
    spans.push_back({SummarizeTrace(schedule, measured.trace, it).iteration_ns, it});
  }
  std::sort(spans.begin(), spans.end());
  const int median_iteration = spans[(spans.size() - 1) / 2].second;
  Trace measured_steady;  // the measured iterations only, for the durations
  measured_steady.rows = RowsFrom(measured.trace, warmup);

  // 2. Simulate with the calibrated compute model; 3. replay with the measured durations.
  const DeviceSpec device = LoadDeviceSpec(cluster.Instance().device);
  const RooflineCostModel roofline(card, device);
  const CalibratedCostModel calibrated(table, &roofline);
  std::string collectives_path = vm["collectives"].as<std::string>();
  if (!collectives_path.empty() && collectives_path[0] != '/') {
    collectives_path = DataRoot() + "/" + collectives_path;
  }
  SimOptions sim;
  sim.network = ParseNetworkMode(vm["network"].as<std::string>());
  sim.collectives = LoadCollectiveOptions(collectives_path);
  sim.model = &card;
  const SimResult predicted_steady = Simulate(schedule, topology, calibrated, sim);
  SimOptions replay_options = sim;
  replay_options.compute_ns = TraceComputeDurations(schedule, measured_steady, "measured trace");
  const SimResult replay_steady = Simulate(schedule, topology, calibrated, replay_options);
  // With speed jitter: the calibration's factors for the model, the run's own for the replay;
  // both or neither, so that the two compare alike.
  JitterOptions model_jitter;
  model_jitter.samples = jitter_samples;
  model_jitter.seed = seed;
  model_jitter.factors = table.speed_factors;
  model_jitter.origin = auto_calib ? "--calib auto" : calib_path;
  JitterOptions replay_jitter = model_jitter;
  replay_jitter.factors = TraceSpeedFactors(schedule, measured_steady, "measured trace");
  replay_jitter.origin = "measured trace";
  const bool jitter = jitter_samples > 0 && !model_jitter.factors.empty();
  if (jitter_samples > 0 && !jitter) {
    std::cerr << fmt::format(
        "terasim validate: {} has no speed_factors: model and replay at the median speed (no "
        "jitter)\n",
        calib_path);
  }
  std::optional<JitterResult> model_spread;
  std::optional<JitterResult> replay_spread;
  if (jitter) {
    model_spread = SimulateWithJitter(schedule, topology, calibrated, sim, model_jitter);
    if (!replay_jitter.factors.empty()) {
      replay_spread =
          SimulateWithJitter(schedule, topology, calibrated, replay_options, replay_jitter);
    }
  }
  const SimResult& predicted = model_spread ? model_spread->median : predicted_steady;
  SimResult replay = replay_spread ? replay_spread->median : replay_steady;
  replay.trace.metadata["cost_model"] = "measured durations (median per op)";

  const TraceComparison vs_model =
      CompareTraces(schedule, measured.trace, median_iteration, predicted.trace);
  const TraceComparison vs_replay =
      CompareTraces(schedule, measured.trace, median_iteration, replay.trace);
  // The same comparisons at the median speed (no jitter), and what the jitter spread.
  const double measured_s = NsToSeconds(vs_model.measured.iteration_ns);
  const auto error_of = [&](const SimResult& r) {
    return NsToSeconds(r.iteration_time_ns) / measured_s - 1;
  };
  nlohmann::json jitter_json = nullptr;
  if (jitter) {
    jitter_json = {{"samples", jitter_samples},
                   {"model_speed_factors", table.speed_factors},
                   {"model_p10_s", NsToSeconds(model_spread->p10_ns)},
                   {"model_p90_s", NsToSeconds(model_spread->p90_ns)},
                   {"model_without_jitter_s", NsToSeconds(predicted_steady.iteration_time_ns)},
                   {"iteration_error_without_jitter", error_of(predicted_steady)},
                   {"replay_without_jitter_s", NsToSeconds(replay_steady.iteration_time_ns)},
                   {"replay_iteration_error_without_jitter", error_of(replay_steady)}};
    jitter_json["replay_jittered"] = replay_spread.has_value();
    if (replay_spread) {
      jitter_json["replay_p10_s"] = NsToSeconds(replay_spread->p10_ns);
      jitter_json["replay_p90_s"] = NsToSeconds(replay_spread->p90_ns);
    }
  }

  // 4. Outputs: folder, store, report.
  const std::string out_dir = vm["out"].as<std::string>();
  if (!out_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(out_dir, error);
    if (error) ThrowInput("--out: {}: {}", out_dir, error.message());
    std::map<std::string, ScatterSeries> by_kind;
    for (const OpPair& p : vs_model.ops) {
      if (!IsCompute(p.kind)) continue;
      ScatterSeries& s = by_kind[std::string(OpKindName(p.kind))];
      s.name = std::string(OpKindName(p.kind));
      s.measured.push_back(p.measured_ns);
      s.predicted.push_back(p.predicted_ns);
    }
    std::vector<ScatterSeries> series;
    for (auto& [kind, s] : by_kind) series.push_back(std::move(s));
    ScatterOptions scatter;
    scatter.title = fmt::format("{}: compute op times, calibrated model vs measured", pir);
    WriteScatterSvg(out_dir + "/scatter.svg", series, scatter);
    WriteChromeTraceFile(out_dir + "/measured.json", measured.trace);
    WriteChromeTraceFile(out_dir + "/predicted.json", predicted.trace);
    WriteChromeTraceFile(out_dir + "/replay.json", replay.trace);
    if (auto_calib) {
      std::ofstream calib_out(out_dir + "/calib.json");
      calib_out << CalibrationJson(table);
      if (!calib_out.flush()) ThrowInput("--out: {}/calib.json: cannot write", out_dir);
      std::ofstream profile_out(out_dir + "/profile.csv");
      profile_out << "round,thread,pass,rows,tokens,context,time_ns\n";
      for (const ProfilePoint& p : points) {
        profile_out << fmt::format("{},{},{},{},{},{},{:.0f}\n", p.round, p.thread,
                                   PassName(p.pass), p.rows, p.tokens, p.context, p.time_ns);
      }
      if (!profile_out.flush()) ThrowInput("--out: {}/profile.csv: cannot write", out_dir);
    }
  }

  const nlohmann::json config = {{"schedule", pir},
                                 {"model", card.name},
                                 {"backend", backend},
                                 {"calib", calib_path},
                                 {"cluster", cluster_spec},
                                 {"network", NetworkModeName(sim.network)},
                                 {"iterations", iterations},
                                 {"warmup", warmup},
                                 {"blas_threads", blas_threads},
                                 {"exec_threads", measured.trace.metadata["threads"]},
                                 {"jitter_samples", jitter ? jitter_samples : 0}};
  const std::string config_key = "validate " + config.dump();
  nlohmann::json stored = nullptr;
  const std::string db_path = vm["db"].as<std::string>();
  if (!db_path.empty()) {
    ResultStore store = ResultStore::OpenOrCreate(db_path);
    auto record = [&](const std::string& kind, const std::string& label, const std::string& key) {
      RunRecord r;
      r.kind = kind;
      r.model = card.name;
      r.cluster = cluster_spec;
      r.strategy = schedule.shape.strategy;
      r.dp = schedule.shape.dp;
      r.pp = schedule.shape.pp;
      r.tp = schedule.shape.tp;
      r.config = config;
      r.config["run"] = label;
      r.config_key = key;
      r.seed = static_cast<int64_t>(seed);
      r.label = fmt::format("validate {}: {}", pir, label);
      return r;
    };
    RunRecord exec_run = record("exec", "measured", config_key);
    exec_run.metrics = {{"iteration_time_s", NsToSeconds(vs_model.measured.iteration_ns)},
                        {"bubble_fraction", vs_model.measured.bubble_fraction}};
    const int64_t exec_id = store.WriteRun(exec_run, RowsFrom(measured.trace, warmup));
    RunRecord sim_run = record("sim", "calibrated model", config_key);
    sim_run.metrics = {{"iteration_time_s", NsToSeconds(vs_model.predicted.iteration_ns)},
                       {"bubble_fraction", vs_model.predicted.bubble_fraction},
                       {"iteration_error", vs_model.iteration_error},
                       {"critical_path_agreement", vs_model.critical_path_agreement},
                       {"compute_mean_abs_rel_error", vs_model.compute_mean_abs_rel_error}};
    const int64_t sim_id = store.WriteRun(sim_run, predicted.trace.rows);
    RunRecord replay_run = record("sim", "measured durations", config_key + " replay");
    replay_run.metrics = {{"iteration_time_s", NsToSeconds(vs_replay.predicted.iteration_ns)},
                          {"bubble_fraction", vs_replay.predicted.bubble_fraction},
                          {"iteration_error", vs_replay.iteration_error},
                          {"critical_path_agreement", vs_replay.critical_path_agreement}};
    const int64_t replay_id = store.WriteRun(replay_run, replay.trace.rows);
    nlohmann::json comparison = config;
    comparison["calibrated_model"] = ComparisonJson(vs_model);
    comparison["replay"] = ComparisonJson(vs_replay);
    comparison["jitter"] = jitter_json;
    const int64_t comparison_id = store.WriteComparison(fmt::format("validate {}", pir), comparison,
                                                        {exec_id, sim_id, replay_id});
    stored = {{"db", db_path},
              {"exec_run", exec_id},
              {"sim_run", sim_id},
              {"replay_run", replay_id},
              {"comparison", comparison_id}};
  }

  if (vm["json"].as<bool>()) {
    nlohmann::json out = config;
    out["measured_iteration"] = median_iteration;
    out["measured_iteration_times_s"] = nlohmann::json::array();
    for (int it = warmup; it < exec.iterations; ++it) {
      out["measured_iteration_times_s"].push_back(
          NsToSeconds(SummarizeTrace(schedule, measured.trace, it).iteration_ns));
    }
    out["loss"] = measured.losses.front();
    out["iteration_error"] = vs_model.iteration_error;
    out["replay_iteration_error"] = vs_replay.iteration_error;
    out["calibrated_model"] = ComparisonJson(vs_model);
    out["replay"] = ComparisonJson(vs_replay);
    out["jitter"] = jitter_json;
    out["stored"] = stored;
    PrintJson(out);
    return 0;
  }
  std::cout << fmt::format(
      "{}: {} on {} ({} devices), {} measured iterations, median #{}\n"
      "  iteration    measured {:.4f} s   calibrated model {:.4f} s ({:+.1f} %)   replay of "
      "measured durations {:.4f} s ({:+.1f} %)\n"
      "  bubble       measured {:.1f} %   model {:.1f} %   replay {:.1f} %\n"
      "  critical     path agreement: model {:.2f}, replay {:.2f} ({} measured ops)\n"
      "  compute ops  mean |error| {:.1f} % (calibrated model)\n",
      pir, card.name, backend, schedule.devices, iterations, median_iteration,
      NsToSeconds(vs_model.measured.iteration_ns), NsToSeconds(vs_model.predicted.iteration_ns),
      100 * vs_model.iteration_error, NsToSeconds(vs_replay.predicted.iteration_ns),
      100 * vs_replay.iteration_error, 100 * vs_model.measured.bubble_fraction,
      100 * vs_model.predicted.bubble_fraction, 100 * vs_replay.predicted.bubble_fraction,
      vs_model.critical_path_agreement, vs_replay.critical_path_agreement,
      vs_model.measured.critical_path.size(), 100 * vs_model.compute_mean_abs_rel_error);
  if (jitter) {
    double low = table.speed_factors[0][0], high = low;
    for (const auto& row : table.speed_factors) {
      for (double f : row) {
        low = std::min(low, f);
        high = std::max(high, f);
      }
    }
    std::cout << fmt::format(
        "  jitter       median of {} iterations with per-device speed factors ({} profiled rounds, "
        "{:.2f}-{:.2f}; replay: {}); at the median speed: model {:.4f} s ({:+.1f} %), replay "
        "{:.4f} s ({:+.1f} %)\n",
        jitter_samples, table.speed_factors.size(), low, high,
        replay_spread ? "the run's own iterations" : "none, no whole iteration in the trace",
        NsToSeconds(predicted_steady.iteration_time_ns), 100 * error_of(predicted_steady),
        NsToSeconds(replay_steady.iteration_time_ns), 100 * error_of(replay_steady));
  }
  std::cout << "  kind        tokens  context  ops   measured ms  model ms   error\n";
  for (const DurationGroup& g : vs_model.groups) {
    if (!IsCompute(g.kind)) continue;
    std::cout << fmt::format("  {:<10} {:>7} {:>8} {:>4} {:>13.3f} {:>9.3f} {:>+7.1f} %\n",
                             OpKindName(g.kind), g.tokens, g.context, g.count, g.measured_ns / 1e6,
                             g.predicted_ns / 1e6, 100 * g.rel_error);
  }
  if (!stored.is_null()) {
    std::cout << fmt::format("  stored       runs {}, {}, {} and comparison {} in {}\n",
                             stored["exec_run"].get<int64_t>(), stored["sim_run"].get<int64_t>(),
                             stored["replay_run"].get<int64_t>(),
                             stored["comparison"].get<int64_t>(), db_path);
  }
  return 0;
}

}  // namespace terasim::cli

#include "tools/validation/validation_run.h"

#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "models/calibration_fit.h"
#include "models/device_spec.h"
#include "models/errors.h"
#include "models/roofline_cost.h"
#include "sim/op_work.h"
#include "sim/trace_durations.h"
#include "tools/progress_line.h"
#include "topologies/topology.h"
#include "traces/atomic_file.h"
#include "traces/code_version.h"
#include "traces/gantt_svg.h"
#include "traces/svg_scatter.h"
#include "traces/traces.h"

namespace terasim {

namespace {

nlohmann::json SummaryJson(const TraceSummary& s) {
  return {{"iteration_time_s", NsToSeconds(s.iteration_ns)},
          {"bubble_fraction", s.bubble_fraction},
          {"device_bubble", s.device_bubble},
          {"critical_path_ops", s.critical_path.size()}};
}

}  // namespace

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

namespace {

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
  cli::ProgressLine progress("validate", "rounds", iterations, std::cerr, cli::StderrIsTerminal());
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

int Cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

void WarnIfLoaded(const char* when, std::optional<double> load, int cores) {
  if (!load || *load <= cores) return;
  std::cerr << fmt::format(
      "terasim validate: warning: load average {:.2f} {} the run is above the {} cores: other "
      "work shares the machine, so the measurement runs slower than the model of an idle one\n",
      *load, when, cores);
}

}  // namespace

std::optional<double> LoadAverage1m() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  if (!(in >> load)) return std::nullopt;
  return load;
}

ValidationResult RunValidation(const Schedule& schedule, const ModelCard& card,
                               const ValidationOptions& o) {
  ValidationResult v;
  const bool auto_calib = o.calib_path == "auto";
  if (!auto_calib) {
    v.table = LoadCalibrationTable(o.calib_path);
    if (v.table.model != card.name) {
      std::cerr << fmt::format("terasim validate: warning: {} was measured with {}, not {}\n",
                               o.calib_path, v.table.model, card.name);
    }
  }
  if (o.instance.find(':') != std::string::npos) {
    ThrowInput(
        "--cluster: '{}': give the instance type only; the count is the schedule's {} "
        "devices",
        o.instance, schedule.devices);
  }
  v.cluster_spec = fmt::format("{}:{}", o.instance, schedule.devices);
  const Cluster cluster = BuildCluster(v.cluster_spec);
  const ClusterTopology topology(cluster);

  // 1. Run it for real.
  MakeBackendFactory(o.backend, ModelCard{}, o.seed);  // an unknown back end fails first
  if (o.backend == "cpu") SetBlasThreads(o.blas_threads);
  ExecOptions exec;
  exec.iterations = o.warmup + o.iterations;
  exec.seed = o.seed;
  exec.threads = o.threads;
  exec.threads_per_device = o.blas_threads;
  std::cerr << fmt::format("validate: running {} for {} iterations on {}\n", o.pir, exec.iterations,
                           o.backend);
  v.cores = Cores();
  v.load_before = LoadAverage1m();
  WarnIfLoaded("before", v.load_before, v.cores);
  if (auto_calib) {
    const ProfileGrid shape = ScheduleGrid(schedule);
    v.measured = RunInterleaved(schedule, card, exec, o.backend, o.warmup, o.iterations, &v.points);
    v.table = FitCalibration(
        v.points, cluster.Instance().device, card.name,
        fmt::format(
            "terasim validate --calib auto: {} rounds of {} interleaved with its measured "
            "iterations (stack of {} layers, {} slices in flight, blas threads {}); code {}",
            o.iterations, o.pir, shape.layers, shape.in_flight, o.blas_threads, CodeVersion()));
  } else {
    v.measured = ExecuteInProcess(schedule, card, exec, o.backend);
  }
  v.load_after = LoadAverage1m();
  WarnIfLoaded("after", v.load_after, v.cores);
  v.measured.trace.label = fmt::format("{} on {} ({})", o.pir, card.name, o.backend);
  // The representative iteration: the median span among the measured ones.
  std::vector<std::pair<TimeNs, int>> spans;
  for (int it = o.warmup; it < exec.iterations; ++it) {
    const TimeNs span = SummarizeTrace(schedule, v.measured.trace, it).iteration_ns;
    spans.push_back({span, it});
    v.measured_iteration_times_s.push_back(NsToSeconds(span));
  }
  std::sort(spans.begin(), spans.end());
  v.median_iteration = spans[(spans.size() - 1) / 2].second;
  Trace measured_steady;  // the measured iterations only, for the durations
  measured_steady.rows = RowsFrom(v.measured.trace, o.warmup);

  // 2. Simulate with the calibrated compute model; 3. replay with the measured durations.
  const DeviceSpec device = LoadDeviceSpec(cluster.Instance().device);
  const RooflineCostModel roofline(card, device);
  const CalibratedCostModel calibrated(v.table, &roofline);
  SimOptions sim;
  sim.network = ParseNetworkMode(o.network);
  sim.collectives = LoadCollectiveOptions(o.collectives_path);
  sim.model = &card;
  v.predicted_steady = Simulate(schedule, topology, calibrated, sim);
  SimOptions replay_options = sim;
  replay_options.compute_ns = TraceComputeDurations(schedule, measured_steady, "measured trace");
  v.replay_steady = Simulate(schedule, topology, calibrated, replay_options);
  // With speed jitter: the calibration's factors for the model, the run's own for the replay;
  // both or neither, so that the two compare alike.
  JitterOptions model_jitter;
  model_jitter.samples = o.jitter_samples;
  model_jitter.seed = o.seed;
  model_jitter.factors = v.table.speed_factors;
  model_jitter.origin = auto_calib ? "--calib auto" : o.calib_path;
  JitterOptions replay_jitter = model_jitter;
  replay_jitter.factors = TraceSpeedFactors(schedule, measured_steady, "measured trace");
  replay_jitter.origin = "measured trace";
  v.jitter = o.jitter_samples > 0 && !model_jitter.factors.empty();
  if (o.jitter_samples > 0 && !v.jitter) {
    std::cerr << fmt::format(
        "terasim validate: {} has no speed_factors: model and replay at the median speed (no "
        "jitter)\n",
        o.calib_path);
  }
  if (v.jitter) {
    v.model_spread = SimulateWithJitter(schedule, topology, calibrated, sim, model_jitter);
    if (!replay_jitter.factors.empty()) {
      v.replay_spread =
          SimulateWithJitter(schedule, topology, calibrated, replay_options, replay_jitter);
    }
  }
  v.predicted = v.model_spread ? v.model_spread->median : v.predicted_steady;
  v.replay = v.replay_spread ? v.replay_spread->median : v.replay_steady;
  v.replay.trace.metadata["cost_model"] = "measured durations (median per op)";

  v.vs_model = CompareTraces(schedule, v.measured.trace, v.median_iteration, v.predicted.trace);
  v.vs_replay = CompareTraces(schedule, v.measured.trace, v.median_iteration, v.replay.trace);
  // The same comparisons at the median speed (no jitter), and what the jitter spread.
  const double measured_s = NsToSeconds(v.vs_model.measured.iteration_ns);
  const auto error_of = [&](const SimResult& r) {
    return NsToSeconds(r.iteration_time_ns) / measured_s - 1;
  };
  v.jitter_json = nullptr;
  if (v.jitter) {
    v.jitter_json = {{"samples", o.jitter_samples},
                     {"model_speed_factors", v.table.speed_factors},
                     {"model_p10_s", NsToSeconds(v.model_spread->p10_ns)},
                     {"model_p90_s", NsToSeconds(v.model_spread->p90_ns)},
                     {"model_without_jitter_s", NsToSeconds(v.predicted_steady.iteration_time_ns)},
                     {"iteration_error_without_jitter", error_of(v.predicted_steady)},
                     {"replay_without_jitter_s", NsToSeconds(v.replay_steady.iteration_time_ns)},
                     {"replay_iteration_error_without_jitter", error_of(v.replay_steady)}};
    v.jitter_json["replay_jittered"] = v.replay_spread.has_value();
    if (v.replay_spread) {
      v.jitter_json["replay_p10_s"] = NsToSeconds(v.replay_spread->p10_ns);
      v.jitter_json["replay_p90_s"] = NsToSeconds(v.replay_spread->p90_ns);
    }
  }
  v.config = {{"schedule", o.pir},
              {"model", card.name},
              {"backend", o.backend},
              {"calib", o.calib_path},
              {"cluster", v.cluster_spec},
              {"network", NetworkModeName(sim.network)},
              {"iterations", o.iterations},
              {"warmup", o.warmup},
              {"blas_threads", o.blas_threads},
              {"exec_threads", v.measured.trace.metadata["threads"]},
              {"jitter_samples", v.jitter ? o.jitter_samples : 0}};
  return v;
}

void WriteValidationFolder(const std::string& out_dir, const ValidationOptions& o,
                           const ValidationResult& v) {
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) ThrowInput("--out: {}: {}", out_dir, error.message());
  std::map<std::string, ScatterSeries> by_kind;
  for (const OpPair& p : v.vs_model.ops) {
    if (!IsCompute(p.kind)) continue;
    ScatterSeries& s = by_kind[std::string(OpKindName(p.kind))];
    s.name = std::string(OpKindName(p.kind));
    s.measured.push_back(p.measured_ns);
    s.predicted.push_back(p.predicted_ns);
  }
  std::vector<ScatterSeries> series;
  for (auto& [kind, s] : by_kind) series.push_back(std::move(s));
  ScatterOptions scatter;
  scatter.title = fmt::format("{}: compute op times, calibrated model vs measured", o.pir);
  WriteScatterSvg(out_dir + "/scatter.svg", series, scatter);
  WriteChromeTraceFile(out_dir + "/measured.json", v.measured.trace);
  WriteChromeTraceFile(out_dir + "/predicted.json", v.predicted.trace);
  WriteChromeTraceFile(out_dir + "/replay.json", v.replay.trace);
  // The measured (median) iteration and the two simulated ones as timelines on one time axis:
  // each its own file, all drawn with the longest of the three spans.
  struct Timeline {
    const char* file;
    const Trace* trace;
    int iteration;
    const char* what;
  };
  const Timeline timelines[] = {
      {"measured.gantt.svg", &v.measured.trace, v.median_iteration, "measured (median iteration)"},
      {"predicted.gantt.svg", &v.predicted.trace, 0, "calibrated model"},
      {"replay.gantt.svg", &v.replay.trace, 0, "replay of the measured durations"}};
  TimeNs axis_ns = 0;
  for (const Timeline& t : timelines) {
    TimeNs first = INT64_MAX, last = INT64_MIN;
    for (const TraceRow& r : t.trace->rows) {
      if (r.iteration != t.iteration) continue;
      first = std::min(first, r.start_ns);
      last = std::max(last, r.end_ns);
    }
    if (last > first) axis_ns = std::max(axis_ns, last - first);
  }
  for (const Timeline& t : timelines) {
    GanttOptions gantt;
    gantt.title = fmt::format("{}: {}", o.pir, t.what);
    gantt.subtitle = "measured and simulated timelines share one time axis";
    gantt.iteration = t.iteration;
    gantt.axis_span_ns = axis_ns;
    WriteFileAtomically(out_dir + "/" + t.file, GanttSvg(*t.trace, gantt));
  }
  if (o.calib_path == "auto") {
    WriteFileAtomically(out_dir + "/calib.json", CalibrationJson(v.table));
    AtomicFile profile_out(out_dir + "/profile.csv");
    profile_out.stream() << "round,thread,pass,rows,tokens,context,time_ns\n";
    for (const ProfilePoint& p : v.points) {
      profile_out.stream() << fmt::format("{},{},{},{},{},{},{:.0f}\n", p.round, p.thread,
                                          PassName(p.pass), p.rows, p.tokens, p.context, p.time_ns);
    }
    profile_out.Commit();
  }
}

nlohmann::json StoreValidation(const std::string& db_path, const Schedule& schedule,
                               const ModelCard& card, const ValidationOptions& o,
                               const ValidationResult& v) {
  const std::string config_key = "validate " + v.config.dump();
  ResultStore store = ResultStore::OpenOrCreate(db_path);
  auto record = [&](const std::string& kind, const std::string& label, const std::string& key) {
    RunRecord r;
    r.kind = kind;
    r.model = card.name;
    r.cluster = v.cluster_spec;
    r.strategy = schedule.shape.strategy;
    r.dp = schedule.shape.dp;
    r.pp = schedule.shape.pp;
    r.tp = schedule.shape.tp;
    r.config = v.config;
    r.config["run"] = label;
    r.config_key = key;
    r.seed = static_cast<int64_t>(o.seed);
    r.label = fmt::format("validate {}: {}", o.pir, label);
    return r;
  };
  RunRecord exec_run = record("exec", "measured", config_key);
  exec_run.metrics = {{"iteration_time_s", NsToSeconds(v.vs_model.measured.iteration_ns)},
                      {"bubble_fraction", v.vs_model.measured.bubble_fraction}};
  const int64_t exec_id = store.WriteRun(exec_run, RowsFrom(v.measured.trace, o.warmup));
  RunRecord sim_run = record("sim", "calibrated model", config_key);
  sim_run.metrics = {{"iteration_time_s", NsToSeconds(v.vs_model.predicted.iteration_ns)},
                     {"bubble_fraction", v.vs_model.predicted.bubble_fraction},
                     {"iteration_error", v.vs_model.iteration_error},
                     {"critical_path_agreement", v.vs_model.critical_path_agreement},
                     {"compute_mean_abs_rel_error", v.vs_model.compute_mean_abs_rel_error}};
  const int64_t sim_id = store.WriteRun(sim_run, v.predicted.trace.rows);
  RunRecord replay_run = record("sim", "measured durations", config_key + " replay");
  replay_run.metrics = {{"iteration_time_s", NsToSeconds(v.vs_replay.predicted.iteration_ns)},
                        {"bubble_fraction", v.vs_replay.predicted.bubble_fraction},
                        {"iteration_error", v.vs_replay.iteration_error},
                        {"critical_path_agreement", v.vs_replay.critical_path_agreement}};
  const int64_t replay_id = store.WriteRun(replay_run, v.replay.trace.rows);
  nlohmann::json comparison = v.config;
  comparison["calibrated_model"] = ComparisonJson(v.vs_model);
  comparison["replay"] = ComparisonJson(v.vs_replay);
  comparison["jitter"] = v.jitter_json;
  const int64_t comparison_id = store.WriteComparison(fmt::format("validate {}", o.pir), comparison,
                                                      {exec_id, sim_id, replay_id});
  return {{"db", db_path},
          {"exec_run", exec_id},
          {"sim_run", sim_id},
          {"replay_run", replay_id},
          {"comparison", comparison_id}};
}

}  // namespace terasim

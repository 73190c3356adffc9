// terasim validate: runs a schedule for real (exec), simulates it with a calibrated compute
// model on the `local` topology (topologies/data/local.json, one device per core), and reports
// how well the prediction matches: the iteration time error, per-op-kind duration errors by
// slice length and context, the bubble fraction of each, and how much the two critical paths
// agree (traces/validation.h). It also replays the schedule with each compute op's measured
// duration (sim/trace_durations.h), so that the schedule / network model's error shows apart
// from the compute model's. Optionally stores the runs and the comparison in the results
// store and writes a predicted-vs-measured scatter (SVG) and the three traces to a folder.
// The engine is tools/validation/validation_run.h; this command parses flags and prints.
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "exec/runner.h"
#include "models/errors.h"
#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/pir_format.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/validation/validation_run.h"
#include "traces/traces.h"

namespace terasim::cli {

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
  ValidationOptions o;
  o.pir = pir;
  o.backend = backend;
  o.calib_path = calib_path;
  o.instance = vm["cluster"].as<std::string>();
  o.network = vm["network"].as<std::string>();
  o.collectives_path = vm["collectives"].as<std::string>();
  if (!o.collectives_path.empty() && o.collectives_path[0] != '/') {
    o.collectives_path = DataRoot() + "/" + o.collectives_path;
  }
  o.iterations = iterations;
  o.warmup = warmup;
  o.blas_threads = blas_threads;
  o.seed = vm["seed"].as<uint64_t>();
  o.jitter_samples = jitter_samples;
  o.threads = ParseStreamThreads(vm["exec-threads"].as<std::string>(), "--exec-threads");
  const ValidationResult v = RunValidation(schedule, card, o);
  const TraceComparison& vs_model = v.vs_model;
  const TraceComparison& vs_replay = v.vs_replay;

  const std::string out_dir = vm["out"].as<std::string>();
  if (!out_dir.empty()) WriteValidationFolder(out_dir, o, v);
  nlohmann::json stored = nullptr;
  const std::string db_path = vm["db"].as<std::string>();
  if (!db_path.empty()) stored = StoreValidation(db_path, schedule, card, o, v);

  nlohmann::json load = {{"cores", v.cores}, {"before_1m", nullptr}, {"after_1m", nullptr}};
  if (v.load_before) load["before_1m"] = *v.load_before;
  if (v.load_after) load["after_1m"] = *v.load_after;
  if (vm["json"].as<bool>()) {
    nlohmann::json out = v.config;
    out["measured_iteration"] = v.median_iteration;
    out["measured_iteration_times_s"] = v.measured_iteration_times_s;
    out["loss"] = v.measured.losses.front();
    out["iteration_error"] = vs_model.iteration_error;
    out["replay_iteration_error"] = vs_replay.iteration_error;
    out["calibrated_model"] = ComparisonJson(vs_model);
    out["replay"] = ComparisonJson(vs_replay);
    out["jitter"] = v.jitter_json;
    out["load_average"] = load;
    out["stored"] = stored;
    PrintJson(out);
    return 0;
  }
  const double measured_s = NsToSeconds(vs_model.measured.iteration_ns);
  const auto error_of = [&](const SimResult& r) {
    return NsToSeconds(r.iteration_time_ns) / measured_s - 1;
  };
  std::cout << fmt::format(
      "{}: {} on {} ({} devices), {} measured iterations, median #{}\n"
      "  iteration    measured {:.4f} s   calibrated model {:.4f} s ({:+.1f} %)   replay of "
      "measured durations {:.4f} s ({:+.1f} %)\n"
      "  bubble       measured {:.1f} %   model {:.1f} %   replay {:.1f} %\n"
      "  critical     path agreement: model {:.2f}, replay {:.2f} ({} measured ops)\n"
      "  compute ops  mean |error| {:.1f} % (calibrated model)\n",
      pir, card.name, backend, schedule.devices, iterations, v.median_iteration,
      NsToSeconds(vs_model.measured.iteration_ns), NsToSeconds(vs_model.predicted.iteration_ns),
      100 * vs_model.iteration_error, NsToSeconds(vs_replay.predicted.iteration_ns),
      100 * vs_replay.iteration_error, 100 * vs_model.measured.bubble_fraction,
      100 * vs_model.predicted.bubble_fraction, 100 * vs_replay.predicted.bubble_fraction,
      vs_model.critical_path_agreement, vs_replay.critical_path_agreement,
      vs_model.measured.critical_path.size(), 100 * vs_model.compute_mean_abs_rel_error);
  if (v.jitter) {
    double low = v.table.speed_factors[0][0], high = low;
    for (const auto& row : v.table.speed_factors) {
      for (double f : row) {
        low = std::min(low, f);
        high = std::max(high, f);
      }
    }
    std::cout << fmt::format(
        "  jitter       median of {} iterations with per-device speed factors ({} profiled rounds, "
        "{:.2f}-{:.2f}; replay: {}); at the median speed: model {:.4f} s ({:+.1f} %), replay "
        "{:.4f} s ({:+.1f} %)\n",
        jitter_samples, v.table.speed_factors.size(), low, high,
        v.replay_spread ? "the run's own iterations" : "none, no whole iteration in the trace",
        NsToSeconds(v.predicted_steady.iteration_time_ns), 100 * error_of(v.predicted_steady),
        NsToSeconds(v.replay_steady.iteration_time_ns), 100 * error_of(v.replay_steady));
  }
  std::cout << "  kind        tokens  context  ops   measured ms  model ms   error\n";
  for (const DurationGroup& g : vs_model.groups) {
    if (!IsCompute(g.kind)) continue;
    std::cout << fmt::format("  {:<10} {:>7} {:>8} {:>4} {:>13.3f} {:>9.3f} {:>+7.1f} %\n",
                             OpKindName(g.kind), g.tokens, g.context, g.count, g.measured_ns / 1e6,
                             g.predicted_ns / 1e6, 100 * g.rel_error);
  }
  if (v.load_before && v.load_after) {
    std::cout << fmt::format("  machine      load average {:.2f} before, {:.2f} after ({} cores)\n",
                             *v.load_before, *v.load_after, v.cores);
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

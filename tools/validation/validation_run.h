// RunValidation: the engine of `terasim validate`. Runs a schedule for real (exec), simulates
// it with a calibrated compute model on the `local` topology (one device per core), replays it
// with each compute op's measured duration (sim/trace_durations.h), and compares both with the
// measurement (traces/validation.h). With --calib auto it profiles the layer between the
// measured iterations and fits the table itself. It records the machine's load average before
// and after, since a loaded machine measures slower than the model predicts.
//
// WriteValidationFolder and StoreValidation put a result on disk and into the results store;
// ValidationJson is the report as JSON. The command (tools/cmd_validate.cpp) parses flags and
// prints.
//
// Thread safety: RunValidation runs the executor's threads and joins them before it returns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/executor.h"
#include "exec/profiler.h"
#include "models/calibrated_cost.h"
#include "models/model_card.h"
#include "schedule/schedule_ir.h"
#include "sim/jitter.h"
#include "sim/simulator.h"
#include "traces/validation.h"

namespace terasim {

struct ValidationOptions {
  std::string pir;  // the schedule's path, for labels and the config
  std::string backend = "cpu";
  std::string calib_path;  // a calibration table, or "auto"
  std::string instance = "local";
  std::string network = "flow";
  std::string collectives_path;  // absolute, or relative to the working folder
  int iterations = 5;            // measured
  int warmup = 1;
  int blas_threads = 1;
  uint64_t seed = 1;
  int jitter_samples = 101;
  StreamThreads threads = StreamThreads::kAuto;
};

// /proc/loadavg's 1-minute figure, or nullopt where it cannot be read.
std::optional<double> LoadAverage1m();

struct ValidationResult {
  std::string cluster_spec;          // "INSTANCE:DEVICES"
  CalibrationTable table;            // loaded, or fitted (--calib auto)
  std::vector<ProfilePoint> points;  // --calib auto's measurements
  ExecResult measured;
  int median_iteration = 0;
  std::vector<double> measured_iteration_times_s;
  SimResult predicted_steady, replay_steady;  // at the median speed
  std::optional<JitterResult> model_spread, replay_spread;
  SimResult predicted, replay;  // what the comparisons use
  TraceComparison vs_model, vs_replay;
  bool jitter = false;
  nlohmann::json jitter_json;                     // null without jitter
  nlohmann::json config;                          // the run's configuration, as stored
  std::optional<double> load_before, load_after;  // 1-minute load average
  int cores = 1;
};

// Runs the whole validation. Throws InputError for a bad option, table or cluster; whatever
// the executor and simulator throw. Warnings (table of another model, no speed factors, a
// loaded machine) go to stderr.
ValidationResult RunValidation(const Schedule& schedule, const ModelCard& card,
                               const ValidationOptions& options);

// scatter.svg, the measured / predicted / replay traces and their timelines on one time axis
// (measured.gantt.svg, predicted.gantt.svg, replay.gantt.svg), (and with --calib auto calib.json
// and profile.csv) in `dir`, created if missing. Throws InputError when it cannot write.
void WriteValidationFolder(const std::string& dir, const ValidationOptions& options,
                           const ValidationResult& result);

// Stores the measured run, the two simulated runs and their comparison in `db_path`; returns
// {"db", "exec_run", "sim_run", "replay_run", "comparison"}.
nlohmann::json StoreValidation(const std::string& db_path, const Schedule& schedule,
                               const ModelCard& card, const ValidationOptions& options,
                               const ValidationResult& result);

// A comparison as JSON (as stored and printed).
nlohmann::json ComparisonJson(const TraceComparison& c);

}  // namespace terasim

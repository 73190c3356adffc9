// Calibration fit: turns per-layer timings measured by the executor (`terasim calibrate`,
// exec/profiler.h) into a CalibrationTable (models/calibrated_cost.h), the format of
// models/data/calibration/README.md.
//
// For each (pass, rows) the measurements with context 0 give the base curve (median per slice
// length); the measurements with context c > 0 give the context term
//     extra(l, c) = time(l, c) - base(l) = a0 + a1 l + a2 c + a3 l c
// fitted by ordinary least squares. Its quality is reported as r2 (of the extra time) and
// max_rel_error (of the fitted total base(l) + extra(l, c) against each measured total).
// With fewer than 4 context points the term is fitted on the columns it can determine and the
// rest are 0. The optimizer's time per layer is the median of its measurements.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "models/calibrated_cost.h"
#include "models/compute_cost.h"

namespace terasim {

// One measurement: the time of ONE layer of `pass` for `rows` sequences of a slice of
// `tokens` tokens after `context` tokens (tokens, rows and context unused for kOptimizer).
struct ProfilePoint {
  Pass pass = Pass::kForward;
  int rows = 1;
  int64_t tokens = 0;
  int64_t context = 0;
  double time_ns = 0;  // > 0
  // When and where it was measured: the measurement round and the profiler thread (device).
  // The spread of speeds between (round, thread) groups gives the table's speed factors.
  int round = 0;
  int thread = 0;
};

// How fast each profiler thread ran in each round, relative to the typical: per round (in round
// order) one factor per thread 0..T-1, each the median over that (round, thread)'s points of
// (the point's time / the median time of its (pass, rows, tokens, context) cell over all
// rounds and threads). Rounds missing a thread are left out. Empty with fewer than 2 (round,
// thread) groups.
std::vector<std::vector<double>> SpeedFactors(const std::vector<ProfilePoint>& points);

// The least-squares solution of the context term for points (tokens, context, extra_ns),
// with its r2 over the extra time and `points` set; max_rel_error is left 0 (FitCalibration
// fills it against the totals). An empty input gives the zero term.
ContextFit FitContextTerm(const std::vector<double>& tokens, const std::vector<double>& context,
                          const std::vector<double>& extra_ns);

// Builds a table from measurements of one device and model. Throws InputError
// "calibrate: pass P rows R: needs at least 2 slice lengths measured with context 0" when a
// (pass, rows) lacks a base curve, or "calibrate: no measurements" for an empty input.
CalibrationTable FitCalibration(const std::vector<ProfilePoint>& points, const std::string& device,
                                const std::string& model, const std::string& source);

// The table as the JSON text ParseCalibrationTable reads (format version 1), indented.
std::string CalibrationJson(const CalibrationTable& table);

}  // namespace terasim

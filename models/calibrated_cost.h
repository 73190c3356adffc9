// CalibratedCostModel: compute time from a calibration table measured by the executor
// (`terasim calibrate`), the format described in models/data/calibration/README.md.
//
// For each (pass, block, tp) the table holds, per micro-batch size (rows), a base curve of
// per-layer time over slice length l measured without context, and a fitted context term
//     a0 + a1 l + a2 c + a3 l c   (ns)
// added when the context c > 0. Look-up of one layer:
//   * in l: linear interpolation between the measured lengths, linear extrapolation beyond
//     them along the first or last segment;
//   * in rows: linear interpolation between the two bracketing curves; outside the measured
//     sizes, the nearest curve (rows r0) evaluated at the work-equivalent length l x rows / r0;
//   * kBackward without its own table is kBackwardInput + kBackwardWeight when both exist;
//   * anything else without a table goes to the fallback model (if one was given), else
//     Time() throws InputError "FILE: no table for pass P block B tp T".
// The result is at least 1 ns per layer; work of several layers costs layers x one layer.
//
// Immutable after construction; Time() is thread-safe when the fallback's is.
#pragma once

#include <string>
#include <vector>

#include "models/compute_cost.h"

namespace terasim {

// The fitted context term of one curve and its quality.
struct ContextFit {
  double a0 = 0, a1 = 0, a2 = 0, a3 = 0;  // ns, ns per token, ns per context token, ns per l c
  double r2 = 0;                          // coefficient of determination of the fit
  double max_rel_error = 0;               // largest |fit - measured| / measured over the points
  int points = 0;                         // measurements the fit used

  double Ns(double tokens, double context) const {
    return a0 + a1 * tokens + a2 * context + a3 * tokens * context;
  }
};

// The per-layer curve of one micro-batch size.
struct RowsCurve {
  int rows = 0;
  std::vector<double> tokens;   // strictly ascending, at least 2
  std::vector<double> time_ns;  // per layer, > 0, one per tokens entry
  ContextFit context;
};

struct PassTable {
  Pass pass = Pass::kForward;
  Block block = Block::kWhole;
  int tp = 1;
  std::vector<RowsCurve> curves;      // strictly ascending rows; empty for kOptimizer
  double optimizer_ns_per_layer = 0;  // kOptimizer only
};

struct CalibrationTable {
  std::string device;  // device spec name it was measured on
  std::string model;   // model card name it was measured with
  std::string source;  // how it was measured
  std::vector<PassTable> tables;
  // How the devices' speeds varied from one stretch of work (a profiling round, about an
  // iteration) to the next: per round, a time multiplier around 1 for each profiler thread
  // (SpeedFactors in calibration_fit.h); empty when not measured. The tables hold the median
  // speed; a simulation with jitter (sim/jitter.h) draws a round per iteration from these.
  std::vector<std::vector<double>> speed_factors;
  std::string origin;  // the file it was read from
};

// "forward", "backward", "backward_input", "backward_weight", "optimizer".
const char* PassName(Pass pass);
// "whole", "attn", "mlp".
const char* BlockName(Block block);

// Parses and validates a table; throws InputError "ORIGIN: tables[i]: rows[j]: FIELD: what".
CalibrationTable ParseCalibrationTable(const std::string& json_text, const std::string& origin);
// Reads and parses a table file; throws InputError naming the file.
CalibrationTable LoadCalibrationTable(const std::string& path);

class CalibratedCostModel : public ComputeCostModel {
 public:
  // `fallback` (nullable, borrowed; must outlive this model) answers work the table lacks.
  explicit CalibratedCostModel(CalibrationTable table, const ComputeCostModel* fallback = nullptr);

  // Time of `work`, >= 1 ns per layer. Throws InputError when the table lacks the work's
  // (pass, block, tp) and there is no fallback.
  TimeNs Time(const SliceWork& work) const override;
  // "calib FILE".
  std::string Name() const override;

  const CalibrationTable& table() const { return table_; }

 private:
  const PassTable* Find(Pass pass, Block block, int tp) const;
  // Per-layer ns from one table.
  double LayerNs(const PassTable& table, const SliceWork& work) const;

  CalibrationTable table_;
  const ComputeCostModel* fallback_;
};

}  // namespace terasim

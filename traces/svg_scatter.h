// SvgScatter: a predicted-vs-measured scatter plot as a standalone SVG (DESIGN.md section 5:
// "sim-vs-measured scatter"). Log-log axes over the points' range, the y = x diagonal and
// dashed +-5 % lines, one colour per series with a legend. Deterministic: the same input gives
// the same bytes.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace terasim {

struct ScatterSeries {
  std::string name;               // legend text, e.g. "FWD"
  std::vector<double> measured;   // x, > 0 (points <= 0 are skipped)
  std::vector<double> predicted;  // y, one per measured
};

struct ScatterOptions {
  std::string title = "predicted vs measured";
  std::string unit = "ms";  // axis unit; values are divided by `scale` for the labels
  double scale = 1e6;       // ns -> ms
  int width_px = 640;
  int height_px = 640;
};

// The SVG document. Throws InternalError when a series' measured and predicted differ in
// length.
std::string ScatterSvg(const std::vector<ScatterSeries>& series, const ScatterOptions& options);

// Writes ScatterSvg to `path` atomically. Throws InputError "PATH: cannot write" or "PATH: is a
// ...: terasim replaces only regular files".
void WriteScatterSvg(const std::string& path, const std::vector<ScatterSeries>& series,
                     const ScatterOptions& options);

}  // namespace terasim

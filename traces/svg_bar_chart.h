// SvgBarChart: a horizontal bar chart as a standalone SVG document, for strategy comparisons
// (`terasim compare` writes one bar per strategy family). Deterministic: the same bars give
// the same bytes. Thread safety: a pure function.
#pragma once

#include <string>
#include <vector>

namespace terasim {

struct Bar {
  std::string label;       // left of the bar, e.g. "terapipe 1x48x8"
  double value = 0;        // bar length; bars with missing = true are drawn empty
  std::string annotation;  // right of the bar, e.g. "1.48 s (6.7x)"
  bool highlight = false;  // drawn in the accent colour (the winner)
  bool missing = false;    // no value (e.g. does not fit): a hatched placeholder
};

// An SVG document of `bars` top to bottom, scaled so the largest value fills the plot width.
// `title` on top, `unit` under the axis (e.g. "iteration time (s)"). Text is XML-escaped.
std::string SvgBarChart(const std::string& title, const std::string& unit,
                        const std::vector<Bar>& bars);

}  // namespace terasim

#include "traces/svg_scatter.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "traces/atomic_file.h"
#include "traces/xml_escape.h"

#include "models/errors.h"

namespace terasim {
namespace {

const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

}  // namespace

std::string ScatterSvg(const std::vector<ScatterSeries>& series, const ScatterOptions& options) {
  double lo = std::numeric_limits<double>::max(), hi = 0;
  for (const ScatterSeries& s : series) {
    TERASIM_CHECK(s.measured.size() == s.predicted.size(), "series {}: {} x values, {} y values",
                  s.name, s.measured.size(), s.predicted.size());
    for (size_t i = 0; i < s.measured.size(); ++i) {
      if (s.measured[i] <= 0 || s.predicted[i] <= 0) continue;
      lo = std::min({lo, s.measured[i], s.predicted[i]});
      hi = std::max({hi, s.measured[i], s.predicted[i]});
    }
  }
  if (hi <= 0) {
    lo = 1;
    hi = 10;
  }
  // Whole decades around the data.
  const double log_lo = std::floor(std::log10(lo)),
               log_hi = std::max(log_lo + 1, std::ceil(std::log10(hi)));
  const double margin = 70, w = options.width_px, h = options.height_px;
  const double plot_w = w - 2 * margin, plot_h = h - 2 * margin;
  auto x_of = [&](double v) {
    return margin + (std::log10(v) - log_lo) / (log_hi - log_lo) * plot_w;
  };
  auto y_of = [&](double v) {
    return h - margin - (std::log10(v) - log_lo) / (log_hi - log_lo) * plot_h;
  };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">{3}</text>\n",
      w, h, w / 2, XmlEscape(options.title));
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n",
      margin, margin, plot_w, plot_h);
  for (double d = log_lo; d <= log_hi + 1e-9; d += 1) {
    const double v = std::pow(10.0, d);
    const std::string label = fmt::format("{:g}", v / options.scale);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        x_of(v), margin, h - margin, h - margin + 18, label);
    svg += fmt::format(
        "<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{0:.1f}\" text-anchor=\"end\" "
        "dominant-baseline=\"middle\">{4}</text>\n",
        y_of(v), margin, w - margin, margin - 6, label);
  }
  const double a = std::pow(10.0, log_lo), b = std::pow(10.0, log_hi);
  svg += fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"black\"/>\n", x_of(a),
      y_of(a), x_of(b), y_of(b));
  for (double f : {0.95, 1.05}) {
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"gray\" "
        "stroke-dasharray=\"4,4\"/>\n",
        x_of(a), y_of(a * f), x_of(b), y_of(b * f));
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">measured ({})</text>\n"
      "<text x=\"18\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {})\">predicted "
      "({})</text>\n",
      w / 2, h - 20, XmlEscape(options.unit), h / 2, h / 2, XmlEscape(options.unit));
  for (size_t k = 0; k < series.size(); ++k) {
    const ScatterSeries& s = series[k];
    const char* colour = kColours[k % (sizeof kColours / sizeof kColours[0])];
    for (size_t i = 0; i < s.measured.size(); ++i) {
      if (s.measured[i] <= 0 || s.predicted[i] <= 0) continue;
      svg += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\" fill-opacity=\"0.7\"/>\n",
          x_of(s.measured[i]), y_of(s.predicted[i]), colour);
    }
    svg += fmt::format(
        "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "dominant-baseline=\"middle\">{}</text>\n",
        margin + 14, margin + 16 + 18 * k, colour, margin + 24, margin + 16 + 18 * k,
        XmlEscape(s.name));
  }
  svg += "</svg>\n";
  return svg;
}

void WriteScatterSvg(const std::string& path, const std::vector<ScatterSeries>& series,
                     const ScatterOptions& options) {
  WriteFileAtomically(path, ScatterSvg(series, options));
}

}  // namespace terasim

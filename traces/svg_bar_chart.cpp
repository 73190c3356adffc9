#include "traces/svg_bar_chart.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "traces/xml_escape.h"

namespace terasim {
namespace {

// A "nice" axis step (1, 2 or 5 x 10^k) giving about five ticks up to `max`.
double TickStep(double max) {
  if (!(max > 0)) return 1;
  double raw = max / 5;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

}  // namespace

std::string SvgBarChart(const std::string& title, const std::string& unit,
                        const std::vector<Bar>& bars) {
  const int label_w = 230, plot_w = 460, note_w = 170, bar_h = 26, gap = 10, top = 50;
  const int width = label_w + plot_w + note_w;
  const int plot_h = static_cast<int>(bars.size()) * (bar_h + gap);
  const int height = top + plot_h + 60;
  double max = 0;
  for (const Bar& b : bars) {
    if (!b.missing) max = std::max(max, b.value);
  }
  const double step = TickStep(max);
  const double axis_max = max > 0 ? std::ceil(max / step) * step : 1;
  auto x_of = [&](double v) { return label_w + plot_w * v / axis_max; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"13\">\n",
      width, height);
  svg += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", width, height);
  svg += fmt::format("<text x=\"{}\" y=\"28\" font-size=\"16\" font-weight=\"bold\">{}</text>\n",
                     10, XmlEscape(title));
  svg +=
      "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
      "<path d=\"M0,6 L6,0\" stroke=\"#999\"/></pattern></defs>\n";
  // Grid lines and tick labels.
  for (double v = 0; v <= axis_max * (1 + 1e-9); v += step) {
    double x = x_of(v);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>\n"
        "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">{:g}</text>\n",
        x, top - 5, x, top + plot_h, x, top + plot_h + 18, v);
  }
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int y = top + static_cast<int>(i) * (bar_h + gap);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", label_w - 8,
                       y + bar_h / 2 + 5, XmlEscape(b.label));
    if (b.missing) {
      svg += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#hatch)\" "
          "stroke=\"#999\"/>\n",
          label_w, y, plot_w / 4, bar_h);
    } else {
      svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>\n",
                         label_w, y, std::max(1.0, x_of(b.value) - label_w), bar_h,
                         b.highlight ? "#d9534f" : "#4a7bb7");
    }
    const double note_x = b.missing ? label_w + plot_w / 4 + 6 : x_of(b.value) + 6;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text>\n", note_x, y + bar_h / 2 + 5,
                       XmlEscape(b.annotation));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333\">{}</text>\n",
                     label_w + plot_w / 2, top + plot_h + 42, XmlEscape(unit));
  svg += "</svg>\n";
  return svg;
}

}  // namespace terasim

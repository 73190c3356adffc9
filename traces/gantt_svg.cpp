#include "traces/gantt_svg.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "models/errors.h"
#include "traces/trace_order.h"
#include "traces/xml_escape.h"

namespace terasim {
namespace {

// Colours by kind family (Tableau 10), the papers' convention of one colour per pass.
struct KindStyle {
  const char* name;  // legend text
  const char* fill;
};
constexpr KindStyle kForward{"forward", "#4e79a7"};
constexpr KindStyle kBackward{"backward", "#59a14f"};
constexpr KindStyle kBackwardWeight{"backward (weights)", "#8cd17d"};
constexpr KindStyle kP2p{"send / recv", "#f28e2b"};
constexpr KindStyle kCollective{"collective", "#b07aa1"};
constexpr KindStyle kOptimizer{"optimizer", "#e15759"};

const KindStyle& StyleOf(OpKind kind) {
  switch (kind) {
    case OpKind::kFwd:
      return kForward;
    case OpKind::kBwd:
    case OpKind::kBwdInput:
      return kBackward;
    case OpKind::kBwdWeight:
      return kBackwardWeight;
    case OpKind::kSend:
    case OpKind::kRecv:
      return kP2p;
    case OpKind::kOptimizer:
      return kOptimizer;
    default:
      return kCollective;
  }
}

// The number after `tag` in a key such as "F.s3.m5.t256-512" (tag ".m" -> 5), if any.
std::optional<int> KeyNumber(std::string_view key, std::string_view tag) {
  // Tags and keys are short: compared in place (find's calls cost more than the scan).
  auto tag_at = [&](size_t at) {
    for (size_t k = 0; k < tag.size(); ++k) {
      if (key[at + k] != tag[k]) return false;
    }
    return true;
  };
  size_t at = 0;
  while (true) {
    while (at + tag.size() <= key.size() && !tag_at(at)) ++at;
    if (at + tag.size() > key.size()) break;
    size_t digits = at + tag.size();
    size_t end = digits;
    while (end < key.size() && std::isdigit(static_cast<unsigned char>(key[end]))) ++end;
    if (end > digits && end - digits < 9) {
      int value = 0;
      std::from_chars(key.data() + digits, key.data() + end, value);
      return value;
    }
    at = digits;
  }
  return std::nullopt;
}

// A "nice" tick step (1, 2 or 5 x 10^k) giving at most about ten ticks over `span`.
double TickStep(double span) {
  if (!(span > 0)) return 1;
  const double raw = span / 10;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

// The unit the axis is labelled in, so that the span reads between 1 and 1000 of it.
std::pair<const char*, double> AxisUnit(TimeNs span_ns) {
  if (span_ns >= 1'000'000'000) return {"s", 1e9};
  if (span_ns >= 1'000'000) return {"ms", 1e6};
  if (span_ns >= 1'000) return {"us", 1e3};
  return {"ns", 1};
}

std::string Duration(TimeNs ns) {
  auto [unit, scale] = AxisUnit(std::max<TimeNs>(ns, 1));
  return fmt::format("{:.4g} {}", static_cast<double>(ns) / scale, unit);
}

// Total length of the union of `intervals` (sorted in place).
TimeNs UnionNs(std::vector<std::pair<TimeNs, TimeNs>>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  TimeNs total = 0;
  TimeNs covered_to = INT64_MIN;
  for (const auto& [begin, end] : intervals) {
    const TimeNs from = std::max(begin, covered_to);
    if (end > from) total += end - from;
    covered_to = std::max(covered_to, end);
  }
  return total;
}

// One drawn row: a device (all its streams in lanes) or, per stream, one (device, stream).
struct Row {
  int device = 0;
  std::string stream;              // per-stream rows only
  std::vector<std::string> lanes;  // lane 0 is the tall one
  std::vector<size_t> ops;         // indexes into the iteration's rows
  int alike = 0;                   // other devices with an identical row
};

}  // namespace

std::vector<size_t> CriticalPathFromChains(const Trace& trace, int iteration) {
  std::vector<size_t> rows;
  for (size_t i = 0; i < trace.rows.size(); ++i) {
    if (trace.rows[i].iteration == iteration) rows.push_back(i);
  }
  if (rows.empty()) return {};
  // By end time, so that "ended last at or before t" is a binary search.
  std::sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
    return std::tie(trace.rows[a].end_ns, a) < std::tie(trace.rows[b].end_ns, b);
  });
  auto better = [&](size_t candidate, size_t current, size_t than) {
    // Among ops ending at the same time: same device, then same stream, then the first row.
    const TraceRow& c = trace.rows[candidate];
    const TraceRow& t = trace.rows[than];
    const TraceRow& cur = trace.rows[current];
    auto rank = [&](const TraceRow& r) {
      return std::make_tuple(r.device != cur.device, r.stream != cur.stream);
    };
    return std::tuple_cat(rank(c), std::make_tuple(candidate)) <
           std::tuple_cat(rank(t), std::make_tuple(than));
  };
  std::vector<size_t> path;
  std::set<size_t> on_path;
  // The last op to end; among equals, the first row.
  size_t current = rows.back();
  for (size_t i : rows) {
    if (trace.rows[i].end_ns == trace.rows[current].end_ns) {
      current = std::min(current, i);
    }
  }
  while (true) {
    path.push_back(current);
    on_path.insert(current);
    const TimeNs start = trace.rows[current].start_ns;
    // Rows ending at or before `start`: a prefix of `rows`.
    auto end = std::upper_bound(rows.begin(), rows.end(), start,
                                [&](TimeNs t, size_t r) { return t < trace.rows[r].end_ns; });
    std::optional<size_t> best;
    for (auto it = end; it != rows.begin();) {
      --it;
      if (on_path.count(*it) || *it == current) continue;
      if (best && trace.rows[*it].end_ns < trace.rows[*best].end_ns) break;
      // A zero-length op at `start` that itself starts at `start` could loop; on_path stops it.
      if (!best || better(*it, current, *best)) best = *it;
    }
    if (!best) break;
    current = *best;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::string GanttSvg(const Trace& trace, const GanttOptions& options) {
  // The iteration's rows, in canonical order (deterministic drawing order).
  // The rows are read in their own order wherever the drawing order does not matter: a large
  // trace read in canonical order is a cache miss per row.
  std::vector<size_t> order = CanonicalRowOrder(trace.rows);
  TimeNs t0 = INT64_MAX, t1 = INT64_MIN;
  size_t in_iteration = 0;
  std::vector<char> kind_present(static_cast<size_t>(OpKind::kRecompute) + 1, 0);
  for (const TraceRow& row : trace.rows) {
    if (row.iteration != options.iteration) continue;
    ++in_iteration;
    t0 = std::min(t0, row.start_ns);
    t1 = std::max(t1, row.end_ns);
    kind_present[static_cast<size_t>(row.kind)] = 1;
  }
  if (in_iteration < order.size()) {
    std::erase_if(order, [&](size_t i) { return trace.rows[i].iteration != options.iteration; });
  }
  if (order.empty()) ThrowInput("gantt: the trace has no rows for iteration {}", options.iteration);
  // The axis: the iteration's own span, or a common one (options.axis_span_ns) so that several
  // timelines (validate's measured and simulated) share one scale. Idle is over the own span.
  const TimeNs own_span = std::max<TimeNs>(t1 - t0, 1);
  const TimeNs span = std::max(own_span, options.axis_span_ns);

  // Each row's stream as a number (equal names, equal numbers).
  std::vector<std::string_view> stream_names;
  const std::vector<int> stream_id = StreamRanks(trace.rows, &stream_names);

  // Rows and lanes.
  std::vector<Row> rows;
  {
    // (device, stream) -> row; per device, its lanes' rows (one row without per_stream).
    std::map<int, std::vector<std::pair<std::string, size_t>>> row_of;
    std::map<int, std::set<std::string>> streams;
    {
      // (device, stream id) of the iteration's rows, distinct (rows come in runs of one).
      std::vector<std::pair<int, int>> seen;
      for (size_t i = 0; i < trace.rows.size(); ++i) {
        if (trace.rows[i].iteration != options.iteration) continue;
        const std::pair<int, int> track(trace.rows[i].device, stream_id[i]);
        if (seen.empty() || seen.back() != track) seen.push_back(track);
      }
      std::sort(seen.begin(), seen.end());
      seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
      for (const auto& [device, id] : seen) streams[device].emplace(stream_names[id]);
    }
    for (const auto& [device, names] : streams) {
      // The compute stream gets the tall lane; the others follow by name.
      std::vector<std::string> lanes;
      if (names.count("compute")) lanes.push_back("compute");
      for (const std::string& s : names) {
        if (s != "compute") lanes.push_back(s);
      }
      if (options.per_stream) {
        for (const std::string& s : lanes) {
          row_of[device].emplace_back(s, rows.size());
          rows.push_back({device, s, {s}, {}, 0});
        }
      } else {
        row_of[device].emplace_back("", rows.size());
        rows.push_back({device, "", lanes, {}, 0});
      }
    }
    // Each trace row's drawn row, in row order (each device's rows looked up once per run of
    // its ops); then the ops of each drawn row in drawing order.
    std::vector<size_t> row_at(trace.rows.size(), 0);
    const std::vector<std::pair<std::string, size_t>>* device_rows = nullptr;
    int device = 0;
    for (size_t i = 0; i < trace.rows.size(); ++i) {
      const TraceRow& r = trace.rows[i];
      if (r.iteration != options.iteration) continue;
      if (device_rows == nullptr || r.device != device) {
        device = r.device;
        device_rows = &row_of.at(device);
      }
      size_t row = device_rows->front().second;
      if (options.per_stream) {
        for (const auto& [stream, index] : *device_rows) {
          if (stream == r.stream) row = index;
        }
      }
      row_at[i] = row;
    }
    for (size_t i : order) rows[row_at[i]].ops.push_back(i);
  }
  // Merge rows identical up to the device number (data-parallel replicas).
  std::vector<Row> drawn;
  {
    using Signature = std::vector<std::tuple<int, int, TimeNs, TimeNs>>;  // stream id, ...
    std::map<std::pair<std::string, Signature>, size_t> seen;
    for (size_t r = 0; r < rows.size(); ++r) {
      Signature sig;
      for (size_t i : rows[r].ops) {
        const TraceRow& op = trace.rows[i];
        sig.emplace_back(stream_id[i], static_cast<int>(op.kind), op.start_ns, op.end_ns);
      }
      if (options.merge_identical) {
        auto [it, fresh] = seen.try_emplace({rows[r].stream, sig}, drawn.size());
        if (!fresh) {
          ++drawn[it->second].alike;
          continue;
        }
      }
      drawn.push_back(rows[r]);
    }
  }
  const size_t hidden = drawn.size() > static_cast<size_t>(std::max(options.max_rows, 1))
                            ? drawn.size() - std::max(options.max_rows, 1)
                            : 0;
  drawn.resize(drawn.size() - hidden);

  // Micro-batch slice index: token ranges of each micro-batch, ascending.
  // Sets: the rows are read in their own order, where one unit's ops come in runs.
  std::map<int, std::set<std::pair<int, int>>> slices;
  {
    std::optional<std::tuple<int, int, int>> last;  // the (mb, t0, t1) added last
    for (const TraceRow& row : trace.rows) {
      if (row.iteration != options.iteration) continue;
      const std::string& key = row.key;
      auto mb = KeyNumber(key, ".m");
      auto t_begin = KeyNumber(key, ".t");
      if (!mb || !t_begin) continue;
      size_t dash = key.find('-', key.find(".t"));
      auto t_end = dash == std::string::npos ? std::nullopt
                                             : KeyNumber(std::string_view(key).substr(dash), "-");
      const std::tuple<int, int, int> unit(*mb, *t_begin, t_end.value_or(*t_begin));
      if (last == unit) continue;
      last = unit;
      slices[*mb].emplace(*t_begin, t_end.value_or(*t_begin));
    }
  }
  auto label_of = [&](const TraceRow& r) -> std::string {
    if (r.kind == OpKind::kOptimizer) return "opt";
    if (!IsLayerCompute(r.kind)) return "";
    auto mb = KeyNumber(r.key, ".m");
    if (!mb) return "";
    auto t_begin = KeyNumber(r.key, ".t");
    const auto& ranges = slices[*mb];
    if (!t_begin || ranges.size() < 2) return std::to_string(*mb);
    int index = 0;
    for (const auto& [b, e] : ranges) {
      if (b == *t_begin) break;
      ++index;
    }
    return fmt::format("{}.{}", *mb, index);
  };

  // Geometry.
  const int label_w = 130, idle_w = 90, plot_w = std::max(options.plot_width_px, 200);
  const int tall_h = 24, thin_h = 7, row_gap = 8;
  const int width = label_w + plot_w + idle_w;
  const int top = 92;  // below the title, subtitle and legend
  std::vector<int> row_y;
  int y = top;
  for (const Row& row : drawn) {
    row_y.push_back(y);
    y += tall_h + static_cast<int>(row.lanes.size() - 1) * (thin_h + 1) + row_gap;
  }
  const int plot_bottom = y - row_gap;
  const int height = plot_bottom + 58 + (hidden > 0 ? 16 : 0);
  auto x_of = [&](TimeNs t) {
    return label_w + plot_w * static_cast<double>(t - t0) / static_cast<double>(span);
  };
  auto lane_y = [&](const Row& row, const std::string& stream, int ry) {
    for (size_t l = 0; l < row.lanes.size(); ++l) {
      if (row.lanes[l] == stream) {
        return l == 0 ? std::make_pair(ry, tall_h)
                      : std::make_pair(ry + tall_h + 1 + static_cast<int>(l - 1) * (thin_h + 1),
                                       thin_h);
      }
    }
    return std::make_pair(ry, tall_h);
  };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      width, height);
  fmt::format_to(std::back_inserter(svg), "<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n",
                 width, height);
  svg +=
      "<defs><pattern id=\"idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
      "<rect width=\"6\" height=\"6\" fill=\"#f4f4f4\"/>"
      "<path d=\"M0,6 L6,0\" stroke=\"#d0d0d0\"/></pattern></defs>\n";
  fmt::format_to(std::back_inserter(svg),
                 "<text x=\"10\" y=\"22\" font-size=\"16\" font-weight=\"bold\">{}</text>\n",
                 XmlEscape(options.title.empty() ? "pipeline timeline" : options.title));
  std::string subtitle = options.subtitle;
  subtitle += fmt::format("{}iteration {}: {}", subtitle.empty() ? "" : ", ", options.iteration,
                          Duration(t1 - t0));
  fmt::format_to(std::back_inserter(svg), "<text x=\"10\" y=\"40\" fill=\"#444\">{}</text>\n",
                 XmlEscape(subtitle));

  // Legend: the kinds present, idle, the critical path.
  {
    std::vector<const KindStyle*> styles;
    for (const KindStyle* s :
         {&kForward, &kBackward, &kBackwardWeight, &kP2p, &kCollective, &kOptimizer}) {
      for (size_t k = 0; k < kind_present.size(); ++k) {
        if (kind_present[k] && &StyleOf(static_cast<OpKind>(k)) == s) {
          styles.push_back(s);
          break;
        }
      }
    }
    double lx = 10;
    const int ly = 54;
    auto swatch = [&](const std::string& fill, const std::string& extra, const std::string& text) {
      fmt::format_to(
          std::back_inserter(svg),
          "<rect class=\"legend\" x=\"{:.1f}\" y=\"{}\" width=\"16\" height=\"12\" fill=\"{}\"{}/>"
          "<text x=\"{:.1f}\" y=\"{}\">{}</text>\n",
          lx, ly, fill, extra, lx + 21, ly + 10, XmlEscape(text));
      lx += 32 + 7.0 * static_cast<double>(text.size());
    };
    for (const KindStyle* s : styles) swatch(s->fill, "", s->name);
    if (!options.recv_transfer_start.empty()) swatch("#fbe3c8", "", "recv waiting");
    swatch("url(#idle)", " stroke=\"#bbb\"", "idle");
    swatch("white", " stroke=\"black\" stroke-width=\"2\"", "critical path");
  }

  // Time axis: grid lines, ticks, unit.
  const auto [unit, scale] = AxisUnit(span);
  const double step = TickStep(static_cast<double>(span) / scale);
  for (int k = 0;; ++k) {
    const double v = k * step;
    if (v * scale > static_cast<double>(span) * (1 + 1e-9)) break;
    const double x = x_of(t0 + std::llround(v * scale));
    fmt::format_to(
        std::back_inserter(svg),
        "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#e4e4e4\"/>"
        "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#555\"/>"
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444\">{:g}"
        "</text>\n",
        x, top - 6, x, plot_bottom, x, plot_bottom, x, plot_bottom + 5, x, plot_bottom + 18, v);
  }
  fmt::format_to(
      std::back_inserter(svg),
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#555\"/>\n"
      "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">time ({}) from the iteration's first "
      "op</text>\n",
      label_w, plot_bottom, label_w + plot_w, plot_bottom, label_w + plot_w / 2.0, plot_bottom + 36,
      unit);
  fmt::format_to(std::back_inserter(svg),
                 "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444\">idle</text>\n",
                 label_w + plot_w + idle_w / 2, top - 8);

  // Row backgrounds (idle shows through), labels and idle shares.
  for (size_t r = 0; r < drawn.size(); ++r) {
    const Row& row = drawn[r];
    std::string name = fmt::format("GPU {}", row.device);
    if (options.per_stream) name += " " + row.stream;
    if (row.alike > 0) name += fmt::format(" (+{} alike)", row.alike);
    fmt::format_to(
        std::back_inserter(svg),
        "<rect class=\"lane\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#idle)\"/>"
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
        label_w, row_y[r], plot_w, tall_h, label_w - 8, row_y[r] + 16, XmlEscape(name));
    for (size_t l = 1; l < row.lanes.size(); ++l) {
      auto [ly, lh] = lane_y(row, row.lanes[l], row_y[r]);
      fmt::format_to(
          std::back_inserter(svg),
          "<rect class=\"lane\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f8f8f8\"/>"
          "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"8\" fill=\"#777\">{}</text>\n",
          label_w, ly, plot_w, lh, label_w - 8, ly + lh, XmlEscape(row.lanes[l]));
    }
    // Idle: the iteration minus the union of the tall lane's ops (compute, for a device row).
    std::vector<std::pair<TimeNs, TimeNs>> busy;
    for (size_t i : row.ops) {
      if (trace.rows[i].stream == row.lanes[0]) {
        busy.emplace_back(trace.rows[i].start_ns, trace.rows[i].end_ns);
      }
    }
    const double idle = 1.0 - static_cast<double>(UnionNs(busy)) / static_cast<double>(own_span);
    fmt::format_to(std::back_inserter(svg),
                   "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444\">{:.1f}%</text>\n",
                   label_w + plot_w + idle_w / 2, row_y[r] + 16, 100 * idle);
  }

  // Critical path: the given keys, or the chain from the rows.
  std::vector<char> critical(trace.rows.size(), 0);  // by row
  std::vector<size_t> critical_order;
  if (!options.critical_path.empty()) {
    // Path key -> the first row of it in drawing order (rows.size(): none).
    std::unordered_map<std::string_view, size_t> by_key;
    for (const std::string& key : options.critical_path) by_key.emplace(key, trace.rows.size());
    // The rows read in their own order, each compared by its drawing position.
    std::vector<size_t> position(trace.rows.size(), trace.rows.size());  // not drawn: last
    for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
    for (size_t i = 0; i < trace.rows.size(); ++i) {
      if (position[i] == trace.rows.size()) continue;
      auto it = by_key.find(trace.rows[i].key);
      if (it != by_key.end() &&
          (it->second == trace.rows.size() || position[i] < position[it->second])) {
        it->second = i;
      }
    }
    for (const std::string& key : options.critical_path) {
      auto it = by_key.find(key);
      if (it->second < trace.rows.size() && !critical[it->second]) {
        critical[it->second] = 1;
        critical_order.push_back(it->second);
      }
    }
  } else {
    critical_order = CriticalPathFromChains(trace, options.iteration);
    for (size_t i : critical_order) critical[i] = 1;
  }

  // Ops: one rect each (a RECV's wait is a separate pale rect before it), except that a run of
  // ops in one lane each narrower than kMergePx (where no white edge would separate them
  // anyway), at most kMergeGapPx apart and all on (or all off) the critical path is one rect
  // in the colour of the kind that takes most of its time, its tooltip counting the ops by
  // kind (data-ops="N"). Where each op is drawn, for the labels and the critical path's
  // outline.
  constexpr double kMergePx = 3.0, kMergeGapPx = 0.5;
  struct Drawn {
    double x0 = 0, x1 = 0;
    int y = 0, h = 0;
  };
  std::vector<std::optional<Drawn>> where(trace.rows.size());  // by row
  struct Block {
    double x0 = 0, x1 = 0;
    int y = 0;
    const KindStyle* style = nullptr;
    std::string label;
  };
  std::vector<Block> blocks;  // runs of ops with one label in a tall lane
  // Ops waiting to be drawn as one rect, per lane (by y).
  const std::vector<const KindStyle*> all_styles = {&kForward, &kBackward,   &kBackwardWeight,
                                                    &kP2p,     &kCollective, &kOptimizer};
  struct Pending {
    double x0 = 0, x1 = 0;  // from the first op's start to the latest end (at least 0.6 px wide)
    int h = 0;
    const KindStyle* style = nullptr;  // of the first op
    bool critical = false;
    bool narrow = false;  // every op in it is narrower than kMergePx
    std::vector<size_t> ops;
    std::map<const KindStyle*, std::pair<int, TimeNs>> by_style;  // ops and busy time
  };
  std::map<int, Pending> pending;
  auto flush = [&](int ly) {
    auto it = pending.find(ly);
    if (it == pending.end()) return;
    const Pending& p = it->second;
    const TraceRow& first = trace.rows[p.ops.front()];
    const TraceRow& last = trace.rows[p.ops.back()];
    const double w = std::max(p.x1 - p.x0, 0.6);
    if (p.ops.size() == 1) {
      // A thin white edge separates neighbours where there is room for it.
      fmt::format_to(
          std::back_inserter(svg),
          "<rect class=\"op\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"{}{}>"
          "<title>{} ({}) GPU {} {}: {} .. {} ({})</title></rect>\n",
          p.x0, ly, w, p.h, p.style->fill, w > 3 ? " stroke=\"white\" stroke-width=\"0.5\"" : "",
          p.critical ? " data-critical=\"1\"" : "", XmlEscape(first.key), OpKindName(first.kind),
          first.device, XmlEscape(first.stream), Duration(first.start_ns - t0),
          Duration(first.end_ns - t0), Duration(first.end_ns - first.start_ns));
    } else {
      // The colour of the kind with the most busy time (the legend's first on ties).
      const KindStyle* fill = nullptr;
      TimeNs most = -1;
      std::string counts;
      TimeNs busy = 0;
      for (const KindStyle* style : all_styles) {
        auto s = p.by_style.find(style);
        if (s == p.by_style.end()) continue;
        if (s->second.second > most) {
          most = s->second.second;
          fill = style;
        }
        counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", style->name, s->second.first);
        busy += s->second.second;
      }
      fmt::format_to(
          std::back_inserter(svg),
          "<rect class=\"op\" data-ops=\"{}\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" "
          "height=\"{}\" fill=\"{}\"{}><title>{} ops ({}) {} .. {} GPU {} {}: {} .. {} (busy {})"
          "</title></rect>\n",
          p.ops.size(), p.x0, ly, w, p.h, fill->fill, p.critical ? " data-critical=\"1\"" : "",
          p.ops.size(), counts, XmlEscape(first.key), XmlEscape(last.key), first.device,
          XmlEscape(first.stream), Duration(first.start_ns - t0), Duration(last.end_ns - t0),
          Duration(busy));
    }
    pending.erase(it);
  };
  for (size_t r = 0; r < drawn.size(); ++r) {
    const Row& row = drawn[r];
    for (size_t i : row.ops) {
      const TraceRow& op = trace.rows[i];
      auto [ly, lh] = lane_y(row, op.stream, row_y[r]);
      TimeNs begin = op.start_ns;
      auto transfer = op.kind == OpKind::kRecv ? options.recv_transfer_start.find(op.key)
                                               : options.recv_transfer_start.end();
      const bool waited = transfer != options.recv_transfer_start.end() &&
                          transfer->second > op.start_ns && transfer->second <= op.end_ns;
      if (waited) {
        flush(ly);
        fmt::format_to(std::back_inserter(svg),
                       "<rect class=\"wait\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" "
                       "fill=\"#fbe3c8\"/>\n",
                       x_of(op.start_ns), ly, x_of(transfer->second) - x_of(op.start_ns), lh);
        begin = transfer->second;
      }
      const double x = x_of(begin);
      const double own_w = x_of(op.end_ns) - x;
      const double w = std::max(own_w, 0.6);
      const KindStyle* style = &StyleOf(op.kind);
      const bool is_critical = critical[i] != 0;
      // Narrow ops join the lane's pending rect when it holds only narrow ops.
      const bool narrow = own_w < kMergePx && !waited;
      auto it = pending.find(ly);
      if (narrow && it != pending.end() && it->second.narrow &&
          it->second.critical == is_critical && x <= it->second.x1 + kMergeGapPx) {
        it->second.x1 = std::max(it->second.x1, x + own_w);
        it->second.ops.push_back(i);
      } else {
        flush(ly);
        it = pending.emplace(ly, Pending{x, x + own_w, lh, style, is_critical, narrow, {i}, {}})
                 .first;
      }
      auto& [count, busy] = it->second.by_style[style];
      ++count;
      busy += op.end_ns - begin;
      where[i] = Drawn{x, x + w, ly, lh};
      if (lh != tall_h) continue;
      // Labels go on runs of ops of one kind and one (micro-batch, slice); collectives between
      // them (tensor parallelism's all-reduces) do not break a run.
      const std::string label = label_of(op);
      if (label.empty() && IsCollective(op.kind)) {
        if (!blocks.empty() && blocks.back().y == ly)
          blocks.back().x1 = std::max(blocks.back().x1, x + w);
        continue;
      }
      if (!blocks.empty() && blocks.back().y == ly && blocks.back().style == style &&
          blocks.back().label == label && x <= blocks.back().x1 + 1.0) {
        blocks.back().x1 = x + w;
      } else {
        blocks.push_back({x, x + w, ly, style, label});
      }
    }
    while (!pending.empty()) flush(pending.begin()->first);
  }
  for (const Block& b : blocks) {
    const double text_w = 6.2 * static_cast<double>(b.label.size()) + 3;
    if (b.label.empty() || b.x1 - b.x0 < text_w) continue;
    fmt::format_to(std::back_inserter(svg),
                   "<text x=\"{:.2f}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\" "
                   "fill=\"white\">{}</text>\n",
                   (b.x0 + b.x1) / 2, b.y + 16, XmlEscape(b.label));
  }

  // The critical path: one black outline around each run of its ops that touch in a lane, and
  // a dashed link where it moves to another lane or device.
  std::vector<Drawn> outlines;
  const Drawn* previous = nullptr;
  std::string links;
  for (size_t i : critical_order) {
    if (!where[i]) continue;  // on a merged or hidden row
    const Drawn& d = *where[i];
    if (previous != nullptr && previous->y == d.y && !outlines.empty() &&
        d.x0 <= outlines.back().x1 + 1.0) {
      outlines.back().x1 = std::max(outlines.back().x1, d.x1);
    } else {
      outlines.push_back(d);
      if (previous != nullptr) {
        fmt::format_to(
            std::back_inserter(links),
            "<line class=\"critical-link\" x1=\"{:.2f}\" y1=\"{:.1f}\" x2=\"{:.2f}\" "
            "y2=\"{:.1f}\" stroke=\"black\" stroke-width=\"1\" stroke-dasharray=\"3,2\"/>\n",
            previous->x1, previous->y + previous->h / 2.0, d.x0, d.y + d.h / 2.0);
      }
    }
    previous = &d;
  }
  for (const Drawn& d : outlines) {
    fmt::format_to(
        std::back_inserter(svg),
        "<rect class=\"critical\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" "
        "fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n",
        d.x0, d.y - 0.5, d.x1 - d.x0, d.h + 1.0);
  }
  svg += links;
  if (hidden > 0) {
    fmt::format_to(std::back_inserter(svg),
                   "<text x=\"{}\" y=\"{}\" fill=\"#444\">{} more rows not drawn</text>\n", label_w,
                   height - 8, hidden);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace terasim

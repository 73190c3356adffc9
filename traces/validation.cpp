#include "traces/validation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "models/errors.h"

namespace terasim {
namespace {

// Predecessors of each op: stream order, `after` deps, the SEND of a RECV, the other members
// of a collective instance.
std::vector<std::vector<int>> Predecessors(const Schedule& schedule) {
  const int n = static_cast<int>(schedule.ops.size());
  std::vector<std::vector<int>> preds(n);
  const std::map<std::string, int> index = KeyIndex(schedule);
  std::map<std::pair<int, std::string>, int> last_on_stream;
  std::map<std::tuple<int, int, std::string>, int> sends;  // (from, to, tensor)
  std::map<std::pair<std::string, std::string>, std::vector<int>> collectives;
  for (int i = 0; i < n; ++i) {
    const Op& op = schedule.ops[i];
    auto [it, fresh] = last_on_stream.try_emplace({op.device, op.stream}, i);
    if (!fresh) {
      preds[i].push_back(it->second);
      it->second = i;
    }
    for (const std::string& key : op.after) {
      if (auto dep = index.find(key); dep != index.end()) preds[i].push_back(dep->second);
    }
    if (op.kind == OpKind::kSend) sends[{op.device, op.peer, op.tensor}] = i;
    if (IsCollective(op.kind)) collectives[{op.group, op.tensor}].push_back(i);
  }
  for (int i = 0; i < n; ++i) {
    const Op& op = schedule.ops[i];
    if (op.kind == OpKind::kRecv) {
      if (auto s = sends.find({op.peer, op.device, op.tensor}); s != sends.end()) {
        preds[i].push_back(s->second);
      }
    }
  }
  for (const auto& [id, members] : collectives) {
    for (int a : members) {
      for (int b : members) {
        if (a != b) preds[a].push_back(b);
      }
    }
  }
  return preds;
}

struct OpTimes {
  std::vector<TimeNs> start, end;  // -1 where the op has no row
};

OpTimes TimesOf(const Schedule& schedule, const Trace& trace, int iteration) {
  const std::map<std::string, int> index = KeyIndex(schedule);
  OpTimes t;
  t.start.assign(schedule.ops.size(), -1);
  t.end.assign(schedule.ops.size(), -1);
  for (const TraceRow& row : trace.rows) {
    if (row.iteration != iteration) continue;
    auto it = index.find(row.key);
    if (it == index.end()) continue;
    t.start[it->second] = row.start_ns;
    t.end[it->second] = row.end_ns;
  }
  return t;
}

double Jaccard(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const std::set<std::string> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  if (sa.empty() && sb.empty()) return 1;
  size_t common = 0;
  for (const std::string& k : sa) common += sb.count(k);
  return static_cast<double>(common) / (sa.size() + sb.size() - common);
}

}  // namespace

Trace IterationTrace(const Trace& trace, int iteration) {
  Trace out;
  out.run_kind = trace.run_kind;
  out.label = trace.label;
  out.metadata = trace.metadata;
  TimeNs first = std::numeric_limits<TimeNs>::max();
  for (const TraceRow& row : trace.rows) {
    if (row.iteration == iteration) first = std::min(first, row.start_ns);
  }
  for (const TraceRow& row : trace.rows) {
    if (row.iteration != iteration) continue;
    TraceRow r = row;
    r.start_ns -= first;
    r.end_ns -= first;
    out.rows.push_back(std::move(r));
  }
  return out;
}

std::vector<int> TraceIterations(const Trace& trace) {
  std::set<int> iterations;
  for (const TraceRow& row : trace.rows) iterations.insert(row.iteration);
  return std::vector<int>(iterations.begin(), iterations.end());
}

TraceSummary SummarizeTrace(const Schedule& schedule, const Trace& trace, int iteration) {
  const OpTimes t = TimesOf(schedule, trace, iteration);
  TraceSummary s;
  TimeNs first = std::numeric_limits<TimeNs>::max(), last = std::numeric_limits<TimeNs>::min();
  int last_op = -1;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    if (t.start[i] < 0 && t.end[i] < 0) continue;
    first = std::min(first, t.start[i]);
    if (t.end[i] > last) {
      last = t.end[i];
      last_op = static_cast<int>(i);
    }
  }
  if (last_op < 0) return s;
  s.iteration_ns = last - first;
  const double span = static_cast<double>(std::max<TimeNs>(1, s.iteration_ns));
  // Busy time per device: the union of its compute intervals.
  std::vector<std::vector<std::pair<TimeNs, TimeNs>>> busy(schedule.devices);
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const Op& op = schedule.ops[i];
    if (!IsCompute(op.kind) || t.end[i] < 0) continue;
    if (op.device >= 0 && op.device < schedule.devices)
      busy[op.device].push_back({t.start[i], t.end[i]});
  }
  for (int d = 0; d < schedule.devices; ++d) {
    auto& intervals = busy[d];
    std::sort(intervals.begin(), intervals.end());
    TimeNs covered = 0, cursor = std::numeric_limits<TimeNs>::min();
    for (const auto& [a, b] : intervals) {
      const TimeNs lo = std::max(a, cursor);
      if (b > lo) covered += b - lo;
      cursor = std::max(cursor, b);
    }
    const double bubble = std::clamp(1 - covered / span, 0.0, 1.0);
    s.device_bubble.push_back(bubble);
    s.bubble_fraction += bubble / schedule.devices;
  }
  // Critical path: back from the last op through the predecessor that ended last.
  const std::vector<std::vector<int>> preds = Predecessors(schedule);
  std::vector<int> path;
  std::vector<char> seen(schedule.ops.size(), 0);
  for (int op = last_op; op >= 0 && !seen[op];) {
    seen[op] = 1;
    path.push_back(op);
    int best = -1;
    for (int p : preds[op]) {
      if (t.end[p] < 0 || seen[p]) continue;
      if (best < 0 || t.end[p] > t.end[best]) best = p;
    }
    op = best;
  }
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    s.critical_path.push_back(schedule.ops[*it].key);
  }
  return s;
}

TraceComparison CompareTraces(const Schedule& schedule, const Trace& measured,
                              int measured_iteration, const Trace& predicted) {
  TraceComparison c;
  const OpTimes m = TimesOf(schedule, measured, measured_iteration);
  const OpTimes p = TimesOf(schedule, predicted, 0);
  if (std::all_of(m.end.begin(), m.end.end(), [](TimeNs e) { return e < 0; })) {
    ThrowInput("validate: the measured trace has no rows for iteration {}", measured_iteration);
  }
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const Op& op = schedule.ops[i];
    if (!IsCompute(op.kind)) continue;
    if (m.end[i] < 0) ThrowInput("validate: op {} is missing from the measured trace", op.key);
    if (p.end[i] < 0) ThrowInput("validate: op {} is missing from the predicted trace", op.key);
  }
  c.measured = SummarizeTrace(schedule, measured, measured_iteration);
  c.predicted = SummarizeTrace(schedule, predicted, 0);
  c.iteration_error =
      c.measured.iteration_ns > 0
          ? static_cast<double>(c.predicted.iteration_ns - c.measured.iteration_ns) /
                c.measured.iteration_ns
          : 0;
  c.bubble_error = c.predicted.bubble_fraction - c.measured.bubble_fraction;
  c.critical_path_agreement = Jaccard(c.measured.critical_path, c.predicted.critical_path);

  std::map<std::tuple<OpKind, int64_t, int64_t>, DurationGroup> groups;
  double compute_error = 0;
  int compute_ops = 0;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    if (m.end[i] < 0 || p.end[i] < 0) continue;
    const Op& op = schedule.ops[i];
    OpPair pair{op.key, op.kind, static_cast<double>(m.end[i] - m.start[i]),
                static_cast<double>(p.end[i] - p.start[i])};
    c.ops.push_back(pair);
    const int64_t tokens = op.tokens.Length(), context = op.tokens.begin;
    DurationGroup& g = groups[{op.kind, tokens, context}];
    g.kind = op.kind;
    g.tokens = tokens;
    g.context = context;
    ++g.count;
    g.measured_ns += pair.measured_ns;
    g.predicted_ns += pair.predicted_ns;
    if (IsCompute(op.kind) && pair.measured_ns > 0) {
      compute_error += std::abs(pair.predicted_ns - pair.measured_ns) / pair.measured_ns;
      ++compute_ops;
    }
  }
  c.compute_mean_abs_rel_error = compute_ops > 0 ? compute_error / compute_ops : 0;
  for (auto& [id, g] : groups) {
    g.measured_ns /= g.count;
    g.predicted_ns /= g.count;
    g.rel_error = g.measured_ns > 0 ? (g.predicted_ns - g.measured_ns) / g.measured_ns : 0;
    c.groups.push_back(g);
  }
  return c;
}

}  // namespace terasim

#include "sim/trace_durations.h"

#include <algorithm>
#include <map>

#include "models/errors.h"

namespace terasim {

std::vector<TimeNs> TraceComputeDurations(const Schedule& schedule, const Trace& trace,
                                          const std::string& origin) {
  std::map<std::string, std::vector<TimeNs>> durations;
  for (const TraceRow& row : trace.rows) {
    if (IsCompute(row.kind)) durations[row.key].push_back(row.end_ns - row.start_ns);
  }
  std::vector<TimeNs> out(schedule.ops.size(), -1);
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const Op& op = schedule.ops[i];
    if (!IsCompute(op.kind)) continue;
    auto it = durations.find(op.key);
    if (it == durations.end()) {
      ThrowInput("{}: no row for compute op {} of {}", origin, op.key,
                 schedule.source.empty() ? "the schedule" : schedule.source);
    }
    std::vector<TimeNs>& d = it->second;
    std::sort(d.begin(), d.end());
    const size_t n = d.size();
    const TimeNs median = n % 2 == 1 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
    out[i] = std::max<TimeNs>(1, median);
  }
  return out;
}

std::vector<std::vector<double>> TraceSpeedFactors(const Schedule& schedule, const Trace& trace,
                                                   const std::string& origin) {
  const std::vector<TimeNs> median = TraceComputeDurations(schedule, trace, origin);
  std::map<std::string, int> compute_op;  // key -> op index
  std::vector<int> ops_of(schedule.devices, 0);
  std::vector<double> median_sum(schedule.devices, 0);
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const Op& op = schedule.ops[i];
    if (!IsCompute(op.kind)) continue;
    compute_op[op.key] = static_cast<int>(i);
    ops_of[op.device] += 1;
    median_sum[op.device] += static_cast<double>(median[i]);
  }
  // (iteration, device) -> (ops seen, their time).
  std::map<std::pair<int, int>, std::pair<int, double>> busy;
  for (const TraceRow& row : trace.rows) {
    auto it = compute_op.find(row.key);
    if (it == compute_op.end()) continue;
    auto& [count, ns] = busy[{row.iteration, schedule.ops[it->second].device}];
    count += 1;
    ns += static_cast<double>(row.end_ns - row.start_ns);
  }
  std::map<int, std::vector<double>> rows;  // iteration -> factor per device (0: incomplete)
  for (const auto& [where, seen] : busy) {
    const int device = where.second;
    std::vector<double>& row = rows[where.first];
    row.resize(schedule.devices, 0);
    if (seen.first == ops_of[device] && median_sum[device] > 0) {
      row[device] = seen.second / median_sum[device];
    }
  }
  std::vector<std::vector<double>> factors;
  for (auto& [iteration, row] : rows) {
    bool whole = true;
    for (int d = 0; d < schedule.devices; ++d) whole = whole && (row[d] > 0 || ops_of[d] == 0);
    for (int d = 0; d < schedule.devices; ++d) {
      if (ops_of[d] == 0) row[d] = 1;  // a device without compute: any factor does nothing
    }
    if (whole) factors.push_back(std::move(row));
  }
  return factors;
}

}  // namespace terasim

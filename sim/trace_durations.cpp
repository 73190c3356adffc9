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

}  // namespace terasim

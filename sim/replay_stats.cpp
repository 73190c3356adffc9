#include "sim/replay_stats.h"

#include <algorithm>

namespace terasim {
namespace {

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

}  // namespace

ReplayStats::ReplayStats(const Schedule& schedule, int num_links)
    : schedule_(schedule),
      compute_(schedule.devices),
      comm_(schedule.devices),
      link_bytes_(num_links, 0.0) {}

void ReplayStats::OnOpEnd(int op, TimeNs start_ns, TimeNs comm_start_ns, TimeNs end_ns) {
  const Op& o = schedule_.ops[op];
  if (IsCompute(o.kind)) {
    compute_[o.device].emplace_back(start_ns, end_ns);
  } else if (end_ns > comm_start_ns) {
    comm_[o.device].emplace_back(comm_start_ns, end_ns);
  }
}

std::vector<ReplayStats::DeviceTimes> ReplayStats::Devices(TimeNs iteration_ns) const {
  std::vector<DeviceTimes> devices(schedule_.devices);
  for (int d = 0; d < schedule_.devices; ++d) {
    std::vector<std::pair<TimeNs, TimeNs>> compute = compute_[d];
    std::vector<std::pair<TimeNs, TimeNs>> both = compute_[d];
    both.insert(both.end(), comm_[d].begin(), comm_[d].end());
    devices[d].compute_ns = UnionNs(compute);
    devices[d].comm_ns = UnionNs(both) - devices[d].compute_ns;
    devices[d].idle_ns =
        std::max<TimeNs>(0, iteration_ns - devices[d].compute_ns - devices[d].comm_ns);
  }
  return devices;
}

}  // namespace terasim

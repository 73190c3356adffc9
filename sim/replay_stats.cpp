#include "sim/replay_stats.h"

#include <algorithm>

namespace terasim {
namespace {

// Total length of the union of `intervals`, sorted.
TimeNs UnionNs(const std::vector<std::pair<TimeNs, TimeNs>>& intervals) {
  TimeNs total = 0;
  TimeNs covered_to = INT64_MIN;
  for (const auto& [begin, end] : intervals) {
    const TimeNs from = std::max(begin, covered_to);
    if (end > from) total += end - from;
    covered_to = std::max(covered_to, end);
  }
  return total;
}

// Sorts `intervals` (they arrive in end order, mostly already sorted by start).
void Sort(std::vector<std::pair<TimeNs, TimeNs>>& intervals) {
  if (!std::is_sorted(intervals.begin(), intervals.end())) {
    std::sort(intervals.begin(), intervals.end());
  }
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
  std::vector<Interval> compute, comm, both;
  for (int d = 0; d < schedule_.devices; ++d) {
    // Sorting each list and merging the two is sorting their concatenation.
    compute = compute_[d];
    comm = comm_[d];
    Sort(compute);
    Sort(comm);
    both.resize(compute.size() + comm.size());
    std::merge(compute.begin(), compute.end(), comm.begin(), comm.end(), both.begin());
    devices[d].compute_ns = UnionNs(compute);
    devices[d].comm_ns = UnionNs(both) - devices[d].compute_ns;
    devices[d].idle_ns =
        std::max<TimeNs>(0, iteration_ns - devices[d].compute_ns - devices[d].comm_ns);
  }
  return devices;
}

}  // namespace terasim

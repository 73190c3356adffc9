#include "sim/replay_stats.h"

#include <algorithm>

namespace terasim {

ReplayStats::ReplayStats(int num_devices, int num_links)
    : devices_(num_devices), link_bytes_(num_links, 0.0) {}

std::vector<ReplayStats::DeviceTimes> ReplayStats::Devices(TimeNs iteration_ns) const {
  std::vector<DeviceTimes> times(devices_.size());
  for (size_t d = 0; d < devices_.size(); ++d) {
    times[d].compute_ns = devices_[d].compute.total_ns;
    times[d].comm_ns = devices_[d].any.total_ns - times[d].compute_ns;
    times[d].idle_ns = std::max<TimeNs>(0, iteration_ns - times[d].compute_ns - times[d].comm_ns);
  }
  return times;
}

bool ReplayStats::AllWhole(const std::vector<std::pair<int, double>>& list, double* total) {
  bool whole = true;
  *total = 0;
  for (const auto& [link, b] : list) {
    whole = whole && Whole(b);
    *total += b;  // exact while whole: whole numbers below 2^53
  }
  return whole;
}

void ReplayStats::AddWhileExact(const std::vector<std::pair<int, double>>& list) {
  double total = 0;
  if (!AllWhole(list, &total) || bound_ + total >= kExactBelow) LeaveExact();
  bound_ += total;
  double* const bytes = link_bytes_.data();
  for (const auto& [link, b] : list) bytes[link] += b;
}

void ReplayStats::RepeatSlow(int number, const std::vector<std::pair<int, double>>& list) {
  if (number < 0) {
    // Not a numbered list (a route whose list was never built: its first transfer's size was
    // the "none yet" mark): added as it is, never counted.
    OnLinkBytesList(list);
    return;
  }
  double total = 0;
  if (exact_ && AllWhole(list, &total) && bound_ + total < kExactBelow) {
    if (static_cast<size_t>(number) >= repeated_.size()) repeated_.resize(number + 1);
    Repeated& r = repeated_[number];
    if (r.times == 0) {
      r.list = list;
      r.total = total;
    }
    bound_ += total;
    ++r.times;
    return;
  }
  if (exact_) LeaveExact();
  OnLinkBytesList(list);
}

void ReplayStats::AddRepeated() {
  double* const bytes = link_bytes_.data();
  for (Repeated& r : repeated_) {
    if (r.times == 0) continue;
    const auto times = static_cast<double>(r.times);
    for (const auto& [link, b] : r.list) bytes[link] += b * times;
    r.times = 0;
  }
}

void ReplayStats::LeaveExact() {
  AddRepeated();
  repeated_.clear();
  exact_ = false;
}

const std::vector<double>& ReplayStats::LinkBytes() {
  AddRepeated();
  return link_bytes_;
}

}  // namespace terasim

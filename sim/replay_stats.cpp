#include "sim/replay_stats.h"

#include <algorithm>

namespace terasim {

void ReplayStats::Busy::Enter(TimeNs now_ns) {
  if (running++ == 0) since_ns = now_ns;
}

void ReplayStats::Busy::Leave(TimeNs now_ns) {
  if (--running == 0) total_ns += now_ns - since_ns;
}

ReplayStats::ReplayStats(const Schedule& schedule, int num_links)
    : schedule_(schedule), devices_(schedule.devices), link_bytes_(num_links, 0.0) {}

void ReplayStats::OnOpStart(int op, TimeNs now_ns) {
  const Op& o = schedule_.ops[op];
  if (!IsCompute(o.kind)) return;
  devices_[o.device].compute.Enter(now_ns);
  devices_[o.device].any.Enter(now_ns);
}

void ReplayStats::OnCommStart(int op, TimeNs now_ns) {
  devices_[schedule_.ops[op].device].any.Enter(now_ns);
}

void ReplayStats::OnOpEnd(int op, TimeNs start_ns, TimeNs comm_start_ns, TimeNs end_ns) {
  const Op& o = schedule_.ops[op];
  if (IsCompute(o.kind)) devices_[o.device].compute.Leave(end_ns);
  devices_[o.device].any.Leave(end_ns);
}

std::vector<ReplayStats::DeviceTimes> ReplayStats::Devices(TimeNs iteration_ns) const {
  std::vector<DeviceTimes> times(devices_.size());
  for (size_t d = 0; d < devices_.size(); ++d) {
    times[d].compute_ns = devices_[d].compute.total_ns;
    times[d].comm_ns = devices_[d].any.total_ns - times[d].compute_ns;
    times[d].idle_ns = std::max<TimeNs>(0, iteration_ns - times[d].compute_ns - times[d].comm_ns);
  }
  return times;
}

}  // namespace terasim

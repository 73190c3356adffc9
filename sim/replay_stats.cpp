#include "sim/replay_stats.h"

#include <algorithm>

#include "sim/replay_graph.h"

namespace terasim {

void ReplayStats::Busy::Enter(TimeNs now_ns) {
  if (running++ == 0) since_ns = now_ns;
}

void ReplayStats::Busy::Leave(TimeNs now_ns) {
  if (--running == 0) total_ns += now_ns - since_ns;
}

ReplayStats::ReplayStats(const Schedule& schedule, int num_links)
    : op_info_(schedule.ops.size()), devices_(schedule.devices), link_bytes_(num_links, 0.0) {
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const Op& op = schedule.ops[i];
    op_info_[i] = op.device * 2 + (ClassOf(op.kind) == OpClass::kCompute ? 1 : 0);
  }
}

void ReplayStats::OnOpStart(int op, TimeNs now_ns) {
  const int info = op_info_[op];
  if ((info & 1) == 0) return;
  Device& device = devices_[info >> 1];
  device.compute.Enter(now_ns);
  device.any.Enter(now_ns);
}

void ReplayStats::OnCommStart(int op, TimeNs now_ns) {
  devices_[op_info_[op] >> 1].any.Enter(now_ns);
}

void ReplayStats::OnOpEnd(int op, TimeNs start_ns, TimeNs comm_start_ns, TimeNs end_ns) {
  const int info = op_info_[op];
  Device& device = devices_[info >> 1];
  if ((info & 1) != 0) device.compute.Leave(end_ns);
  device.any.Leave(end_ns);
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

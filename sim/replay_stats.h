// ReplayStats: a ReplayObserver that turns a replay into per-device busy / communication /
// idle time and per-link bytes.
//
// Per device: compute = time with at least one compute op running; communication = time with
// data of one of its communication ops moving and no compute running (exposed
// communication); idle = the rest of the iteration (the pipeline bubble, plus waiting). The
// three add up to the iteration time. Not thread-safe.
#pragma once

#include <utility>
#include <vector>

#include "models/units.h"
#include "schedule/schedule_ir.h"
#include "sim/replay_observer.h"

namespace terasim {

class ReplayStats : public ReplayObserver {
 public:
  struct DeviceTimes {
    TimeNs compute_ns = 0;
    TimeNs comm_ns = 0;  // exposed: communicating while not computing
    TimeNs idle_ns = 0;
  };

  // Borrows the schedule; `num_links` sizes the per-link byte counters.
  ReplayStats(const Schedule& schedule, int num_links);

  void OnOpEnd(int op, TimeNs start_ns, TimeNs comm_start_ns, TimeNs end_ns) override;
  void OnLinkBytes(int link, double bytes) override { link_bytes_[link] += bytes; }

  // Times of each schedule device over an iteration of `iteration_ns`.
  std::vector<DeviceTimes> Devices(TimeNs iteration_ns) const;
  // Bytes sent over each link.
  const std::vector<double>& LinkBytes() const { return link_bytes_; }

 private:
  using Interval = std::pair<TimeNs, TimeNs>;
  const Schedule& schedule_;
  std::vector<std::vector<Interval>> compute_;  // per device
  std::vector<std::vector<Interval>> comm_;
  std::vector<double> link_bytes_;
};

}  // namespace terasim

// ReplayStats: a ReplayObserver that turns a replay into per-device busy / communication /
// idle time and per-link bytes.
//
// Per device: compute = time with at least one compute op running; communication = time with
// data of one of its communication ops moving and no compute running (exposed
// communication); idle = the rest of the iteration (the pipeline bubble, plus waiting). The
// three add up to the iteration time.
//
// Counted as the replay runs (callbacks come in simulated-time order): per device, how many
// compute ops run and how many ops compute or move data; a count leaving 0 opens a busy span,
// returning to 0 closes it. That is the length of the union of the ops' intervals, without
// keeping one interval per op. Each op's device and whether it computes are copied at
// construction into one int per op, so that a callback reads 4 bytes, not the op. Not thread-safe.
#pragma once

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

  void OnOpStart(int op, TimeNs now_ns) override;
  void OnCommStart(int op, TimeNs now_ns) override;
  void OnOpEnd(int op, TimeNs start_ns, TimeNs comm_start_ns, TimeNs end_ns) override;
  void OnLinkBytes(int link, double bytes) override { link_bytes_[link] += bytes; }
  void OnLinkBytesList(const std::vector<std::pair<int, double>>& list) override {
    for (const auto& [link, bytes] : list) link_bytes_[link] += bytes;
  }

  // Times of each schedule device over an iteration of `iteration_ns` (every op ended).
  std::vector<DeviceTimes> Devices(TimeNs iteration_ns) const;
  // Bytes sent over each link.
  const std::vector<double>& LinkBytes() const { return link_bytes_; }

 private:
  // A count of running things and the union of the time it was above 0.
  struct Busy {
    int running = 0;
    TimeNs since_ns = 0;
    TimeNs total_ns = 0;
    void Enter(TimeNs now_ns);
    void Leave(TimeNs now_ns);
  };
  struct Device {
    Busy compute;  // compute ops
    Busy any;      // compute ops and communication ops whose data moves
  };
  std::vector<int> op_info_;  // per op: device * 2 + (1 when it is a compute op)
  std::vector<Device> devices_;
  std::vector<double> link_bytes_;
};

}  // namespace terasim

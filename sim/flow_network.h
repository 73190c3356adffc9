// FlowNetwork: flows of work over shared channels, on the event engine.
//
// A flow carries `amount` units over a route of channels. It first waits its latency (nothing
// moves), then joins its channels, where the active flows share every channel max-min fairly
// (MaxMinFairRates). Rates are recomputed, once per instant and only for the flows connected
// to a change through shared channels, whenever a flow joins or leaves. When a flow has moved
// its whole amount the listener hears OnFlowDone(tag).
//
// The replay uses one FlowNetwork for network links (units: bytes, capacity bytes/s) and for
// each GPU's compute (units: ns of work, capacity 1e9 per s: processor sharing). Not
// thread-safe; the listener and the engine are borrowed and must outlive the network.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/units.h"
#include "sim/engine.h"

namespace terasim {

class FlowListener {
 public:
  virtual ~FlowListener() = default;
  // A flow started with `tag` has delivered its whole amount (at engine.Now()).
  virtual void OnFlowDone(int64_t tag) = 0;
};

class FlowNetwork : public EventHandler {
 public:
  // `capacity_per_s[c]` (> 0) is channel c's capacity in units per second.
  FlowNetwork(Engine& engine, std::vector<double> capacity_per_s, FlowListener& listener);

  // Starts a flow now: after `latency_ns` it joins the channels of `route` and moves `amount`
  // units. An empty route or amount <= 0 finishes after the latency alone. Returns the flow id
  // (ids of finished flows are reused).
  int StartFlow(const std::vector<int>& route, double amount, TimeNs latency_ns, int64_t tag);

  int NumChannels() const { return static_cast<int>(channels_.size()); }
  // Time during which channel c carried at least one flow, up to the last change.
  TimeNs BusyNs(int channel) const { return channels_[channel].busy_ns; }
  // Flows currently moving or waiting out their latency.
  int ActiveFlows() const { return active_flows_; }
  // Flows started since construction (for benchmarks).
  int64_t FlowsStarted() const { return flows_started_; }

  // Optional: called at each rate recomputation for every channel whose total rate changed,
  // with the time, the channel and its new total rate (units/s). For utilization counters.
  void SetRateSampler(std::function<void(TimeNs, int, double)> sampler) {
    sampler_ = std::move(sampler);
  }

  void Handle(const Event& event) override;

 private:
  enum EventKind { kActivate = 0, kReallocate = 1, kFinish = 2 };

  struct Channel {
    double capacity_per_s = 0;
    std::vector<int> flows;  // active (moving) flows crossing it
    double total_rate = 0;   // sum of their rates at the last recomputation
    TimeNs busy_since_ns = 0;
    TimeNs busy_ns = 0;
    uint64_t visit = 0;  // traversal stamp
    bool dirty = false;
  };
  struct Flow {
    std::vector<int> route;
    double remaining = 0;  // units still to move at last_update_ns
    double rate = 0;       // units/s
    TimeNs last_update_ns = 0;
    uint64_t version = 0;  // bumped on every (re)scheduling; stale events are ignored
    uint64_t visit = 0;
    int64_t tag = 0;
    bool moving = false;
    bool in_use = false;
  };

  void Activate(int flow);
  void Finish(int flow);
  void MarkDirty(int channel);
  void Reallocate();
  void ScheduleFinish(int flow);

  Engine& engine_;
  FlowListener& listener_;
  int handler_id_;
  std::vector<Channel> channels_;
  std::vector<Flow> flows_;
  std::vector<int> free_flows_;
  std::vector<int> dirty_channels_;
  bool reallocate_pending_ = false;
  uint64_t visit_stamp_ = 0;
  int active_flows_ = 0;
  int64_t flows_started_ = 0;
  std::function<void(TimeNs, int, double)> sampler_;
};

}  // namespace terasim

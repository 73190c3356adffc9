#include "sim/flow_network.h"

#include <algorithm>
#include <cmath>

#include "models/errors.h"
#include "sim/max_min_fair.h"

namespace terasim {

FlowNetwork::FlowNetwork(Engine& engine, std::vector<double> capacity_per_s, FlowListener& listener)
    : engine_(engine), listener_(listener), handler_id_(engine.AddHandler(this)) {
  channels_.resize(capacity_per_s.size());
  for (size_t c = 0; c < capacity_per_s.size(); ++c) {
    TERASIM_CHECK(capacity_per_s[c] > 0, "channel {} has capacity {}", c, capacity_per_s[c]);
    channels_[c].capacity_per_s = capacity_per_s[c];
  }
}

int FlowNetwork::StartFlow(const std::vector<int>& route, double amount, TimeNs latency_ns,
                           int64_t tag) {
  int id;
  if (!free_flows_.empty()) {
    id = free_flows_.back();
    free_flows_.pop_back();
  } else {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
  }
  Flow& flow = flows_[id];
  for (int c : route) TERASIM_CHECK(c >= 0 && c < NumChannels(), "unknown channel {}", c);
  flow.route = route;
  flow.remaining = std::max(0.0, amount);
  flow.rate = 0;
  flow.tag = tag;
  flow.moving = false;
  flow.in_use = true;
  ++flow.version;
  ++active_flows_;
  ++flows_started_;
  if (latency_ns > 0) {
    engine_.Schedule(engine_.Now() + latency_ns, handler_id_, kActivate, id,
                     static_cast<int64_t>(flow.version));
  } else {
    Activate(id);
  }
  return id;
}

void FlowNetwork::Handle(const Event& event) {
  switch (event.kind) {
    case kActivate:
      if (flows_[event.a].version == static_cast<uint64_t>(event.b)) Activate(event.a);
      break;
    case kReallocate:
      reallocate_pending_ = false;
      Reallocate();
      break;
    case kFinish:
      if (flows_[event.a].in_use && flows_[event.a].version == static_cast<uint64_t>(event.b)) {
        Finish(event.a);
      }
      break;
    default:
      TERASIM_CHECK(false, "unknown flow network event kind {}", event.kind);
  }
}

void FlowNetwork::Activate(int id) {
  Flow& flow = flows_[id];
  flow.last_update_ns = engine_.Now();
  if (flow.route.empty() || flow.remaining <= 0) {
    ScheduleFinish(id);  // nothing to move: done now
    return;
  }
  flow.moving = true;
  for (int c : flow.route) {
    Channel& channel = channels_[c];
    if (channel.flows.empty()) channel.busy_since_ns = engine_.Now();
    channel.flows.push_back(id);
    MarkDirty(c);
  }
}

void FlowNetwork::Finish(int id) {
  Flow& flow = flows_[id];
  if (flow.moving) {
    for (int c : flow.route) {
      Channel& channel = channels_[c];
      auto it = std::find(channel.flows.begin(), channel.flows.end(), id);
      if (it != channel.flows.end()) channel.flows.erase(it);
      if (channel.flows.empty()) channel.busy_ns += engine_.Now() - channel.busy_since_ns;
      MarkDirty(c);
    }
  }
  flow.moving = false;
  flow.in_use = false;
  ++flow.version;
  --active_flows_;
  const int64_t tag = flow.tag;
  free_flows_.push_back(id);
  listener_.OnFlowDone(tag);
}

void FlowNetwork::MarkDirty(int c) {
  if (!channels_[c].dirty) {
    channels_[c].dirty = true;
    dirty_channels_.push_back(c);
  }
  if (!reallocate_pending_) {
    reallocate_pending_ = true;
    engine_.Schedule(engine_.Now(), handler_id_, kReallocate);
  }
}

void FlowNetwork::ScheduleFinish(int id) {
  Flow& flow = flows_[id];
  ++flow.version;
  TimeNs duration_ns = 0;
  if (flow.moving && flow.remaining > 0) {
    // A tolerance well below one ns keeps exact quotients from rounding up a whole ns.
    const double ns = flow.remaining / flow.rate * 1e9;
    duration_ns = static_cast<TimeNs>(std::max(0.0, std::ceil(ns - 1e-6)));
  }
  engine_.Schedule(engine_.Now() + duration_ns, handler_id_, kFinish, id,
                   static_cast<int64_t>(flow.version));
}

void FlowNetwork::Reallocate() {
  const TimeNs now = engine_.Now();
  // The connected component of flows and channels reachable from the changed channels.
  ++visit_stamp_;
  std::vector<int> component_channels;
  std::vector<int> component_flows;
  std::vector<int> stack;
  for (int c : dirty_channels_) {
    channels_[c].dirty = false;
    if (channels_[c].visit == visit_stamp_) continue;
    channels_[c].visit = visit_stamp_;
    stack.push_back(c);
    while (!stack.empty()) {
      const int ch = stack.back();
      stack.pop_back();
      component_channels.push_back(ch);
      for (int f : channels_[ch].flows) {
        if (flows_[f].visit == visit_stamp_) continue;
        flows_[f].visit = visit_stamp_;
        component_flows.push_back(f);
        for (int next : flows_[f].route) {
          if (channels_[next].visit == visit_stamp_) continue;
          channels_[next].visit = visit_stamp_;
          stack.push_back(next);
        }
      }
    }
  }
  dirty_channels_.clear();
  if (component_flows.empty() && !sampler_) {
    for (int c : component_channels) channels_[c].total_rate = 0;
    return;
  }

  // Local indices for the solver.
  std::sort(component_channels.begin(), component_channels.end());
  std::vector<double> capacity(component_channels.size());
  for (size_t i = 0; i < component_channels.size(); ++i) {
    capacity[i] = channels_[component_channels[i]].capacity_per_s;
  }
  auto local = [&](int c) {
    return static_cast<int>(
        std::lower_bound(component_channels.begin(), component_channels.end(), c) -
        component_channels.begin());
  };
  std::vector<std::vector<int>> routes(component_flows.size());
  for (size_t i = 0; i < component_flows.size(); ++i) {
    Flow& flow = flows_[component_flows[i]];
    flow.remaining = std::max(0.0, flow.remaining - flow.rate * 1e-9 * (now - flow.last_update_ns));
    flow.last_update_ns = now;
    routes[i].reserve(flow.route.size());
    for (int c : flow.route) routes[i].push_back(local(c));
  }
  const std::vector<double> rates = MaxMinFairRates(capacity, routes);

  std::vector<double> channel_rate(component_channels.size(), 0.0);
  for (size_t i = 0; i < component_flows.size(); ++i) {
    const int id = component_flows[i];
    for (int c : routes[i]) channel_rate[c] += rates[i];
    if (rates[i] != flows_[id].rate) {
      flows_[id].rate = rates[i];
      ScheduleFinish(id);
    }
  }
  for (size_t i = 0; i < component_channels.size(); ++i) {
    Channel& channel = channels_[component_channels[i]];
    if (sampler_ && channel.total_rate != channel_rate[i]) {
      sampler_(now, component_channels[i], channel_rate[i]);
    }
    channel.total_rate = channel_rate[i];
  }
}

}  // namespace terasim

#include "sim/flow_network.h"

#include <algorithm>
#include <cmath>

#include "models/errors.h"

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
  flow.route.clear();
  flow.weight.clear();
  for (int c : route) {
    TERASIM_CHECK(c >= 0 && c < NumChannels(), "unknown channel {}", c);
    auto it = std::find(flow.route.begin(), flow.route.end(), c);
    if (it == flow.route.end()) {
      flow.route.push_back(c);
      flow.weight.push_back(1);
    } else {
      ++flow.weight[it - flow.route.begin()];
    }
  }
  flow.remaining = std::max(0.0, amount);
  flow.rate = 0;
  flow.tag = tag;
  flow.moving = false;
  flow.in_use = true;
  ++flow.version;
  ++active_flows_;
  ++flows_started_;
  if (latency_ns > 0) {
    Enqueue(kActivate, engine_.Now() + latency_ns, id);
  } else {
    Activate(id);
  }
  return id;
}

void FlowNetwork::Handle(const Event& event) {
  switch (event.kind) {
    case kActivate:
    case kFinish: {
      const int b = static_cast<int>(event.a);
      OpenBatch& open = event.kind == kActivate ? open_activate_ : open_finish_;
      if (open.batch == b) open.batch = -1;
      // By index: finishing a flow may start flows, which may add batches.
      for (size_t k = 0; k < batches_[b].flows.size(); ++k) {
        const auto [id, version] = batches_[b].flows[k];
        if (flows_[id].version != version) continue;  // rescheduled or finished since
        if (event.kind == kActivate) {
          Activate(id);
        } else if (flows_[id].in_use) {
          Finish(id);
        }
      }
      batches_[b].flows.clear();
      free_batches_.push_back(b);
      break;
    }
    case kReallocate:
      reallocate_pending_ = false;
      Reallocate();
      break;
    default:
      TERASIM_CHECK(false, "unknown flow network event kind {}", event.kind);
  }
}

void FlowNetwork::Enqueue(EventKind kind, TimeNs time_ns, int id) {
  OpenBatch& open = kind == kActivate ? open_activate_ : open_finish_;
  if (open.batch >= 0 && open.time_ns == time_ns && open.seq + 1 == engine_.NextSeq()) {
    batches_[open.batch].flows.emplace_back(id, flows_[id].version);
    return;
  }
  int b;
  if (!free_batches_.empty()) {
    b = free_batches_.back();
    free_batches_.pop_back();
  } else {
    b = static_cast<int>(batches_.size());
    batches_.emplace_back();
  }
  batches_[b].flows.emplace_back(id, flows_[id].version);
  open.batch = b;
  open.time_ns = time_ns;
  open.seq = engine_.Schedule(time_ns, handler_id_, kind, b);
}

void FlowNetwork::Activate(int id) {
  Flow& flow = flows_[id];
  flow.last_update_ns = engine_.Now();
  if (flow.route.empty() || flow.remaining <= 0) {
    ScheduleFinish(id);  // nothing to move: done now
    return;
  }
  flow.moving = true;
  for (size_t k = 0; k < flow.route.size(); ++k) {
    const int c = flow.route[k];
    Channel& channel = channels_[c];
    if (channel.flows.empty()) channel.busy_since_ns = engine_.Now();
    channel.flows.push_back(id);
    channel.weight += flow.weight[k];
    MarkDirty(c);
  }
}

void FlowNetwork::Finish(int id) {
  Flow& flow = flows_[id];
  if (flow.moving) {
    for (size_t k = 0; k < flow.route.size(); ++k) {
      const int c = flow.route[k];
      Channel& channel = channels_[c];
      auto it = std::find(channel.flows.begin(), channel.flows.end(), id);
      if (it != channel.flows.end()) channel.flows.erase(it);
      channel.weight -= flow.weight[k];
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
  Enqueue(kFinish, engine_.Now() + duration_ns, id);
}

void FlowNetwork::Reallocate() {
  const TimeNs now = engine_.Now();
  // The connected component of flows and channels reachable from the changed channels: the
  // only flows whose max-min rates can change.
  ++visit_stamp_;
  component_channels_.clear();
  component_flows_.clear();
  for (int c : dirty_channels_) {
    channels_[c].dirty = false;
    if (channels_[c].visit == visit_stamp_) continue;
    channels_[c].visit = visit_stamp_;
    stack_.push_back(c);
    while (!stack_.empty()) {
      const int ch = stack_.back();
      stack_.pop_back();
      component_channels_.push_back(ch);
      for (int f : channels_[ch].flows) {
        if (flows_[f].visit == visit_stamp_) continue;
        flows_[f].visit = visit_stamp_;
        component_flows_.push_back(f);
        for (int next : flows_[f].route) {
          if (channels_[next].visit == visit_stamp_) continue;
          channels_[next].visit = visit_stamp_;
          stack_.push_back(next);
        }
      }
    }
  }
  dirty_channels_.clear();
  if (component_flows_.empty() && !sampler_) {
    for (int c : component_channels_) channels_[c].total_rate = 0;
    return;
  }
  for (int id : component_flows_) {
    Flow& flow = flows_[id];
    flow.remaining = std::max(0.0, flow.remaining - flow.rate * 1e-9 * (now - flow.last_update_ns));
    flow.last_update_ns = now;
  }
  SolveComponent();

  for (int c : component_channels_) channels_[c].rate_sum = 0;
  for (int id : component_flows_) {
    Flow& flow = flows_[id];
    // Added once per crossing (k for weight k), as k flows' rates would be.
    for (size_t k = 0; k < flow.route.size(); ++k) {
      for (int w = 0; w < flow.weight[k]; ++w) channels_[flow.route[k]].rate_sum += flow.new_rate;
    }
    if (flow.new_rate != flow.rate) {
      flow.rate = flow.new_rate;
      ScheduleFinish(id);
    }
  }
  if (sampler_) std::sort(component_channels_.begin(), component_channels_.end());
  for (int c : component_channels_) {
    Channel& channel = channels_[c];
    if (sampler_ && channel.total_rate != channel.rate_sum) sampler_(now, c, channel.rate_sum);
    channel.total_rate = channel.rate_sum;
  }
}

// Heap order: the smallest share on top, ties to the lowest channel id.
bool FlowNetwork::LaterShare::operator()(const ShareEntry& x, const ShareEntry& y) const {
  return x.share != y.share ? x.share > y.share : x.channel > y.channel;
}

void FlowNetwork::PushShare(int c) {
  Channel& channel = channels_[c];
  ++channel.heap_version;
  heap_.push_back({std::max(0.0, channel.left_per_s) / channel.unfixed, c, channel.heap_version});
  std::push_heap(heap_.begin(), heap_.end(), LaterShare{});
}

void FlowNetwork::SolveComponent() {
  // Progressive filling exactly as MaxMinFairRates does it: repeatedly the channel with the
  // smallest fair share (remaining capacity / unfixed crossings; ties: the lowest channel id)
  // saturates and fixes its unfixed flows at that share. The smallest share comes from a heap
  // holding one current entry per channel (older entries are skipped by version), so a solve
  // costs O(crossings x log channels) instead of a scan of every channel per bottleneck, and
  // the arithmetic (each subtraction, each division) is the same as the reference's.
  const uint64_t stamp = visit_stamp_;
  if (component_channels_.size() == 1) {
    // One channel (a GPU's compute, a lone link): one round, every flow at capacity / crossings.
    const Channel& channel = channels_[component_channels_[0]];
    if (channel.flows.empty()) return;
    const double share = std::max(0.0, channel.capacity_per_s) / channel.weight;
    for (int f : channel.flows) flows_[f].new_rate = share;
    return;
  }
  for (int c : component_channels_) {
    channels_[c].left_per_s = channels_[c].capacity_per_s;
    channels_[c].unfixed = 0;
  }
  for (int id : component_flows_) {
    const Flow& flow = flows_[id];
    for (size_t k = 0; k < flow.route.size(); ++k)
      channels_[flow.route[k]].unfixed += flow.weight[k];
  }
  active_.clear();
  for (int c : component_channels_) {
    if (channels_[c].unfixed > 0) active_.push_back(c);
  }
  if (active_.size() * component_flows_.size() <= kScanWork) {
    // Few channels and flows (at most one round per flow): a scan of the channels' current
    // shares per round finds the same bottleneck as the heap (the smallest share, ties to the
    // lowest channel id) for less than the heap's upkeep.
    while (!active_.empty()) {
      int best = -1;
      double best_share = 0;
      for (int c : active_) {
        const Channel& channel = channels_[c];
        const double share = std::max(0.0, channel.left_per_s) / channel.unfixed;
        if (best < 0 || share < best_share || (share == best_share && c < best)) {
          best = c;
          best_share = share;
        }
      }
      for (int f : channels_[best].flows) {
        Flow& flow = flows_[f];
        if (flow.fixed == stamp) continue;
        flow.fixed = stamp;
        flow.new_rate = best_share;
        for (size_t k = 0; k < flow.route.size(); ++k) {
          Channel& channel = channels_[flow.route[k]];
          // One subtraction per crossing: the arithmetic of k flows of weight 1.
          for (int w = 0; w < flow.weight[k]; ++w) channel.left_per_s -= best_share;
          channel.unfixed -= flow.weight[k];
        }
      }
      active_.erase(std::remove_if(active_.begin(), active_.end(),
                                   [this](int c) { return channels_[c].unfixed == 0; }),
                    active_.end());
    }
    return;
  }
  heap_.clear();
  for (int c : active_) PushShare(c);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), LaterShare{});
    const ShareEntry top = heap_.back();
    heap_.pop_back();
    Channel& bottleneck = channels_[top.channel];
    if (top.version != bottleneck.heap_version || bottleneck.unfixed == 0) continue;
    ++visit_stamp_;  // marks the channels touched in this round
    touched_.clear();
    for (int f : bottleneck.flows) {
      Flow& flow = flows_[f];
      if (flow.fixed == stamp) continue;
      flow.fixed = stamp;
      flow.new_rate = top.share;
      for (size_t k = 0; k < flow.route.size(); ++k) {
        const int c = flow.route[k];
        Channel& channel = channels_[c];
        for (int w = 0; w < flow.weight[k]; ++w) channel.left_per_s -= top.share;
        channel.unfixed -= flow.weight[k];
        if (channel.visit != visit_stamp_) {
          channel.visit = visit_stamp_;
          touched_.push_back(c);
        }
      }
    }
    for (int c : touched_) {
      if (channels_[c].unfixed > 0) PushShare(c);
    }
  }
}

}  // namespace terasim

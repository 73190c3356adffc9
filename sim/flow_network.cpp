#include "sim/flow_network.h"

#include <algorithm>
#include <cmath>

#include "models/errors.h"
#include "sim/free_slots.h"
#include "sim/ordered_list.h"

namespace terasim {

FlowNetwork::FlowNetwork(Engine& engine, std::vector<double> capacity_per_s, FlowListener& listener)
    : engine_(engine), listener_(listener), handler_id_(engine.AddHandler(this)) {
  channels_.resize(capacity_per_s.size());
  for (size_t c = 0; c < capacity_per_s.size(); ++c) {
    TERASIM_CHECK(capacity_per_s[c] > 0, "channel {} has capacity {}", c, capacity_per_s[c]);
    channels_[c].capacity_per_s = capacity_per_s[c];
  }
  component_channels_.resize(channels_.size());
  stack_.resize(channels_.size());
}

int FlowNetwork::InternRoute(const std::vector<int>& route) {
  uint64_t hash = 0x9e3779b97f4a7c15ULL * (route.size() + 1);
  for (int c : route) hash = (hash ^ static_cast<uint32_t>(c)) * 0xbf58476d1ce4e5b9ULL;
  hash ^= hash >> 31;
  if (2 * (routes_.size() + 1) > route_index_.size()) {
    // Grow (at most half full) and re-insert.
    std::vector<std::pair<uint64_t, int>> old = std::move(route_index_);
    route_index_.assign(old.empty() ? 64 : 2 * old.size(), {0, -1});
    const size_t mask = route_index_.size() - 1;
    for (const auto& slot : old) {
      if (slot.second < 0) continue;
      size_t i = slot.first & mask;
      while (route_index_[i].second >= 0) i = (i + 1) & mask;
      route_index_[i] = slot;
    }
  }
  const size_t mask = route_index_.size() - 1;
  size_t i = hash & mask;
  for (; route_index_[i].second >= 0; i = (i + 1) & mask) {
    if (route_index_[i].first == hash && routes_[route_index_[i].second].listed == route) {
      return route_index_[i].second;
    }
  }
  Route& interned = routes_.emplace_back();
  interned.listed = route;
  // Each channel once, with its count; a stamp on the channel finds a repeat in O(1).
  ++route_stamp_;
  for (int c : route) {
    TERASIM_CHECK(c >= 0 && c < NumChannels(), "unknown channel {}", c);
    Channel& channel = channels_[c];
    if (channel.route_stamp != route_stamp_) {
      channel.route_stamp = route_stamp_;
      channel.route_pos = static_cast<int>(interned.channels.size());
      interned.channels.push_back(c);
      interned.weights.push_back(1);
    } else {
      ++interned.weights[channel.route_pos];
    }
  }
  const int id = static_cast<int>(routes_.size()) - 1;
  route_index_[i] = {hash, id};
  route_views_.push_back({interned.channels.data(), interned.weights.data(),
                          static_cast<int>(interned.channels.size())});
  return id;
}

int FlowNetwork::StartFlowOn(int route, double amount, TimeNs latency_ns, int64_t tag) {
  TERASIM_CHECK(route >= 0 && route < static_cast<int>(route_views_.size()), "unknown route {}",
                route);
  const int id = TakeSlot(free_flows_, flows_);
  Flow& flow = flows_[id];
  const RouteView& view = route_views_[route];
  flow.channels = view.channels;
  flow.weights = view.weights;
  flow.route_size = view.size;
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
      if (event.kind == kActivate && ActivateAlone(batches_[b])) {
        // Done without a recomputation event.
      } else {
        finishing_ = event.kind == kFinish;
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
        finishing_ = false;
        if (solve_deferred_) {
          solve_deferred_ = false;
          if (!reallocate_pending_ && AnyDirtyFlows()) ScheduleReallocate();
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
  const int b = TakeSlot(free_batches_, batches_);
  batches_[b].flows.emplace_back(id, flows_[id].version);
  open.batch = b;
  open.time_ns = time_ns;
  open.seq = engine_.Schedule(time_ns, handler_id_, kind, b);
}

bool FlowNetwork::ActivateAlone(const Batch& batch) {
  const TimeNs now = engine_.Now();
  if (sampler_ || reallocate_pending_ || engine_.HasEventAt(now)) return false;
  if (batch.flows.size() == 1) return ActivateOneAlone(batch.flows[0].first, batch.flows[0].second);
  // Every flow moving, on idle channels that no flow of the batch on another route crosses.
  const uint64_t stamp = ++visit_stamp_;
  bool any = false;
  for (const auto& [id, version] : batch.flows) {
    const Flow& flow = flows_[id];
    if (flow.version != version) continue;
    any = true;
    if (flow.route_size == 0 || flow.remaining <= 0) return false;
    for (int k = 0; k < flow.route_size; ++k) {
      Channel& channel = channels_[flow.channels[k]];
      if (!channel.flows.empty()) return false;
      if (channel.visit == stamp && channel.batch_route != flow.channels) return false;
      channel.visit = stamp;
      channel.batch_route = flow.channels;
    }
  }
  if (!any) return false;  // nothing joins: no recomputation to stand for
  // The place the recomputation would take (ScheduleReallocate's, by Engine::Reserve: every
  // later event keeps its seq), and the dirty channels it would clear.
  if (!reserved_ || engine_.Passed(reserved_time_ns_, reserved_seq_)) engine_.Reserve();
  reserved_ = false;
  ClearDirty();
  for (const auto& [id, version] : batch.flows) {
    if (flows_[id].version == version) JoinRoute(id, now);
  }
  // Each route's flows are a component: its rate by SolveComponent's closed form (one channel,
  // or one route: the same arithmetic), its flows' finishes in the order the recomputation
  // finds them (routes by first flow, then the batch's order: its first channel's list).
  const uint64_t done = ++visit_stamp_;
  for (const auto& [id, version] : batch.flows) {
    const Flow& flow = flows_[id];
    if (flow.version != version) continue;
    Channel& first = channels_[flow.channels[0]];
    if (first.visit == done) continue;
    first.visit = done;
    double rate = 0;
    for (int k = 0; k < flow.route_size; ++k) {
      const Channel& channel = channels_[flow.channels[k]];
      const double share = std::max(0.0, channel.capacity_per_s) / channel.weight;
      if (k == 0 || share < rate) rate = share;
    }
    for (int f : first.flows) {
      flows_[f].rate = rate;
      ScheduleFinish(f);
    }
  }
  return true;
}

bool FlowNetwork::ActivateOneAlone(int id, uint64_t version) {
  Flow& flow = flows_[id];
  if (flow.version != version || flow.route_size == 0 || flow.remaining <= 0) return false;
  // Its rate as ActivateAlone finds it: an idle channel's weight is 0, so after the join it is
  // the flow's weight there (the same int, the same division).
  double rate = 0;
  for (int k = 0; k < flow.route_size; ++k) {
    const Channel& channel = channels_[flow.channels[k]];
    if (!channel.flows.empty()) return false;
    const double share = std::max(0.0, channel.capacity_per_s) / flow.weights[k];
    if (k == 0 || share < rate) rate = share;
  }
  if (!reserved_ || engine_.Passed(reserved_time_ns_, reserved_seq_)) engine_.Reserve();
  reserved_ = false;
  ClearDirty();
  JoinRoute(id, engine_.Now());
  flow.rate = rate;
  ScheduleFinish(id);
  return true;
}

void FlowNetwork::JoinRoute(int id, TimeNs now) {
  Flow& flow = flows_[id];
  flow.last_update_ns = now;
  flow.moving = true;
  for (int k = 0; k < flow.route_size; ++k) {
    Channel& channel = channels_[flow.channels[k]];
    channel.busy_since_ns = now;
    channel.flows.push_back(id);
    channel.weight += flow.weights[k];
  }
}

void FlowNetwork::ClearDirty() {
  for (int c : dirty_channels_) channels_[c].dirty = false;
  dirty_channels_.clear();
}

void FlowNetwork::DropPassedDirty() {
  if (!reallocate_pending_ && !dirty_channels_.empty() &&
      (!reserved_ || engine_.Passed(reserved_time_ns_, reserved_seq_))) {
    ClearDirty();
  }
}

bool FlowNetwork::AnyDirtyFlows() const {
  for (int c : dirty_channels_) {
    if (!channels_[c].flows.empty()) return true;
  }
  return false;
}

void FlowNetwork::Activate(int id) {
  Flow& flow = flows_[id];
  flow.last_update_ns = engine_.Now();
  if (flow.route_size == 0 || flow.remaining <= 0) {
    ScheduleFinish(id);  // nothing to move: done now
    return;
  }
  DropPassedDirty();
  flow.moving = true;
  // MarkDirty per channel; the recomputation it schedules once, after the loop (the loop
  // schedules nothing else, so it keeps its place).
  const int* const route = flow.channels;
  const int* const weights = flow.weights;
  const int size = flow.route_size;
  const TimeNs now = engine_.Now();
  for (int k = 0; k < size; ++k) {
    const int c = route[k];
    Channel& channel = channels_[c];
    if (channel.flows.empty()) channel.busy_since_ns = now;
    channel.flows.push_back(id);
    channel.weight += weights[k];
    if (!channel.dirty) {
      channel.dirty = true;
      dirty_channels_.push_back(c);
    }
  }
  if (!reallocate_pending_) ScheduleReallocate();
}

void FlowNetwork::Finish(int id) {
  Flow& flow = flows_[id];
  if (flow.moving) {
    DropPassedDirty();
    const TimeNs now = engine_.Now();
    const int* const route = flow.channels;
    const int* const weights = flow.weights;
    const int size = flow.route_size;
    // Without a sampler, MarkDirty of a channel left with flows and KeepReallocatePlace of one
    // left empty both keep the recomputation's place (nothing in the loop takes a seq): that
    // is done once, after the loop, and the solve deferred if a channel was left with flows.
    bool left_with_flows = false;
    for (int k = 0; k < size; ++k) {
      const int c = route[k];
      Channel& channel = channels_[c];
      std::vector<int>& on = channel.flows;
      // The others keep their order (the order progressive filling fixes them in).
      RemoveKeepingOrder(on, id);
      channel.weight -= weights[k];
      if (!on.empty()) {
        if (sampler_) {
          MarkDirty(c);
        } else if (!channel.dirty) {
          channel.dirty = true;
          dirty_channels_.push_back(c);
        }
        left_with_flows = true;
        continue;
      }
      channel.busy_ns += now - channel.busy_since_ns;
      if (sampler_) MarkDirty(c);  // its total rate drops to 0 at the recomputation
    }
    if (!sampler_ && size > 0 && !reallocate_pending_) {
      KeepReallocatePlace();  // nothing to solve on the channels left empty
      if (left_with_flows) solve_deferred_ = true;
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

void FlowNetwork::ScheduleReallocate() {
  reallocate_pending_ = true;
  if (reserved_ && !engine_.Passed(reserved_time_ns_, reserved_seq_)) {
    engine_.ScheduleReserved(reserved_time_ns_, reserved_seq_, handler_id_, kReallocate);
  } else {
    engine_.Schedule(engine_.Now(), handler_id_, kReallocate);
  }
  reserved_ = false;
}

void FlowNetwork::KeepReallocatePlace() {
  if (reallocate_pending_ || (reserved_ && !engine_.Passed(reserved_time_ns_, reserved_seq_))) {
    return;  // a recomputation is due (or its place kept) later at this instant
  }
  reserved_ = true;
  reserved_time_ns_ = engine_.Now();
  reserved_seq_ = engine_.Reserve();
}

void FlowNetwork::ScheduleFinish(int id) {
  Flow& flow = flows_[id];
  ++flow.version;
  TimeNs duration_ns = 0;
  if (flow.moving && flow.remaining > 0) {
    // A tolerance well below one ns keeps exact quotients from rounding up a whole ns.
    const double ns = flow.remaining / flow.rate * 1e9;
    duration_ns = CeilToNs(ns - 1e-6);
  }
  Enqueue(kFinish, engine_.Now() + duration_ns, id);
}

void FlowNetwork::Reallocate() {
  const TimeNs now = engine_.Now();
  // The connected components of flows and channels reachable from the changed channels: the
  // only flows whose max-min rates can change. Each component is solved on its own: progressive
  // filling over several components picks, within each, the bottlenecks it would pick alone.
  // Each channel and flow is listed at most once, so the lists fit arrays sized once.
  ++visit_stamp_;
  if (component_flows_.size() < flows_.size()) component_flows_.resize(flows_.size());
  int* const channel_list = component_channels_.data();
  int* const flow_list = component_flows_.data();
  int* const stack = stack_.data();
  int num_channels = 0;
  int num_flows = 0;
  components_.clear();
  for (int c : dirty_channels_) {
    Channel& dirty = channels_[c];
    dirty.dirty = false;
    if (dirty.visit == visit_stamp_) continue;
    dirty.visit = visit_stamp_;
    if (dirty.flows.empty()) {
      // A component of its own that carries nothing (a finished flow's channel): no solve.
      if (!sampler_) continue;
      dirty.rate_sum = 0;
      channel_list[num_channels++] = c;
      continue;
    }
    Component component{num_channels, 0, num_flows, 0};
    int depth = 0;
    stack[depth++] = c;
    while (depth > 0) {
      const int ch = stack[--depth];
      channel_list[num_channels++] = ch;
      for (int f : channels_[ch].flows) {
        Flow& flow = flows_[f];
        if (flow.visit == visit_stamp_) continue;
        flow.visit = visit_stamp_;
        flow_list[num_flows++] = f;
        for (int k = 0; k < flow.route_size; ++k) {
          const int next = flow.channels[k];
          Channel& channel = channels_[next];
          if (channel.visit == visit_stamp_) continue;
          channel.visit = visit_stamp_;
          // A channel of this flow alone leads nowhere new: listed without a visit (the flows
          // are found in the same order; the channels' order does not matter to a solve).
          if (channel.flows.size() == 1) {
            channel_list[num_channels++] = next;
          } else {
            stack[depth++] = next;
          }
        }
      }
    }
    component.channel_end = num_channels;
    component.flow_end = num_flows;
    components_.push_back(component);
  }
  dirty_channels_.clear();
  for (const Component& component : components_) {
    SolveComponent(component.channel_begin, component.channel_end, component.flow_begin,
                   component.flow_end);
  }
  if (!sampler_) return;
  std::sort(channel_list, channel_list + num_channels);
  for (int k = 0; k < num_channels; ++k) {
    const int c = channel_list[k];
    Channel& channel = channels_[c];
    if (channel.total_rate != channel.rate_sum) sampler_(now, c, channel.rate_sum);
    channel.total_rate = channel.rate_sum;
  }
}

void FlowNetwork::SolveComponent(int channel_begin, int channel_end, int flow_begin, int flow_end) {
  const TimeNs now = engine_.Now();
  const int* const channels = component_channels_.data() + channel_begin;
  const int num_channels = channel_end - channel_begin;
  const int* const flows = component_flows_.data() + flow_begin;
  const int num_flows = flow_end - flow_begin;
  for (int k = 0; k < num_flows; ++k) {
    Flow& flow = flows_[flows[k]];
    flow.remaining = std::max(0.0, flow.remaining - flow.rate * 1e-9 * (now - flow.last_update_ns));
    flow.last_update_ns = now;
  }
  if (num_channels == 1) {
    // One channel (a GPU's compute, a lone link): one round, every flow at capacity / crossings.
    const Channel& channel = channels_[channels[0]];
    const double share = std::max(0.0, channel.capacity_per_s) / channel.weight;
    for (int k = 0; k < num_flows; ++k) flows_[flows[k]].new_rate = share;
  } else {
    // Progressive filling's first bottleneck: the smallest fair share capacity / crossings
    // (every flow unfixed, so a channel's crossings are its weight), ties to the lowest channel
    // id. When it carries every flow of the component (one flow, flows of one route, or flows
    // of several routes meeting at one narrow link), that round fixes them all at its share and
    // the filling ends there: the same rates, bit for bit, without the rounds' bookkeeping.
    int best = -1;
    double best_share = 0;
    for (int k = 0; k < num_channels; ++k) {
      const int c = channels[k];
      const Channel& channel = channels_[c];
      const double share = std::max(0.0, channel.capacity_per_s) / channel.weight;
      if (best < 0 || share < best_share || (share == best_share && c < best)) {
        best = c;
        best_share = share;
      }
    }
    if (static_cast<int>(channels_[best].flows.size()) == num_flows) {
      for (int k = 0; k < num_flows; ++k) flows_[flows[k]].new_rate = best_share;
    } else {
      FillProgressively(channels, num_channels, flows, num_flows);
    }
  }
  if (sampler_) {
    for (int k = 0; k < num_channels; ++k) channels_[channels[k]].rate_sum = 0;
    for (int k = 0; k < num_flows; ++k) {
      const Flow& flow = flows_[flows[k]];
      // Added once per crossing (k for weight k), as k flows' rates would be.
      for (int j = 0; j < flow.route_size; ++j) {
        for (int w = 0; w < flow.weights[j]; ++w)
          channels_[flow.channels[j]].rate_sum += flow.new_rate;
      }
    }
  }
  for (int k = 0; k < num_flows; ++k) {
    const int id = flows[k];
    Flow& flow = flows_[id];
    if (flow.new_rate != flow.rate) {
      flow.rate = flow.new_rate;
      ScheduleFinish(id);
    }
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

void FlowNetwork::FillProgressively(const int* channels, int num_channels, const int* flows,
                                    int num_flows) {
  // Progressive filling exactly as MaxMinFairRates does it: repeatedly the channel with the
  // smallest fair share (remaining capacity / unfixed crossings; ties: the lowest channel id)
  // saturates and fixes its unfixed flows at that share. The smallest share comes from a heap
  // holding one current entry per channel (older entries are skipped by version), so a solve
  // costs O(crossings x log channels) instead of a scan of every channel per bottleneck, and
  // the arithmetic (each subtraction, each division) is the same as the reference's.
  const uint64_t stamp = ++solve_stamp_;
  for (int k = 0; k < num_channels; ++k) {
    Channel& channel = channels_[channels[k]];
    channel.left_per_s = channel.capacity_per_s;
    channel.unfixed = 0;
  }
  for (int j = 0; j < num_flows; ++j) {
    const Flow& flow = flows_[flows[j]];
    for (int k = 0; k < flow.route_size; ++k)
      channels_[flow.channels[k]].unfixed += flow.weights[k];
  }
  active_.clear();
  for (int k = 0; k < num_channels; ++k) {
    if (channels_[channels[k]].unfixed > 0) active_.push_back(channels[k]);
  }
  if (active_.size() * static_cast<size_t>(num_flows) <= kScanWork) {
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
        for (int k = 0; k < flow.route_size; ++k) {
          Channel& channel = channels_[flow.channels[k]];
          // One subtraction per crossing: the arithmetic of k flows of weight 1.
          for (int w = 0; w < flow.weights[k]; ++w) channel.left_per_s -= best_share;
          channel.unfixed -= flow.weights[k];
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
      for (int k = 0; k < flow.route_size; ++k) {
        const int c = flow.channels[k];
        Channel& channel = channels_[c];
        for (int w = 0; w < flow.weights[k]; ++w) channel.left_per_s -= top.share;
        channel.unfixed -= flow.weights[k];
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

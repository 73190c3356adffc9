// FlowNetwork: flows of work over shared channels, on the event engine.
//
// A flow carries `amount` units over a route of channels. It first waits its latency (nothing
// moves), then joins its channels, where the active flows share every channel max-min fairly
// (MaxMinFairRates; a channel listed k times in a route is a crossing of weight k, kept once
// with its weight). Rates are recomputed, once per instant and only for the flows connected to
// a change through shared channels, whenever a flow joins or leaves. When a flow has moved its
// whole amount the listener hears OnFlowDone(tag).
//
// Cost: a recomputation solves each connected component touched by the instant's changes on
// its own (flows elsewhere keep their rates untouched): in closed form when it has one channel
// (capacity / crossings) or when the channel of the smallest capacity / crossings (ties: lowest
// id) carries every flow of the component (one route's flows; pipeline transfers meeting at one
// inter-node link): each flow gets that share, as progressive filling's first round would give
// it; else by progressive filling with a scan or a heap of channel shares; no flows left on it:
// nothing to solve. Routes are interned (each distinct list of channels deduplicated once; flows
// point at it). Arrays are kept between calls (no allocation once warm); the rates are those of
// MaxMinFairRates bit for bit. Activations and finishes due at the same time and
// scheduled back to back (a ring step's flows) share one engine event, dispatched in the order
// separate events would have been.
//
// Two recomputation events are skipped, with every other event at the same (time, seq) place
// (no rate sampler set; a sampler turns both off):
// - An activation batch whose flows all join idle channels, flows of different routes sharing
//   none, while no other event is due at this instant. The recomputation it would schedule is
//   then the next event dispatched (the batch schedules nothing else), and it would do exactly
//   this: each route's flows form a component of their own, solved in closed form (the
//   narrowest channel's capacity / crossings), components in the order of their first flow and
//   each one's flows in batch order, their finishes scheduled back to back. The batch takes the
//   recomputation's seq (Engine::Reserve, or the place kept for it) and schedules the same
//   finishes in the same order with the same seqs; the queue then holds the same events at the
//   same places, less the recomputation. With any other event due now, that event could run
//   between and schedule one at a finish's time; such batches take the general path.
// - A finish batch whose finishes leave every channel they marked dirty empty: the
//   recomputation would solve nothing. The batch keeps its place instead (KeepReallocatePlace)
//   and schedules it after the batch only if a dirty channel still carries flows; work arriving
//   before the place passes fills it with the same dirty list.
//
// The replay uses one FlowNetwork for network links (units: bytes, capacity bytes/s); each GPU's
// compute is processor-shared outside it (sim/compute_sharing.h) unless
// ReplayOptions::compute_as_flows puts it here as channels of 1e9 ns of work per s. Not
// thread-safe; the listener and the engine are borrowed and must outlive the network.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "models/units.h"
#include "sim/engine.h"

namespace terasim {

// max(0, ceil(x)) in whole ns, as static_cast<TimeNs>(std::max(0.0, std::ceil(x))) gives it:
// the finish times of the flow network and of ComputeSharing. Inline, with a truncation where
// x is in range (the library's ceil costs several times more per finish).
inline TimeNs CeilToNs(double x) {
  if (x > 0 && x < 9e18) {
    // Truncation is floor for x > 0; an x at or above 2^53 is whole (t == x, no step up).
    const auto t = static_cast<TimeNs>(x);
    return static_cast<double>(t) < x ? t + 1 : t;
  }
  return static_cast<TimeNs>(std::max(0.0, std::ceil(x)));  // x <= 0, huge or NaN
}

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
  // (ids of finished flows are reused). A channel listed k times is a crossing of weight k (a
  // folded flow standing for k identical flows there, sim/symmetry_fold.h): the flow counts k
  // times in the channel's fair share and uses k x its rate of the channel's capacity, exactly
  // as k flows with its route would; its rate and finish are those of one of them.
  int StartFlow(const std::vector<int>& route, double amount, TimeNs latency_ns, int64_t tag) {
    return StartFlowOn(InternRoute(route), amount, latency_ns, tag);
  }
  // The id of `route` (as StartFlow takes it), for StartFlowOn: equal lists get one id, and a
  // caller that starts many flows on one route may keep it and skip the look-up. Throws
  // InternalError on an unknown channel.
  int InternRoute(const std::vector<int>& route);
  // StartFlow on the route with id `route` (from InternRoute).
  int StartFlowOn(int route, double amount, TimeNs latency_ns, int64_t tag);

  int NumChannels() const { return static_cast<int>(channels_.size()); }
  // Time during which channel c carried at least one flow, up to the last change.
  TimeNs BusyNs(int channel) const { return channels_[channel].busy_ns; }
  // Flows currently moving or waiting out their latency.
  int ActiveFlows() const { return active_flows_; }
  // Flows started since construction (for benchmarks).
  int64_t FlowsStarted() const { return flows_started_; }

  // Optional: called at each rate recomputation for every channel whose total rate changed,
  // with the time, the channel and its new total rate (units/s). For utilization counters. Set
  // it before the first flow starts: without one, channels' total rates are not kept.
  void SetRateSampler(std::function<void(TimeNs, int, double)> sampler) {
    sampler_ = std::move(sampler);
  }

  void Handle(const Event& event) override;

 private:
  enum EventKind { kActivate = 0, kReallocate = 1, kFinish = 2 };

  // The fields every event touches first (one cache line), then the solver's and the rest.
  struct Channel {
    std::vector<int> flows;  // active (moving) flows crossing it, each once
    double capacity_per_s = 0;
    uint64_t visit = 0;  // traversal stamp
    TimeNs busy_since_ns = 0;
    TimeNs busy_ns = 0;
    int weight = 0;  // their crossings' weights summed
    bool dirty = false;
    double total_rate = 0;     // sum of their rates at the last recomputation
    uint64_t route_stamp = 0;  // == route_stamp_ while StartFlow lists a route crossing it
    int route_pos = 0;         // then: its index in that flow's route
    // Solver scratch, valid while this channel is in the component being solved.
    double left_per_s = 0;             // capacity not yet given to fixed flows
    double rate_sum = 0;               // sum of the new rates of its flows
    int unfixed = 0;                   // crossings by flows not fixed yet
    uint32_t heap_version = 0;         // bumped whenever its fair share changes
    const int* batch_route = nullptr;  // ActivateAlone's scratch: the route crossing it
  };
  // An interned route: its channels as listed, and each distinct channel once with its count.
  struct Route {
    std::vector<int> listed;
    std::vector<int> channels;  // distinct channels, in the order first listed
    std::vector<int> weights;   // per channel of `channels`: how many times it was listed
  };
  struct Flow {
    // Its route's distinct channels and their weights (an interned Route's arrays, which never
    // change once interned), route_size of each.
    const int* channels = nullptr;
    const int* weights = nullptr;
    int route_size = 0;
    double remaining = 0;  // units still to move at last_update_ns
    double rate = 0;       // units/s
    double new_rate = 0;   // solver scratch
    TimeNs last_update_ns = 0;
    uint64_t version = 0;  // bumped on every (re)scheduling; stale events are ignored
    uint64_t visit = 0;
    uint64_t fixed = 0;  // == solve_stamp_ once its rate is fixed
    int64_t tag = 0;
    bool moving = false;
    bool in_use = false;
  };
  // Flows (with their version when added) whose activation or finish is due at one time. Flows
  // scheduled for the same time with nothing else scheduled in between share one engine event:
  // the engine would have dispatched their events back to back anyway, in the same order.
  struct Batch {
    std::vector<std::pair<int, uint64_t>> flows;
  };
  struct OpenBatch {
    int batch = -1;  // -1: none may be extended
    TimeNs time_ns = 0;
    uint64_t seq = 0;
  };
  // A channel's fair share when it was pushed; stale once the channel's version moved on.
  struct ShareEntry {
    double share;
    int channel;
    uint32_t version;
  };

  void Activate(int flow);
  void Finish(int flow);
  // Lists channel (whose flows changed) for the recomputation due at this instant.
  void MarkDirty(int channel) {
    Channel& ch = channels_[channel];
    if (!ch.dirty) {
      ch.dirty = true;
      dirty_channels_.push_back(channel);
    }
    if (reallocate_pending_) return;
    if (finishing_ && !sampler_) {
      // The batch's later finishes may leave the channel empty: decided after the batch.
      KeepReallocatePlace();
      solve_deferred_ = true;
    } else {
      ScheduleReallocate();
    }
  }
  // Schedules the recomputation (at the place KeepReallocatePlace kept, if not passed yet).
  void ScheduleReallocate();
  // A channel's last flow left (and no sampler watches totals): nothing to solve, but the
  // recomputation such a change scheduled would have taken a place in the event order. Keeps
  // that place (Engine::Reserve) instead; MarkDirty fills it if work arrives before it passes.
  void KeepReallocatePlace();
  void Reallocate();
  // An activation batch whose flows all join idle channels, none shared, with nothing else due
  // at this instant: activates them and schedules their finishes as the recomputation would,
  // without it (see the header comment). False, with nothing changed, for any other batch.
  bool ActivateAlone(const Batch& batch);
  // ActivateAlone's case of one flow (flow `id` added at `version`), its checks and its
  // rate in one pass over the route.
  bool ActivateOneAlone(int id, uint64_t version);
  // Flow `id` starts moving at `now` on every channel of its route (its weight joins theirs).
  void JoinRoute(int id, TimeNs now);
  void ClearDirty();
  // Channels listed dirty for a kept place that passed with no recomputation there (a finish
  // batch that left them empty): dropped, as that recomputation would have cleared them.
  void DropPassedDirty();
  // Whether a dirty channel carries flows (the recomputation has something to solve).
  bool AnyDirtyFlows() const;
  // One connected component with flows, component_channels_[channel_begin, channel_end) and
  // component_flows_[flow_begin, flow_end): brings its flows' remaining amounts to now, gives
  // them their max-min fair rates (those of MaxMinFairRates, bit for bit; closed forms for one
  // channel or one bottleneck crossed by every flow), sums them into Channel::rate_sum and
  // reschedules the flows whose rate changed, in component order.
  void SolveComponent(int channel_begin, int channel_end, int flow_begin, int flow_end);
  // Progressive filling over a component of several channels and flows, into Flow::new_rate.
  void FillProgressively(const int* channels, int num_channels, const int* flows, int num_flows);
  void PushShare(int channel);
  // Heap order (a function object, so that the heap operations inline it).
  struct LaterShare {
    bool operator()(const ShareEntry& x, const ShareEntry& y) const;
  };
  void ScheduleFinish(int flow);
  // Schedules flow's activation (kActivate) or finish (kFinish) at `time_ns`.
  void Enqueue(EventKind kind, TimeNs time_ns, int flow);

  Engine& engine_;
  FlowListener& listener_;
  int handler_id_;
  std::vector<Channel> channels_;
  std::vector<Flow> flows_;
  std::vector<int> free_flows_;
  std::deque<Route> routes_;
  // Per route id: its distinct channels, their weights and their number (views of routes_'
  // arrays, which never move), so that starting a flow reads one dense entry.
  struct RouteView {
    const int* channels;
    const int* weights;
    int size;
  };
  std::vector<RouteView> route_views_;
  // Open addressing over routes_ by a hash of the listed channels: (hash, route id), id -1 empty.
  std::vector<std::pair<uint64_t, int>> route_index_;
  std::vector<int> dirty_channels_;
  // Scratch of Reallocate, kept between calls so that a solve allocates nothing.
  std::vector<int> component_channels_;
  std::vector<int> component_flows_;
  // Each component with flows: its ranges of component_channels_ and component_flows_. Dirty
  // channels without flows (nothing to solve) are listed in component_channels_ between them.
  struct Component {
    int channel_begin;
    int channel_end;
    int flow_begin;
    int flow_end;
  };
  std::vector<Component> components_;
  std::vector<int> stack_;
  std::vector<int> touched_;
  std::vector<ShareEntry> heap_;
  std::vector<int> active_;  // channels with unfixed flows, in component order
  // Up to this many (channels with flows) x (flows), a solve scans the channels each round
  // instead of keeping a heap.
  static constexpr size_t kScanWork = 160;
  std::vector<Batch> batches_;
  std::vector<int> free_batches_;
  OpenBatch open_activate_, open_finish_;
  bool reallocate_pending_ = false;  // a kReallocate event is queued
  bool finishing_ = false;           // a finish batch is being handled
  bool solve_deferred_ = false;      // it marked channels dirty and kept the place for it
  bool reserved_ = false;            // a place for one is kept at (reserved_time_ns_, _seq_)
  TimeNs reserved_time_ns_ = 0;
  uint64_t reserved_seq_ = 0;
  uint64_t visit_stamp_ = 0;
  uint64_t route_stamp_ = 0;  // per route interned
  uint64_t solve_stamp_ = 0;  // Flow::fixed of the progressive filling under way
  int active_flows_ = 0;
  int64_t flows_started_ = 0;
  std::function<void(TimeNs, int, double)> sampler_;
};

}  // namespace terasim

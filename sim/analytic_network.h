// The analytic network (`--network analytic`): alpha-beta communication times with the sharing
// the analytic mode can see, and the closed forms the flow network is checked against.
//
// A transfer costs its route's latency plus bytes over the route's narrowest share. A
// collective plan (sim/collective_plan.h) costs, phase after phase, the slowest of its runs:
// steps x (alpha + bytes_per_flow / B), where alpha is the largest route latency of the run's
// hops and B its narrowest link bandwidth divided by how many of the phase's own transfers
// cross that link in one step (the contention a collective causes itself, e.g. the 8 GPUs of a
// node sharing one NIC in a hierarchical all-reduce). For a flat ring this is the textbook
// 2(p-1) alpha + 2(p-1)/p n/B.
//
// AnalyticNetwork adds the sharing between transfers: it keeps, per link (NIC, NVLink, PCIe,
// host staging), the transfers and collectives in flight and when each ends. Whatever starts
// at one instant is costed together once that instant's events are done, as processor sharing
// has it from the newcomer's side: each link's bandwidth is divided by its own crossings plus
// those of the others holding it, each other h weighted min(1, the work h has left / the
// newcomer's work), from when the newcomer's latency is over. An item's work is the bandwidth
// part of its time alone (its bytes over its shares, without latencies); what starts with the
// newcomer has its whole work left, what is in flight counts its remaining time (an upper
// bound on its work left, which later newcomers would stretch in the flow network). So n equal
// transfers that start together through one NIC each take n times as long (as max-min sharing
// has it); a short one that starts with long ones delays them by its own bytes only (e.g. a
// pipeline send beside a node's 8 data-parallel all-reduces); and the last of a busy link's
// staggered arrivals ends when the link has moved everything. It keeps that time: it does not
// slow what is already in flight, nor speed up when others end; the newcomer instead waits out
// the capacity the others keep (work-conserving). Where transfers overlap staggered, the flow
// network's re-sharing of what is in flight is what the analytic mode cannot see
// (AnalyticNetwork::StaggeredBytes counts the bytes concerned).
//
// Folded (sim/symmetry_fold.h): a transfer or collective started stands for its images, which
// by symmetry start together and keep the same times. It holds each representative link with
// the crossings of all its images there (a transfer's link l counts LinkMultiplicity(l) on
// LinkRep(l); a collective's counts that divided by its group's stabilizer), so a link's load is
// the full replay's load of every link of its class. The others on a real link l of its route
// are then its representative's holders less the item's own crossings of l (its images count,
// as what starts with it): the sums of the full replay, added in another order.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "models/units.h"
#include "sim/collective_plan.h"
#include "sim/engine.h"
#include "sim/flow_network.h"
#include "sim/route_cache.h"
#include "sim/symmetry_fold.h"

namespace terasim {

// Time of one transfer of `bytes` from src_gpu to dst_gpu (0 when they are equal), alone.
TimeNs AnalyticTransferNs(int src_gpu, int dst_gpu, Bytes bytes, RouteCache& routes);

// Time of a whole collective plan, alone.
TimeNs AnalyticPlanNs(const CollectivePlan& plan, RouteCache& routes);

class AnalyticNetwork : public EventHandler {
 public:
  // Borrows the engine, links, listener and fold (they must outlive it; the fold may be set
  // until the first Start); the listener hears OnFlowDone(tag) when a transfer or collective
  // ends.
  AnalyticNetwork(Engine& engine, const std::vector<NetLink>& links, FlowListener& listener,
                  const SymmetryFold& fold);

  // A transfer of `bytes` over `route`, starting now.
  void StartTransfer(const RouteCache::Entry& route, Bytes bytes, int64_t tag);
  // Collective plan number `plan_id` (the same id for the same plan; copied the first time),
  // starting now. `stabilizer`: the fold's elements that map its group onto itself (one plan
  // id, one stabilizer; 1 without a fold).
  void StartPlan(int plan_id, const CollectivePlan& plan, int64_t tag, int stabilizer = 1);

  // Bytes of the transfers and collectives that shared a link with one started at another
  // instant (where the flow network would have re-shared the link when either began or ended).
  double StaggeredBytes() const { return staggered_bytes_; }
  double TotalBytes() const { return total_bytes_; }

  void Handle(const Event& event) override;

 private:
  enum EventKind { kSettle = 0, kDone = 1 };
  struct Item {
    std::vector<std::pair<int, int>> crossings;  // (representative link, crossings it holds)
    const RouteCache::Entry* route = nullptr;    // a transfer's route, or
    int plan = -1;                               // a collective's plan
    Bytes bytes = 0;
    double link_bytes = 0;  // bytes it moves over links, for StaggeredBytes
    TimeNs start_ns = 0;
    TimeNs end_ns = -1;     // -1 until costed
    TimeNs work_ns = 0;     // alone: the bandwidth part of its time (its bytes over its shares)
    TimeNs latency_ns = 0;  // alone: the rest (latencies)
    int64_t tag = 0;
  };
  struct Plan {
    CollectivePlan plan;
    std::vector<std::pair<int, int>> crossings;       // per link: the most crossings of one phase
    std::vector<std::pair<int, int>> held;            // the same with its images, folded
    std::vector<std::map<int, int>> phase_crossings;  // per phase: crossings per link
    double link_bytes = 0;
  };

  int NewItem();
  // The crossings of real link `link` by item `id` alone (not its images).
  int OwnCrossings(const Item& item, int link) const;
  void Hold(int item);
  void Settle();
  TimeNs DurationNs(int item);
  // The item's time when each other holder h of a link counts weight(h) crossings there
  // (with_latency false: the bandwidth part only).
  template <typename Weight>
  TimeNs SharedNs(int item, Weight weight, bool with_latency = true);
  // The link work (ns at its alone shares) that holder h has left at time `at` (>= now), as
  // DurationNs counts it.
  double RemainingWorkNs(const Item& h, TimeNs now, TimeNs at) const;

  Engine& engine_;
  const std::vector<NetLink>& links_;
  FlowListener& listener_;
  const SymmetryFold& fold_;
  int handler_id_;
  std::vector<int> load_;                                  // per link: crossings in flight
  std::vector<std::vector<std::pair<int, int>>> holders_;  // per link: (item, crossings)
  std::vector<TimeNs> last_start_ns_;                      // per link: when the last holder started
  std::vector<Item> items_;
  std::vector<int> free_items_;
  std::vector<int> pending_;  // started this instant, not costed yet
  std::vector<Plan> plans_;   // by plan id
  bool settle_pending_ = false;
  double staggered_bytes_ = 0;
  double total_bytes_ = 0;
};

}  // namespace terasim

#include "sim/analytic_network.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "models/errors.h"

namespace terasim {
namespace {

TimeNs CeilNs(double ns) { return static_cast<TimeNs>(std::max(0.0, std::ceil(ns - 1e-6))); }

// Per link: how many of the phase's runs' hops cross it.
void PhaseCrossings(const CollectivePhase& phase, std::map<int, int>& crossings) {
  crossings.clear();
  for (const RingRun& run : phase.runs) {
    for (int link : run.links) ++crossings[link];
  }
}

// The phase's time when link l carries, besides the phase's own crossings, others(l) more
// (with_latency false: its bandwidth part only, the steps' bytes without their latencies).
template <typename Others>
TimeNs PhaseNs(const CollectivePhase& phase, const std::map<int, int>& crossings,
               const std::vector<NetLink>& links, const Others& others, bool with_latency = true) {
  TimeNs phase_ns = 0;
  for (const RingRun& run : phase.runs) {
    double bw = 0;
    for (int link : run.links) {
      const double share = links[link].bw_bytes_per_s / (crossings.at(link) + others(link));
      if (bw == 0 || share < bw) bw = share;
    }
    const TimeNs step_ns =
        (with_latency ? run.alpha_ns : 0) + (bw > 0 ? CeilNs(run.bytes_per_flow / bw * 1e9) : 0);
    phase_ns = std::max(phase_ns, run.steps * step_ns + (with_latency ? run.latency_ns : 0));
  }
  return phase_ns;
}

}  // namespace

TimeNs AnalyticTransferNs(int src_gpu, int dst_gpu, Bytes bytes, RouteCache& routes) {
  const RouteCache::Entry& route = routes.Get(src_gpu, dst_gpu);
  if (route.links.empty()) return 0;
  return route.latency_ns + CeilNs(static_cast<double>(bytes) / route.bottleneck_bw * 1e9);
}

TimeNs AnalyticPlanNs(const CollectivePlan& plan, RouteCache& routes) {
  const std::vector<NetLink>& links = routes.Topology().Links();
  TimeNs total_ns = 0;
  std::map<int, int> crossings;
  for (const CollectivePhase& phase : plan.phases) {
    PhaseCrossings(phase, crossings);
    total_ns += PhaseNs(phase, crossings, links, [](int) { return 0; });
  }
  return total_ns;
}

AnalyticNetwork::AnalyticNetwork(Engine& engine, const std::vector<NetLink>& links,
                                 FlowListener& listener, const SymmetryFold& fold)
    : engine_(engine),
      links_(links),
      listener_(listener),
      fold_(fold),
      handler_id_(engine.AddHandler(this)),
      load_(links.size(), 0),
      holders_(links.size()),
      last_start_ns_(links.size(), -1) {}

int AnalyticNetwork::NewItem() {
  if (!free_items_.empty()) {
    const int id = free_items_.back();
    free_items_.pop_back();
    return id;
  }
  items_.emplace_back();
  return static_cast<int>(items_.size()) - 1;
}

void AnalyticNetwork::StartTransfer(const RouteCache::Entry& route, Bytes bytes, int64_t tag) {
  const int id = NewItem();
  Item& item = items_[id];
  item.crossings.clear();
  for (int link : route.links) {
    // Folded: the images of the transfer that cross the link's representative.
    const int rep = fold_.LinkRep(link);
    const int k = fold_.LinkMultiplicity(link);
    auto held = std::find_if(item.crossings.begin(), item.crossings.end(),
                             [rep](const std::pair<int, int>& c) { return c.first == rep; });
    if (held == item.crossings.end()) {
      item.crossings.emplace_back(rep, k);
    } else {
      held->second += k;
    }
  }
  item.route = &route;
  item.plan = -1;
  item.bytes = bytes;
  item.link_bytes = static_cast<double>(bytes) * static_cast<double>(route.links.size()) *
                    static_cast<double>(fold_.Order());
  item.tag = tag;
  Hold(id);
}

void AnalyticNetwork::StartPlan(int plan_id, const CollectivePlan& plan, int64_t tag,
                                int stabilizer) {
  TERASIM_CHECK(plan_id >= 0, "plan id {}", plan_id);
  if (plan_id >= static_cast<int>(plans_.size())) plans_.resize(plan_id + 1);
  Plan& cached = plans_[plan_id];
  if (cached.plan.phases.empty() && !plan.phases.empty()) {
    cached.plan = plan;
    std::map<int, int> most;
    for (const CollectivePhase& phase : plan.phases) {
      cached.phase_crossings.emplace_back();
      PhaseCrossings(phase, cached.phase_crossings.back());
      for (const auto& [link, k] : cached.phase_crossings.back())
        most[link] = std::max(most[link], k);
      for (const RingRun& run : phase.runs) {
        cached.link_bytes += run.steps * run.bytes_per_flow * static_cast<double>(run.links.size());
      }
    }
    cached.crossings.assign(most.begin(), most.end());
    // Folded: the group's images (|G| / stabilizer of them) load each link class evenly.
    std::map<int, int> held;
    for (const auto& [link, k] : cached.crossings) {
      held[fold_.LinkRep(link)] += k * fold_.LinkMultiplicity(link);
    }
    for (const auto& [rep, k] : held) {
      TERASIM_CHECK(k % stabilizer == 0,
                    "plan {}: {} crossings of link {} by a group with "
                    "stabilizer {}",
                    plan_id, k, rep, stabilizer);
      cached.held.emplace_back(rep, k / stabilizer);
    }
    cached.link_bytes *= static_cast<double>(fold_.Order()) / stabilizer;
  }
  const int id = NewItem();
  Item& item = items_[id];
  item.crossings = cached.held;
  item.route = nullptr;
  item.plan = plan_id;
  item.bytes = 0;
  item.link_bytes = cached.link_bytes;
  item.tag = tag;
  Hold(id);
}

void AnalyticNetwork::Hold(int id) {
  Item& item = items_[id];
  const TimeNs now = engine_.Now();
  item.start_ns = now;
  item.end_ns = -1;
  bool staggered = false;
  for (const auto& [link, k] : item.crossings) {
    staggered = staggered || (load_[link] > 0 && last_start_ns_[link] != now);
    load_[link] += k;
    holders_[link].emplace_back(id, k);
    last_start_ns_[link] = now;
  }
  total_bytes_ += item.link_bytes;
  if (staggered) staggered_bytes_ += item.link_bytes;
  pending_.push_back(id);
  if (!settle_pending_) {
    settle_pending_ = true;
    engine_.Schedule(now, handler_id_, kSettle);
  }
}

int AnalyticNetwork::OwnCrossings(const Item& item, int link) const {
  if (item.route != nullptr) {
    return static_cast<int>(std::count(item.route->links.begin(), item.route->links.end(), link));
  }
  const std::vector<std::pair<int, int>>& crossings = plans_[item.plan].crossings;
  auto it = std::lower_bound(crossings.begin(), crossings.end(), std::make_pair(link, 0));
  return it != crossings.end() && it->first == link ? it->second : 0;
}

template <typename Weight>
TimeNs AnalyticNetwork::SharedNs(int id, Weight weight, bool with_latency) {
  const Item& item = items_[id];
  // Per real link: the others' weighted crossings, read on its representative. Folded, the
  // item's images there count too (they start with it).
  const auto others = [&](int link) {
    const int rep = fold_.LinkRep(link);
    double sum = 0;
    int images = 0;
    for (const auto& [h, k] : holders_[rep]) {
      if (h != id) {
        sum += k * weight(items_[h]);
      } else {
        images = k - OwnCrossings(item, link);
      }
    }
    return images == 0 ? sum : sum + images * weight(item);
  };
  if (item.route != nullptr) {
    if (item.route->links.empty()) return 0;
    double bw = 0;
    for (int link : item.route->links) {
      const double share = links_[link].bw_bytes_per_s / (1 + others(link));
      if (bw == 0 || share < bw) bw = share;
    }
    return (with_latency ? item.route->latency_ns : 0) +
           CeilNs(static_cast<double>(item.bytes) / bw * 1e9);
  }
  // A collective: each phase as AnalyticPlanNs has it, with the others on each link.
  const Plan& plan = plans_[item.plan];
  TimeNs total_ns = 0;
  for (size_t ph = 0; ph < plan.plan.phases.size(); ++ph) {
    total_ns +=
        PhaseNs(plan.plan.phases[ph], plan.phase_crossings[ph], links_, others, with_latency);
  }
  return total_ns;
}

double AnalyticNetwork::RemainingWorkNs(const Item& h, TimeNs now, TimeNs at) const {
  // Started with the newcomer: its work alone, exactly.
  if (h.end_ns < 0 || h.start_ns == now) return static_cast<double>(h.work_ns);
  // In flight: its remaining time. It moves at most at its links' rates, so this bounds the
  // work it has left from above; in the flow network the newcomers after its start slow it,
  // so an even pace over its own span would undercount what it has left (and the last of a
  // busy link's arrivals would end before the link has moved everything).
  return static_cast<double>(std::max<TimeNs>(0, h.end_ns - at));
}

TimeNs AnalyticNetwork::DurationNs(int id) {
  const TimeNs now = engine_.Now();
  // Processor sharing from the newcomer's side: each other holder h of a link delays it by the
  // link work h has left, up to the newcomer's own: it counts min(1, RemainingWorkNs(h) / the
  // newcomer's work) crossings (work: the bandwidth part of a time alone), from when the
  // newcomer's own latency is over (the flow network moves a flow's bytes after its latency).
  // It does not slow what is in flight; it waits out what those keep.
  const Item& item = items_[id];
  if (item.work_ns <= 0) return item.work_ns + item.latency_ns;
  const double work_ns = static_cast<double>(item.work_ns);
  const TimeNs joins_ns = now + item.latency_ns;
  return SharedNs(id, [&](const Item& h) {
    return std::min(1.0, RemainingWorkNs(h, now, joins_ns) / work_ns);
  });
}

void AnalyticNetwork::Settle() {
  settle_pending_ = false;
  const TimeNs now = engine_.Now();
  // Each newcomer's work and latency alone first: those that start together count one another
  // by them, in any order.
  const auto none = [](const Item&) { return 0.0; };
  for (int id : pending_) {
    Item& item = items_[id];
    item.work_ns = SharedNs(id, none, /*with_latency=*/false);
    item.latency_ns = SharedNs(id, none) - item.work_ns;
  }
  for (int id : pending_) {
    items_[id].end_ns = now + DurationNs(id);
    engine_.Schedule(items_[id].end_ns, handler_id_, kDone, id);
  }
  pending_.clear();
}

void AnalyticNetwork::Handle(const Event& event) {
  if (event.kind == kSettle) {
    Settle();
    return;
  }
  TERASIM_CHECK(event.kind == kDone, "unknown analytic network event kind {}", event.kind);
  const int id = static_cast<int>(event.a);
  Item& item = items_[id];
  for (const auto& [link, k] : item.crossings) {
    load_[link] -= k;
    std::vector<std::pair<int, int>>& holders = holders_[link];
    holders.erase(std::find(holders.begin(), holders.end(), std::make_pair(id, k)));
  }
  const int64_t tag = item.tag;
  free_items_.push_back(id);
  listener_.OnFlowDone(tag);
}

}  // namespace terasim

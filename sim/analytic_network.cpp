#include "sim/analytic_network.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace terasim {
namespace {

TimeNs CeilNs(double ns) { return static_cast<TimeNs>(std::max(0.0, std::ceil(ns - 1e-6))); }

}  // namespace

TimeNs AnalyticTransferNs(int src_gpu, int dst_gpu, Bytes bytes, RouteCache& routes) {
  const RouteCache::Entry& route = routes.Get(src_gpu, dst_gpu);
  if (route.links.empty()) return 0;
  return route.latency_ns + CeilNs(static_cast<double>(bytes) / route.bottleneck_bw * 1e9);
}

TimeNs AnalyticPlanNs(const CollectivePlan& plan, RouteCache& routes) {
  const std::vector<NetLink>& links = routes.Topology().Links();
  TimeNs total_ns = 0;
  for (const CollectivePhase& phase : plan.phases) {
    // How many of this phase's transfers cross each link when every hop is busy.
    std::map<int, int> crossings;
    for (const RingRun& run : phase.runs) {
      const int p = static_cast<int>(run.gpus.size());
      for (int i = 0; i + (run.closed ? 0 : 1) < p; ++i) {
        for (int link : routes.Get(run.gpus[i], run.gpus[(i + 1) % p]).links) ++crossings[link];
      }
    }
    TimeNs phase_ns = 0;
    for (const RingRun& run : phase.runs) {
      const int p = static_cast<int>(run.gpus.size());
      TimeNs alpha_ns = 0;
      double bw = 0;
      for (int i = 0; i + (run.closed ? 0 : 1) < p; ++i) {
        const RouteCache::Entry& hop = routes.Get(run.gpus[i], run.gpus[(i + 1) % p]);
        alpha_ns = std::max(alpha_ns, hop.latency_ns);
        for (int link : hop.links) {
          const double share = links[link].bw_bytes_per_s / crossings[link];
          if (bw == 0 || share < bw) bw = share;
        }
      }
      const TimeNs step_ns = alpha_ns + (bw > 0 ? CeilNs(run.bytes_per_flow / bw * 1e9) : 0);
      phase_ns = std::max(phase_ns, run.steps * step_ns);
    }
    total_ns += phase_ns;
  }
  return total_ns;
}

}  // namespace terasim

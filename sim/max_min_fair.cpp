#include "sim/max_min_fair.h"

#include <cmath>
#include <limits>

#include "models/errors.h"

namespace terasim {

std::vector<double> MaxMinFairRates(const std::vector<double>& capacity_per_s,
                                    const std::vector<std::vector<int>>& routes) {
  const int num_channels = static_cast<int>(capacity_per_s.size());
  const int num_flows = static_cast<int>(routes.size());
  std::vector<double> rate(num_flows, 0.0);
  std::vector<bool> fixed(num_flows, false);
  std::vector<double> remaining = capacity_per_s;
  std::vector<int> unfixed_count(num_channels, 0);
  std::vector<std::vector<int>> flows_on(num_channels);
  for (int f = 0; f < num_flows; ++f) {
    if (routes[f].empty()) {
      rate[f] = std::numeric_limits<double>::infinity();
      fixed[f] = true;
      continue;
    }
    for (int c : routes[f]) {
      TERASIM_CHECK(c >= 0 && c < num_channels, "flow {} crosses unknown channel {}", f, c);
      ++unfixed_count[c];
      flows_on[c].push_back(f);
    }
  }
  while (true) {
    // The channel whose fair share is smallest saturates first.
    int bottleneck = -1;
    double best_share = 0;
    for (int c = 0; c < num_channels; ++c) {
      if (unfixed_count[c] == 0) continue;
      const double share = std::max(0.0, remaining[c]) / unfixed_count[c];
      if (bottleneck < 0 || share < best_share) {
        bottleneck = c;
        best_share = share;
      }
    }
    if (bottleneck < 0) break;
    for (int f : flows_on[bottleneck]) {
      if (fixed[f]) continue;
      fixed[f] = true;
      rate[f] = best_share;
      for (int c : routes[f]) {
        remaining[c] -= best_share;
        --unfixed_count[c];
      }
    }
  }
  return rate;
}

}  // namespace terasim

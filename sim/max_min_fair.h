// MaxMinFairRates: the max-min fair allocation of shared channels to flows, by progressive
// filling. Every unfixed flow's rate rises together; when a channel runs out of capacity, the
// flows crossing it are fixed at their current rate; repeat until every flow is fixed. The
// result: no flow can get more without taking from a flow that has no more than it.
//
// Channels are anything with a capacity in units per second: network links (bytes/s) or a
// GPU's compute (ns of work per second, which makes processor sharing a special case; the
// replay shares compute in sim/compute_sharing.h, which gives the same finishes).
#pragma once

#include <vector>

namespace terasim {

// Rates (units/s) for each flow, given each channel's capacity (units/s, > 0) and each flow's
// route (channel ids). A channel listed k times in a route is a crossing of weight k: weighted
// max-min, where the flow takes k shares of the channel (its fair share is the capacity left
// over the unfixed crossings) and uses k x its rate there. Its rate is that of each of k
// identical flows it stands for (a folded flow, sim/symmetry_fold.h), which weight-1 flows with
// its route would get: a weight-3 and a weight-1 flow alone on a channel of capacity C both get
// C / 4, the weight-3 flow using 3C / 4. A flow with an empty route is unconstrained and gets
// +infinity. Throws InternalError on a channel id out of range.
std::vector<double> MaxMinFairRates(const std::vector<double>& capacity_per_s,
                                    const std::vector<std::vector<int>>& routes);

}  // namespace terasim

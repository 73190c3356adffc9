// Link classes of a fold (sim/symmetry_fold.h): under a group G of GPU maps, the links that
// the same position of a transfer's route and of its images' routes join, and the evenness a
// fold needs: every image of a transfer that crosses a class n times must cross each of its
// links n x |G| / |class| times, so that every link of a class carries the same flows at any
// time and a flow's crossing of one link counts |G| / |class| on the class's representative.
//
// GPU maps are vectors m with m[g] the image of GPU g. A pure function but for the routes it
// adds to `routes`; where the topology declares its nodes node 0 shifted
// (NetworkTopology::LinksPerNode), an image's route on nodes m.. is read as the route m nodes
// down with its links shifted, and not added.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/network_topology.h"
#include "sim/route_cache.h"

namespace terasim {

// The link classes of `transfers` (GPU pairs, sorted and unique) under `gpus` (the GPU maps of
// a group G, the identity included): per link of `topology`, the lowest link of its class
// (*link_rep) and |G| / |class| (*link_mult). Returns "" or why not: an image's route differs
// in length or crosses a link of another bandwidth or latency at some position, a class's size
// does not divide |G|, or a transfer's images load a class unevenly. The outputs are complete
// only on "".
std::string FoldLinkClasses(const NetworkTopology& topology, RouteCache& routes,
                            const std::vector<std::pair<int, int>>& transfers,
                            const std::vector<const std::vector<int>*>& gpus,
                            std::vector<int>* link_rep_out, std::vector<int>* link_mult_out);

}  // namespace terasim

// FoldLinkClasses (sim/link_classes.h) on a cluster that declares its nodes node 0 shifted
// (NetworkTopology::LinksPerNode: the images' routes are read as node 0's shifted) against the
// same cluster undeclared (every route computed): the same classes, multiplicities and
// refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "sim/cluster_topology.h"
#include "sim/link_classes.h"
#include "sim/route_cache.h"
#include "tests/sim/fold_cases.h"
#include "topologies/cluster.h"

namespace terasim {
namespace {

using testing::SlowLink;

struct Classes {
  std::string why;
  std::vector<int> rep, mult;
  int routes = 0;  // routes computed
};

Classes Run(const NetworkTopology& topology, const std::vector<std::pair<int, int>>& transfers,
            const std::vector<std::vector<int>>& maps) {
  RouteCache routes(topology);
  std::vector<const std::vector<int>*> gpus;
  for (const std::vector<int>& map : maps) gpus.push_back(&map);
  Classes out;
  out.why = FoldLinkClasses(topology, routes, transfers, gpus, &out.rep, &out.mult);
  out.routes = routes.Size();
  return out;
}

TEST_CASE("link classes read from node 0's shifted routes are those of every route computed") {
  const Cluster cluster = BuildCluster("p4d.24xlarge:4");
  const ClusterTopology p4d(cluster);
  const int per_node = 8, nodes = 4, gpus = per_node * nodes;
  // Each node's ring (local r -> r + 1) and each GPU to its rank on the next node.
  std::vector<std::pair<int, int>> transfers;
  for (int g = 0; g < gpus; ++g) {
    transfers.emplace_back(g, g - g % per_node + (g % per_node + 1) % per_node);
    transfers.emplace_back(g, (g + per_node) % gpus);
  }
  std::sort(transfers.begin(), transfers.end());
  // The groups of the node shift by one (order 4) and of the rotation of every node's GPUs by
  // 2 (order 4: p4d's NIC pairs map onto NIC pairs).
  const auto power = [&](auto step, int k) {
    std::vector<int> map(gpus);
    for (int g = 0; g < gpus; ++g) {
      int image = g;
      for (int i = 0; i < k; ++i) image = step(image);
      map[g] = image;
    }
    return map;
  };
  const auto node_shift = [&](int g) { return (g + per_node) % gpus; };
  const auto rotation = [&](int g) { return g - g % per_node + (g % per_node + 2) % per_node; };
  std::vector<std::vector<int>> shifts, rotations;
  for (int k = 0; k < 4; ++k) {
    shifts.push_back(power(node_shift, k));
    rotations.push_back(power(rotation, k));
  }
  for (const auto* maps : {&shifts, &rotations}) {
    const SlowLink declared(p4d, -1, true), undeclared(p4d, -1, false);
    REQUIRE(declared.LinksPerNode() > 0);
    const Classes shifted = Run(declared, transfers, *maps);
    const Classes computed = Run(undeclared, transfers, *maps);
    CHECK(shifted.why == "");
    CHECK(shifted.why == computed.why);
    CHECK(shifted.rep == computed.rep);
    CHECK(shifted.mult == computed.mult);
    // Fewer routes computed: the images' routes on nodes 1-3 are read from those down on
    // node 0 (and nodes 0 -> 1).
    CHECK(shifted.routes < computed.routes);
  }
  // Under the node shift every in-node link's class holds its 4 copies: multiplicity
  // |G| / |class| = 1, represented by node 0's link.
  const Classes shifted = Run(SlowLink(p4d, -1, true), transfers, shifts);
  const int link = p4d.Route(3 * per_node, 3 * per_node + 1).front();
  CHECK(shifted.rep[link] == p4d.Route(0, 1).front());
  CHECK(shifted.mult[link] == 1);
  // A slower link on node 2 refuses both, naming it.
  const int slow = p4d.Route(2 * per_node, 2 * per_node + 1).front();
  const Classes slow_shifted = Run(SlowLink(p4d, slow, true), transfers, shifts);
  const Classes slow_computed = Run(SlowLink(p4d, slow, false), transfers, shifts);
  CHECK_THAT(slow_shifted.why, Catch::Contains(p4d.Links()[slow].name));
  CHECK(slow_shifted.why == slow_computed.why);
}

}  // namespace
}  // namespace terasim

// Graph searches over a cluster's Boost.Graph, used to build its route tables and to pick each
// GPU's host CPU and NIC. Internal to topologies/ (callers use Cluster::Route).
//
// Searches never pass THROUGH a GPU or a NIC (neither forwards traffic): such vertices are only
// reached as endpoints, except the search's own source.
#pragma once

#include <functional>
#include <vector>

#include "topologies/cluster_graph.h"
#include "topologies/link.h"

namespace terasim {

struct BfsTree {
  int source = 0;
  std::vector<int> hops;       // per vertex; -1 when unreached
  std::vector<int> pred_link;  // per vertex: the link that reached it; -1 for source / unreached
};

// Which links a search may cross.
using LinkFilter = std::function<bool(const Link&)>;

// Breadth-first search (boost::breadth_first_search on a filtered view) from `source` over the
// links `allow` accepts. Ties between equally short paths go to the lower link id.
BfsTree BfsOverLinks(const ClusterGraph& graph, const std::vector<Vertex>& vertices,
                     const std::vector<Link>& links, int source, const LinkFilter& allow);

// The link ids from tree.source to `target`, in order. Throws InternalError if unreached.
std::vector<int> PathTo(const BfsTree& tree, const std::vector<Link>& links, int target);

// The reached vertex of `kind` with the fewest hops (excluding the source); among ties the
// `tie_break % ties`-th by vertex id. Returns -1 when none is reached.
int Nearest(const BfsTree& tree, const std::vector<Vertex>& vertices, VertexKind kind,
            int tie_break = 0);

}  // namespace terasim

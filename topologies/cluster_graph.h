// ClusterGraph: the Boost.Graph view of a Cluster. Vertex i is Cluster::Vertices()[i]; each
// directed edge carries the id of its Link (Cluster::Links()[id]). Out-edges are stored in link
// id order (vecS), so graph searches over it are deterministic.
#pragma once

#include <boost/graph/adjacency_list.hpp>

namespace terasim {

struct ClusterGraphEdge {
  int link = 0;  // index into Cluster::Links()
};

using ClusterGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                           boost::no_property, ClusterGraphEdge>;

}  // namespace terasim

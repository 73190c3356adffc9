#include "topologies/routing.h"

#include <algorithm>

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>

#include "models/errors.h"

namespace terasim {
namespace {

using Edge = boost::graph_traits<ClusterGraph>::edge_descriptor;

// Edge predicate of the filtered view; must be default-constructible and cheap to copy.
struct EdgeFilter {
  const ClusterGraph* graph = nullptr;
  const std::vector<Vertex>* vertices = nullptr;
  const std::vector<Link>* links = nullptr;
  const LinkFilter* allow = nullptr;
  int source = 0;

  bool operator()(const Edge& e) const {
    const Link& link = (*links)[(*graph)[e].link];
    const VertexKind from = (*vertices)[link.src].kind;
    if (link.src != source && (from == VertexKind::kGpu || from == VertexKind::kNic)) return false;
    return (*allow)(link);
  }
};

struct TreeRecorder : boost::default_bfs_visitor {
  BfsTree* tree = nullptr;
  template <typename G>
  void tree_edge(const Edge& e, const G& g) const {
    const int link = g[e].link;
    const int target = static_cast<int>(boost::target(e, g));
    const int from = static_cast<int>(boost::source(e, g));
    tree->pred_link[target] = link;
    tree->hops[target] = tree->hops[from] + 1;
  }
};

}  // namespace

BfsTree BfsOverLinks(const ClusterGraph& graph, const std::vector<Vertex>& vertices,
                     const std::vector<Link>& links, int source, const LinkFilter& allow) {
  BfsTree tree;
  tree.source = source;
  tree.hops.assign(vertices.size(), -1);
  tree.pred_link.assign(vertices.size(), -1);
  tree.hops[source] = 0;
  EdgeFilter filter{&graph, &vertices, &links, &allow, source};
  boost::filtered_graph<ClusterGraph, EdgeFilter> view(graph, filter);
  TreeRecorder recorder;
  recorder.tree = &tree;
  boost::breadth_first_search(view, boost::vertex(source, graph), boost::visitor(recorder));
  return tree;
}

std::vector<int> PathTo(const BfsTree& tree, const std::vector<Link>& links, int target) {
  TERASIM_CHECK(tree.hops[target] >= 0, "vertex {} unreachable from {}", target, tree.source);
  std::vector<int> path;
  for (int v = target; v != tree.source; v = links[tree.pred_link[v]].src) {
    path.push_back(tree.pred_link[v]);
  }
  std::reverse(path.begin(), path.end());
  return path;
}

int Nearest(const BfsTree& tree, const std::vector<Vertex>& vertices, VertexKind kind,
            int tie_break) {
  int best_hops = -1;
  std::vector<int> ties;
  for (size_t v = 0; v < vertices.size(); ++v) {
    if (static_cast<int>(v) == tree.source || vertices[v].kind != kind || tree.hops[v] < 0) {
      continue;
    }
    if (best_hops < 0 || tree.hops[v] < best_hops) {
      best_hops = tree.hops[v];
      ties.clear();
    }
    if (tree.hops[v] == best_hops) ties.push_back(static_cast<int>(v));
  }
  if (ties.empty()) return -1;
  return ties[static_cast<size_t>(tie_break) % ties.size()];
}

}  // namespace terasim

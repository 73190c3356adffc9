// Cluster::BisectionBytesPerS: the maximum flow across the cluster's middle, computed with
// Boost.Graph's push-relabel on a copy of the link graph with integer capacities (bytes/s).
#include <cmath>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>

#include "topologies/cluster.h"

namespace terasim {
namespace {

using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<
        boost::edge_capacity_t, int64_t,
        boost::property<boost::edge_residual_capacity_t, int64_t,
                        boost::property<boost::edge_reverse_t, FlowTraits::edge_descriptor>>>>;

void AddArc(FlowGraph& g, int from, int to, int64_t capacity) {
  auto capacity_map = boost::get(boost::edge_capacity, g);
  auto reverse_map = boost::get(boost::edge_reverse, g);
  auto forward = boost::add_edge(from, to, g).first;
  auto backward = boost::add_edge(to, from, g).first;
  capacity_map[forward] = capacity;
  capacity_map[backward] = 0;
  reverse_map[forward] = backward;
  reverse_map[backward] = forward;
}

}  // namespace

double Cluster::BisectionBytesPerS(bool raw) const {
  if (NumGpus() < 2) return 0;
  const int num_vertices = static_cast<int>(vertices_.size());
  const int source = num_vertices;
  const int sink = num_vertices + 1;
  FlowGraph g(num_vertices + 2);
  int64_t total = 0;
  for (const Link& link : links_) {
    const int64_t capacity = std::llround(raw ? link.raw_bw_bytes_per_s : link.bw_bytes_per_s);
    total += capacity;
    AddArc(g, link.src, link.dst, capacity);
  }
  // Every GPU of the first half feeds the source side; every GPU of the second half drains.
  const int half = NumGpus() / 2;
  for (int gpu = 0; gpu < NumGpus(); ++gpu) {
    if (gpu < half) {
      AddArc(g, source, gpu, total);
    } else {
      AddArc(g, gpu, sink, total);
    }
  }
  const int64_t flow = boost::push_relabel_max_flow(g, source, sink);
  return static_cast<double>(flow);
}

}  // namespace terasim

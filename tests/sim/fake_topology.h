// FakeTopology: a small hand-wired NetworkTopology for the simulator's tests.
//
// `nodes` nodes of `gpus_per_node` GPUs. In a node, a directed link joins each pair given to
// AddPair (bandwidth, latency); pairs without one share the node's "host" link. Across nodes a
// transfer crosses the source node's NIC-out link and the destination's NIC-in link.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/network_topology.h"

namespace terasim::testing {

class FakeTopology : public NetworkTopology {
 public:
  FakeTopology(int nodes, int gpus_per_node, double host_bw, TimeNs host_latency_ns, double nic_bw,
               TimeNs nic_latency_ns)
      : nodes_(nodes), gpus_per_node_(gpus_per_node) {
    for (int n = 0; n < nodes; ++n) {
      host_.push_back(Add(host_bw, host_latency_ns, "host" + std::to_string(n)));
      nic_out_.push_back(Add(nic_bw, nic_latency_ns, "nic_out" + std::to_string(n)));
      nic_in_.push_back(Add(nic_bw, 0, "nic_in" + std::to_string(n)));
    }
    rings_.resize(nodes);
  }

  // Both directions between local GPUs a and b of every node.
  void AddPair(int a, int b, double bw, TimeNs latency_ns) {
    for (int n = 0; n < nodes_; ++n) {
      const int ga = n * gpus_per_node_ + a, gb = n * gpus_per_node_ + b;
      direct_[{ga, gb}] = Add(bw, latency_ns, std::to_string(ga) + "->" + std::to_string(gb));
      direct_[{gb, ga}] = Add(bw, latency_ns, std::to_string(gb) + "->" + std::to_string(ga));
    }
  }
  // A ring of local GPU indices, repeated in every node.
  void AddRing(const std::vector<int>& local) {
    for (int n = 0; n < nodes_; ++n) {
      std::vector<int> ring;
      for (int l : local) ring.push_back(n * gpus_per_node_ + l);
      rings_[n].push_back(ring);
    }
  }

  int NumGpus() const override { return nodes_ * gpus_per_node_; }
  int NumNodes() const override { return nodes_; }
  int NodeOf(int gpu) const override { return gpu / gpus_per_node_; }
  const std::vector<NetLink>& Links() const override { return links_; }
  std::vector<int> Route(int src, int dst) const override {
    if (src == dst) return {};
    if (NodeOf(src) != NodeOf(dst)) return {nic_out_[NodeOf(src)], nic_in_[NodeOf(dst)]};
    auto it = direct_.find({src, dst});
    if (it != direct_.end()) return {it->second};
    return {host_[NodeOf(src)]};
  }
  std::vector<std::vector<int>> NodeRings(int node) const override { return rings_[node]; }

 private:
  int Add(double bw, TimeNs latency_ns, std::string name) {
    links_.push_back(NetLink{bw, latency_ns, std::move(name)});
    return static_cast<int>(links_.size()) - 1;
  }

  int nodes_;
  int gpus_per_node_;
  std::vector<NetLink> links_;
  std::vector<int> host_, nic_out_, nic_in_;
  std::map<std::pair<int, int>, int> direct_;
  std::vector<std::vector<std::vector<int>>> rings_;
};

// Communication that costs nothing: every route is one link of practically infinite bandwidth.
inline FakeTopology FreeTopology(int gpus) { return FakeTopology(1, gpus, 1e30, 0, 1e30, 0); }

// The p3.16xlarge NVLink hybrid cube-mesh (FACTS.md), NV2 pairs at 2 x link_bw, NV1 at link_bw,
// with its two edge-disjoint rings.
inline FakeTopology CubeMesh(int nodes, double link_bw, TimeNs alpha_ns, double nic_bw,
                             TimeNs nic_latency_ns) {
  FakeTopology topology(nodes, 8, 10e9, 1000, nic_bw, nic_latency_ns);
  for (auto [a, b] : std::vector<std::pair<int, int>>{
           {0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {4, 7}, {5, 6}, {6, 7}}) {
    topology.AddPair(a, b, 2 * link_bw, alpha_ns);
  }
  for (auto [a, b] : std::vector<std::pair<int, int>>{
           {0, 1}, {0, 2}, {1, 3}, {2, 6}, {3, 7}, {4, 5}, {4, 6}, {5, 7}}) {
    topology.AddPair(a, b, link_bw, alpha_ns);
  }
  topology.AddRing({0, 3, 2, 1, 5, 6, 7, 4});
  topology.AddRing({0, 1, 3, 7, 5, 4, 6, 2});
  return topology;
}

}  // namespace terasim::testing

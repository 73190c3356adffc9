// ClusterTopology: the simulator's NetworkTopology view of a topologies::Cluster: its directed
// links (achievable bandwidth, latency), its routes (host staging on p3 included, as the
// cluster's routes cross the PCIe, CPU and NIC links) and its in-node NVLink rings.
//
// Borrows the cluster, which must outlive it. Immutable; thread-safe like the Cluster.
#pragma once

#include <vector>

#include "sim/network_topology.h"
#include "topologies/topology.h"

namespace terasim {

class ClusterTopology : public NetworkTopology {
 public:
  explicit ClusterTopology(const Cluster& cluster);

  int NumGpus() const override { return cluster_.NumGpus(); }
  int NumNodes() const override { return cluster_.NumNodes(); }
  int NodeOf(int gpu) const override { return cluster_.NodeOf(gpu); }
  const std::vector<NetLink>& Links() const override { return links_; }
  std::vector<int> Route(int src_gpu, int dst_gpu) const override {
    return cluster_.Route(src_gpu, dst_gpu);
  }
  std::vector<std::vector<int>> NodeRings(int node) const override {
    return cluster_.NodeRings(node);
  }
  const InstanceSpec* Instance() const override { return &cluster_.Instance(); }
  // Every node is node 0 shifted (topologies/cluster.h: the layout).
  int LinksPerNode() const override { return cluster_.LinksPerNode(); }
  // One switch (the default fabric, or a fat tree of one leaf): each node's NIC up and down
  // links, in node order; a fat tree's leaves are not shifted by a node.
  int NetworkLinksPerNode() const override;

 private:
  const Cluster& cluster_;
  std::vector<NetLink> links_;
};

}  // namespace terasim

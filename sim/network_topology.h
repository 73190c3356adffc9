// NetworkTopology: the view of a cluster that the simulator needs, and nothing more: directed
// links with bandwidth and latency, the route a transfer between two GPUs takes, which node a
// GPU sits in, and each node's NVLink rings. ClusterTopology (sim/cluster_topology.h) adapts
// the real topologies::Cluster; tests use small fakes. Implementations are immutable after
// construction; Route may be called often, so they should answer from a table or a cache.
#pragma once

#include <string>
#include <vector>

#include "models/units.h"

namespace terasim {

struct InstanceSpec;  // topologies/instance_spec.h

// One directed link (or any shared resource a transfer crosses: a PCIe switch, host memory
// staging, a NIC direction).
struct NetLink {
  double bw_bytes_per_s = 0;  // > 0
  TimeNs latency_ns = 0;      // paid once by each transfer that crosses it
  std::string name;           // for reports, e.g. "n0.gpu0->n0.gpu3 nvlink"
};

class NetworkTopology {
 public:
  virtual ~NetworkTopology() = default;
  virtual int NumGpus() const = 0;
  virtual int NumNodes() const = 0;
  // The node (instance) that `gpu` belongs to; 0 <= gpu < NumGpus().
  virtual int NodeOf(int gpu) const = 0;
  // Every link; a link's id is its index.
  virtual const std::vector<NetLink>& Links() const = 0;
  // The link ids a transfer from src_gpu to dst_gpu crosses, in order; empty when equal.
  virtual std::vector<int> Route(int src_gpu, int dst_gpu) const = 0;
  // The node's rings (global GPU ids in ring order) that a collective over the whole node
  // uses, e.g. the two edge-disjoint NVLink rings of a p3.16xlarge. May be empty.
  virtual std::vector<std::vector<int>> NodeRings(int node) const = 0;
  // The instance type every node is, where the topology is a real cluster (NCCL's choice of
  // algorithm and protocol depends on it: sim/collective_plan.h); nullptr otherwise.
  virtual const InstanceSpec* Instance() const { return nullptr; }
  // L where every node is node 0 shifted (a cluster of one instance type, ClusterTopology):
  // node n's GPUs are n x G + [0, G) (G = NumGpus() / NumNodes()), its in-node links
  // n x L + [0, L) with node 0's bandwidths and latencies, its rings node 0's with every GPU
  // + n x G, and the route between two of its GPUs node 0's route between their images with
  // every link + n x L. 0 (the default) where the topology declares no such symmetry. A plan
  // of a group inside node n is then node 0's shifted (PlanCache).
  virtual int LinksPerNode() const { return 0; }
  // K where, besides, the links after the in-node ones (ids >= NumNodes() x L) are K per node
  // with node 0's bandwidths and latencies, and a shift of two GPUs on different nodes by k
  // nodes (within the cluster) shifts their route's in-node links by k x L and the others by
  // k x K (one switch joining every NIC: node n's NIC links are node 0's + n x K). 0 (the
  // default) where routes across nodes are not declared shifted.
  virtual int NetworkLinksPerNode() const { return 0; }
};

}  // namespace terasim

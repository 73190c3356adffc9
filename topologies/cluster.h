// Cluster: N instances of one type joined by a fabric, as a directed graph of vertices (GPUs,
// NVSwitches, PCIe switches, CPUs, NICs, network switches) and links with bandwidth and latency.
// Immutable once built; all queries are const and thread-safe.
//
// Layout (fixed, so that callers may rely on it):
// * vertex g is global GPU g for g < NumGpus(); GPU g lives on node g / GpusPerNode() with
//   local index g % GpusPerNode();
// * every node's in-node links come in the same order: node n's links are ids
//   [n * LinksPerNode(), (n + 1) * LinksPerNode()); network and fabric links follow.
//
// Routing (Route): a flow between two GPUs crosses, in order,
// * the direct NVLink of the pair when there is one (an NV2 pair is one Link with lanes = 2);
// * else, on NVSwitch instances, GPU -> NVSwitch -> GPU;
// * else PCIe through the host: GPU -> PCIe switch -> CPU [-> other CPU] -> PCIe switch -> GPU
//   (or GPU -> PCIe switch -> GPU for a PCIe peer pair without NVLink);
// * across nodes: GPU -> its NIC -> fabric -> the other GPU's NIC -> GPU. Without GPUDirect
//   (p3) the path to and from the NIC passes through host memory: GPU -> PCIe switch -> CPU
//   [-> CPU] -> NIC; with GPUDirect (p4d, p5): GPU -> PCIe switch -> NIC.
// In-node routes are shortest paths (Boost.Graph BFS) restricted to the allowed link kinds and
// computed once per instance type; fabric hops follow the switch tree.
#pragma once

#include <string>
#include <vector>

#include "topologies/cluster_graph.h"
#include "topologies/cluster_options.h"
#include "topologies/instance_spec.h"
#include "topologies/link.h"

namespace terasim {

// How two GPUs are connected, as `nvidia-smi topo -m` names it.
enum class GpuConnection {
  kSelf,     // X
  kNvLink,   // NV# (# = lanes of the direct link, or of the GPU's NVSwitch link)
  kPix,      // same PCIe switch
  kPhb,      // same CPU socket (through the host bridge)
  kSys,      // across CPU sockets
  kNetwork,  // different nodes
};

class Cluster {
 public:
  Cluster() = default;  // empty (no GPUs); use BuildCluster

  int NumGpus() const { return num_nodes_ * gpus_per_node_; }
  int NumNodes() const { return num_nodes_; }
  int GpusPerNode() const { return gpus_per_node_; }
  // The node of a global GPU index. Precondition: 0 <= gpu < NumGpus().
  int NodeOf(int gpu) const { return gpu / gpus_per_node_; }
  int LocalIndex(int gpu) const { return gpu % gpus_per_node_; }
  int GpuAt(int node, int local) const { return node * gpus_per_node_ + local; }

  const InstanceSpec& Instance() const { return instance_; }
  const ClusterOptions& Options() const { return options_; }
  // "p3.16xlarge:48" (the canonical spec).
  std::string Spec() const;

  const std::vector<Vertex>& Vertices() const { return vertices_; }
  const std::vector<Link>& Links() const { return links_; }
  int LinksPerNode() const { return links_per_node_; }
  // Link ids leaving a vertex, in a fixed order.
  const std::vector<int>& OutLinks(int vertex) const { return out_links_[vertex]; }
  // The id of the link src -> dst (vertices), or -1 when they are not adjacent.
  int FindLink(int src_vertex, int dst_vertex) const;
  // The Boost.Graph view (edge property = link id).
  const ClusterGraph& Graph() const { return graph_; }

  // Directed link ids a flow from src_gpu to dst_gpu crosses, in order (see the header comment).
  // Empty when src_gpu == dst_gpu. Throws InternalError for GPU indices out of range.
  std::vector<int> Route(int src_gpu, int dst_gpu) const;
  // The vertices a route visits, src first, dst last.
  std::vector<int> RouteVertices(int src_gpu, int dst_gpu) const;
  // Sum of the route's link latencies, and its narrowest link's bw_bytes_per_s (0 for src == dst:
  // infinite bandwidth is reported as 0 to keep JSON finite).
  TimeNs RouteLatencyNs(int src_gpu, int dst_gpu) const;
  double RouteBottleneckBytesPerS(int src_gpu, int dst_gpu) const;

  // The NIC (vertex id) that carries a GPU's off-node traffic: the nearest NIC over PCIe (ties
  // spread by local GPU index).
  int NicOf(int gpu) const;
  // The CPU socket (vertex id) a GPU's PCIe tree hangs off, and its index among the node's CPUs
  // (the NUMA node nvidia-smi reports).
  int HostCpuOf(int gpu) const;
  int SocketOf(int gpu) const;

  // In-node NVLink rings of `node` as global GPU lists (from the instance file; the two
  // edge-disjoint rings of the p3 cube-mesh; one ring 0..7 on NVSwitch instances). Each ring can
  // also run backwards over the opposite directed links. Precondition: 0 <= node < NumNodes().
  std::vector<std::vector<int>> NodeRings(int node) const;
  // Rings over all GPUs: for each in-node ring pattern, the nodes' rings concatenated in node
  // order (what NCCL builds across nodes for a whole-cluster collective).
  std::vector<std::vector<int>> ClusterRings() const;
  // Rings for a collective over `gpus` (any distinct GPUs): for each in-node ring pattern, the
  // group ordered by node, then by position in the pattern. A group inside one node keeps the
  // in-node ring order. Throws InputError for a repeated or out-of-range GPU.
  std::vector<std::vector<int>> GroupRings(const std::vector<int>& gpus) const;

  // How two GPUs are connected and with how many NVLink lanes (0 unless kNvLink).
  GpuConnection Connection(int gpu_a, int gpu_b, int* nvlink_lanes = nullptr) const;
  // The `nvidia-smi topo -m` cell: "X", "NV2", "NV12", "PIX", "PHB", "SYS", or "NET".
  std::string ConnectionLabel(int gpu_a, int gpu_b) const;
  // NVLink lanes at a GPU (p3: 6; NVSwitch systems: the links into the switch).
  int NvLinkLanes(int gpu) const;

  // Bisection bandwidth in bytes/s, one direction: the maximum flow (Boost.Graph push-relabel)
  // from the first half of the GPUs to the second half. `raw`: over line rates (p3.16xlarge:48:
  // 24 nodes x 3.125 GB/s); otherwise over achievable bandwidths (bw_bytes_per_s).
  double BisectionBytesPerS(bool raw = true) const;

 private:
  friend class ClusterBuilder;  // cluster.cpp
  void AppendShifted(const std::vector<int>& node0_links, int node, std::vector<int>* route) const;
  // Vertex id of a node's component; node-0 vertex -> the same component on `node`.
  int ComponentVertex(int node, int component) const;
  int ShiftVertex(int node0_vertex, int node) const;

  InstanceSpec instance_;
  ClusterOptions options_;
  int num_nodes_ = 0;
  int gpus_per_node_ = 0;
  int links_per_node_ = 0;
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<std::vector<int>> out_links_;
  ClusterGraph graph_;
  // Per-node tables, computed on node 0 as link ids of node 0; node n adds n * LinksPerNode().
  std::vector<std::vector<std::vector<int>>> local_routes_;  // [src local][dst local]
  std::vector<std::vector<int>> to_nic_;                     // [local gpu]: GPU -> its NIC
  std::vector<std::vector<int>> from_nic_;                   // [local gpu]: its NIC -> GPU
  std::vector<int> nic_of_local_;                            // [local gpu]: NIC vertex on node 0
  std::vector<int> cpu_of_local_;                            // [local gpu]: CPU vertex on node 0
  std::vector<std::vector<GpuConnection>> connection_;       // [local a][local b]
  std::vector<std::vector<int>> connection_lanes_;           // [local a][local b]
  // Fabric, indexed by vertex id (-1 where it does not apply).
  std::vector<int> nic_up_;     // NIC -> its switch
  std::vector<int> nic_down_;   // switch -> NIC
  std::vector<int> switch_of_;  // NIC -> its switch (leaf)
  std::vector<int> leaf_up_;    // leaf -> spine
  std::vector<int> leaf_down_;  // spine -> leaf
};

// Builds the cluster for a spec "INSTANCE[:COUNT]". Throws InputError "--cluster: ..." for a
// malformed spec or unknown instance, the instance file's own errors, or "--FLAG: ..." for bad
// options.
Cluster BuildCluster(const std::string& spec, const ClusterOptions& options = {});
// Builds `nodes` instances of an already loaded instance. Throws InputError as above.
Cluster BuildCluster(const InstanceSpec& instance, int nodes, const ClusterOptions& options = {});

}  // namespace terasim

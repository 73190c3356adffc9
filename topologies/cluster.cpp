#include "topologies/cluster.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "models/errors.h"
#include "topologies/routing.h"

namespace terasim {

// Builds a Cluster in steps: vertices, links, the Boost graph, then the per-node tables.
class ClusterBuilder {
 public:
  ClusterBuilder(const InstanceSpec& instance, int nodes, const ClusterOptions& options) {
    c_.instance_ = instance;
    c_.options_ = options;
    c_.num_nodes_ = nodes;
    c_.gpus_per_node_ = instance.gpus;
  }

  Cluster Build() {
    AddVertices();
    AddNodeLinks();
    AddNetwork();
    c_.out_links_.assign(c_.vertices_.size(), {});
    c_.graph_ = ClusterGraph(c_.vertices_.size());
    for (const Link& link : c_.links_) {
      c_.out_links_[link.src].push_back(link.id);
      boost::add_edge(link.src, link.dst, ClusterGraphEdge{link.id}, c_.graph_);
    }
    BuildNodeTables();
    return std::move(c_);
  }

 private:
  void AddVertex(VertexKind kind, int node, int local, std::string name) {
    int id = static_cast<int>(c_.vertices_.size());
    c_.vertices_.push_back({id, kind, node, local, std::move(name)});
  }

  void AddVertices() {
    const InstanceSpec& inst = c_.instance_;
    for (int n = 0; n < c_.num_nodes_; ++n) {
      for (int g = 0; g < inst.gpus; ++g) {
        AddVertex(VertexKind::kGpu, n, g, fmt::format("n{}.gpu{}", n, g));
      }
    }
    for (int n = 0; n < c_.num_nodes_; ++n) {
      for (size_t k = inst.gpus; k < inst.components.size(); ++k) {
        AddVertex(inst.components[k].kind, n, static_cast<int>(k),
                  fmt::format("n{}.{}", n, inst.components[k].name));
      }
    }
  }

  int AddLink(int src, int dst, LinkKind kind, double raw_bw, double efficiency, TimeNs latency,
              int lanes) {
    Link link;
    link.id = static_cast<int>(c_.links_.size());
    link.src = src;
    link.dst = dst;
    link.raw_bw_bytes_per_s = raw_bw;
    link.bw_bytes_per_s = raw_bw * efficiency;
    link.latency_ns = latency;
    link.kind = kind;
    link.lanes = lanes;
    link.name = c_.vertices_[src].name + "->" + c_.vertices_[dst].name;
    c_.links_.push_back(link);
    return link.id;
  }

  void AddNodeLinks() {
    const InstanceSpec& inst = c_.instance_;
    for (int n = 0; n < c_.num_nodes_; ++n) {
      for (const InstanceLink& l : inst.links) {
        const LinkType& t = inst.link_types[l.type];
        const int a = c_.ComponentVertex(n, l.a);
        const int b = c_.ComponentVertex(n, l.b);
        const double raw = t.raw_bw_bytes_per_s * l.lanes;
        AddLink(a, b, t.kind, raw, t.efficiency, t.latency_ns, l.lanes);
        AddLink(b, a, t.kind, raw, t.efficiency, t.latency_ns, l.lanes);
      }
    }
    c_.links_per_node_ = 2 * static_cast<int>(inst.links.size());
  }

  void AddNetwork() {
    const InstanceSpec& inst = c_.instance_;
    const ClusterOptions& o = c_.options_;
    const double nic_raw =
        o.nic_gbps > 0 ? o.nic_gbps * 1e9 / 8 : inst.network.nic_raw_bw_bytes_per_s;
    const double efficiency = o.nic_efficiency > 0 ? o.nic_efficiency : inst.network.efficiency;
    const TimeNs latency = o.nic_latency_us >= 0
                               ? static_cast<TimeNs>(std::llround(o.nic_latency_us * 1000))
                               : inst.network.latency_ns;
    // The one-way latency is split between the NIC's uplink and the far NIC's downlink, so a
    // route between two nodes pays it exactly once whatever the fabric.
    const TimeNs up_latency = latency / 2;
    const TimeNs down_latency = latency - up_latency;

    const int nodes = c_.num_nodes_;
    const bool tree = o.fabric == FabricKind::kFatTree;
    const int leaves = tree ? (nodes + o.nodes_per_leaf - 1) / o.nodes_per_leaf : 1;
    std::vector<int> leaf_vertex;
    for (int i = 0; i < leaves; ++i) {
      leaf_vertex.push_back(static_cast<int>(c_.vertices_.size()));
      AddVertex(VertexKind::kNetworkSwitch, -1, i,
                tree ? fmt::format("fabric.leaf{}", i) : std::string("fabric.switch"));
    }
    int spine = -1;
    if (leaves > 1) {
      spine = static_cast<int>(c_.vertices_.size());
      AddVertex(VertexKind::kNetworkSwitch, -1, leaves, "fabric.spine");
    }
    const size_t num_vertices = c_.vertices_.size();
    c_.nic_up_.assign(num_vertices, -1);
    c_.nic_down_.assign(num_vertices, -1);
    c_.switch_of_.assign(num_vertices, -1);
    c_.leaf_up_.assign(num_vertices, -1);
    c_.leaf_down_.assign(num_vertices, -1);
    for (int n = 0; n < nodes; ++n) {
      const int leaf = leaf_vertex[tree ? n / o.nodes_per_leaf : 0];
      for (size_t k = inst.gpus; k < inst.components.size(); ++k) {
        if (inst.components[k].kind != VertexKind::kNic) continue;
        const int nic = c_.ComponentVertex(n, static_cast<int>(k));
        c_.nic_up_[nic] =
            AddLink(nic, leaf, LinkKind::kNetwork, nic_raw, efficiency, up_latency, 1);
        c_.nic_down_[nic] =
            AddLink(leaf, nic, LinkKind::kNetwork, nic_raw, efficiency, down_latency, 1);
        c_.switch_of_[nic] = leaf;
      }
    }
    if (spine >= 0) {
      for (int i = 0; i < leaves; ++i) {
        const int nodes_on_leaf = std::min(o.nodes_per_leaf, nodes - i * o.nodes_per_leaf);
        const double up_raw = nodes_on_leaf * inst.NumNics() * nic_raw / o.oversubscription;
        c_.leaf_up_[leaf_vertex[i]] =
            AddLink(leaf_vertex[i], spine, LinkKind::kFabric, up_raw, efficiency, 0, 1);
        c_.leaf_down_[leaf_vertex[i]] =
            AddLink(spine, leaf_vertex[i], LinkKind::kFabric, up_raw, efficiency, 0, 1);
      }
    }
  }

  // Route tables, host CPUs, NICs and the nvidia-smi connection matrix, all on node 0.
  void BuildNodeTables() {
    const InstanceSpec& inst = c_.instance_;
    const int gpus = inst.gpus;
    auto in_node0 = [this](const Link& l) {
      return c_.vertices_[l.src].node == 0 && c_.vertices_[l.dst].node == 0;
    };
    LinkFilter nvlink = [&](const Link& l) { return l.kind == LinkKind::kNvLink && in_node0(l); };
    LinkFilter pcie = [&](const Link& l) { return l.kind == LinkKind::kPcie && in_node0(l); };
    LinkFilter host = [&](const Link& l) {
      return (l.kind == LinkKind::kPcie || l.kind == LinkKind::kSocket) && in_node0(l);
    };
    auto bfs = [this](int source, const LinkFilter& allow) {
      return BfsOverLinks(c_.graph_, c_.vertices_, c_.links_, source, allow);
    };
    const bool gpudirect = inst.network.gpudirect;

    std::vector<int> host_cpu(gpus);
    std::vector<std::set<int>> pcie_switches(gpus);
    c_.local_routes_.assign(gpus, std::vector<std::vector<int>>(gpus));
    c_.to_nic_.assign(gpus, {});
    c_.from_nic_.assign(gpus, {});
    c_.nic_of_local_.assign(gpus, -1);
    c_.cpu_of_local_.assign(gpus, -1);
    for (int s = 0; s < gpus; ++s) {
      BfsTree by_pcie = bfs(s, pcie);
      BfsTree by_host = bfs(s, host);
      host_cpu[s] = Nearest(by_pcie, c_.vertices_, VertexKind::kCpu);
      const int nic = Nearest(by_host, c_.vertices_, VertexKind::kNic, s);
      TERASIM_CHECK(host_cpu[s] >= 0 && nic >= 0, "gpu{}: no CPU or NIC (loader checks this)", s);
      c_.nic_of_local_[s] = nic;
      c_.cpu_of_local_[s] = host_cpu[s];
      for (int id : c_.out_links_[s]) {
        const Link& l = c_.links_[id];
        if (l.kind == LinkKind::kPcie && c_.vertices_[l.dst].kind == VertexKind::kPcieSwitch) {
          pcie_switches[s].insert(l.dst);
        }
      }
      // Off-node paths: direct to the NIC with GPUDirect, else staged through the host CPU.
      BfsTree from_nic = bfs(nic, host);
      if (gpudirect) {
        c_.to_nic_[s] = PathTo(by_host, c_.links_, nic);
        c_.from_nic_[s] = PathTo(from_nic, c_.links_, s);
      } else {
        const int cpu = host_cpu[s];
        c_.to_nic_[s] = PathTo(by_pcie, c_.links_, cpu);
        std::vector<int> cpu_to_nic = PathTo(bfs(cpu, host), c_.links_, nic);
        c_.to_nic_[s].insert(c_.to_nic_[s].end(), cpu_to_nic.begin(), cpu_to_nic.end());
        c_.from_nic_[s] = PathTo(from_nic, c_.links_, cpu);
        std::vector<int> cpu_to_gpu = PathTo(bfs(cpu, pcie), c_.links_, s);
        c_.from_nic_[s].insert(c_.from_nic_[s].end(), cpu_to_gpu.begin(), cpu_to_gpu.end());
      }
      // In-node paths: NVLink (direct or through an NVSwitch) when it reaches, else PCIe/host.
      BfsTree by_nvlink = bfs(s, nvlink);
      for (int d = 0; d < gpus; ++d) {
        if (d == s) continue;
        if (by_nvlink.hops[d] >= 0) {
          c_.local_routes_[s][d] = PathTo(by_nvlink, c_.links_, d);
        } else if (by_host.hops[d] >= 0) {
          c_.local_routes_[s][d] = PathTo(by_host, c_.links_, d);
        } else {
          ThrowInput("{}: gpu{} cannot reach gpu{} (no NVLink and no PCIe/host path)", inst.file, s,
                     d);
        }
      }
    }

    c_.connection_.assign(gpus, std::vector<GpuConnection>(gpus, GpuConnection::kSelf));
    c_.connection_lanes_.assign(gpus, std::vector<int>(gpus, 0));
    for (int a = 0; a < gpus; ++a) {
      for (int b = 0; b < gpus; ++b) {
        if (a == b) continue;
        const std::vector<int>& route = c_.local_routes_[a][b];
        GpuConnection& conn = c_.connection_[a][b];
        if (c_.links_[route.front()].kind == LinkKind::kNvLink) {
          conn = GpuConnection::kNvLink;
          // A direct link shows its own lanes; through an NVSwitch, the GPU's links into it.
          c_.connection_lanes_[a][b] =
              route.size() == 1 ? c_.links_[route.front()].lanes : c_.NvLinkLanes(a);
          continue;
        }
        bool shared_switch = false;
        for (int sw : pcie_switches[a]) shared_switch = shared_switch || pcie_switches[b].count(sw);
        if (shared_switch) {
          conn = GpuConnection::kPix;
        } else if (host_cpu[a] == host_cpu[b]) {
          conn = GpuConnection::kPhb;
        } else {
          conn = GpuConnection::kSys;
        }
      }
    }
  }

  Cluster c_;
};

int Cluster::ComponentVertex(int node, int component) const {
  if (component < gpus_per_node_) return node * gpus_per_node_ + component;
  const int extra = static_cast<int>(instance_.components.size()) - gpus_per_node_;
  return NumGpus() + node * extra + (component - gpus_per_node_);
}

int Cluster::ShiftVertex(int node0_vertex, int node) const {
  return ComponentVertex(node, vertices_[node0_vertex].local_index);
}

void Cluster::AppendShifted(const std::vector<int>& node0_links, int node,
                            std::vector<int>* route) const {
  for (int id : node0_links) route->push_back(id + node * links_per_node_);
}

std::string Cluster::Spec() const { return fmt::format("{}:{}", instance_.name, num_nodes_); }

int Cluster::FindLink(int src_vertex, int dst_vertex) const {
  for (int id : out_links_[src_vertex]) {
    if (links_[id].dst == dst_vertex) return id;
  }
  return -1;
}

std::vector<int> Cluster::Route(int src_gpu, int dst_gpu) const {
  TERASIM_CHECK(src_gpu >= 0 && src_gpu < NumGpus() && dst_gpu >= 0 && dst_gpu < NumGpus(),
                "route {} -> {} on {} GPUs", src_gpu, dst_gpu, NumGpus());
  std::vector<int> route;
  if (src_gpu == dst_gpu) return route;
  const int src_node = NodeOf(src_gpu);
  const int dst_node = NodeOf(dst_gpu);
  const int src_local = LocalIndex(src_gpu);
  const int dst_local = LocalIndex(dst_gpu);
  // Its length is known before a link is added: one allocation.
  if (src_node == dst_node) {
    route.reserve(local_routes_[src_local][dst_local].size());
    AppendShifted(local_routes_[src_local][dst_local], src_node, &route);
    return route;
  }
  const int src_nic = ShiftVertex(nic_of_local_[src_local], src_node);
  const int dst_nic = ShiftVertex(nic_of_local_[dst_local], dst_node);
  const int src_leaf = switch_of_[src_nic];
  const int dst_leaf = switch_of_[dst_nic];
  route.reserve(to_nic_[src_local].size() + (src_leaf != dst_leaf ? 4 : 2) +
                from_nic_[dst_local].size());
  AppendShifted(to_nic_[src_local], src_node, &route);
  route.push_back(nic_up_[src_nic]);
  if (src_leaf != dst_leaf) {
    route.push_back(leaf_up_[src_leaf]);
    route.push_back(leaf_down_[dst_leaf]);
  }
  route.push_back(nic_down_[dst_nic]);
  AppendShifted(from_nic_[dst_local], dst_node, &route);
  return route;
}

std::vector<int> Cluster::RouteVertices(int src_gpu, int dst_gpu) const {
  std::vector<int> vertices{src_gpu};
  for (int id : Route(src_gpu, dst_gpu)) vertices.push_back(links_[id].dst);
  return vertices;
}

TimeNs Cluster::RouteLatencyNs(int src_gpu, int dst_gpu) const {
  TimeNs total = 0;
  for (int id : Route(src_gpu, dst_gpu)) total += links_[id].latency_ns;
  return total;
}

double Cluster::RouteBottleneckBytesPerS(int src_gpu, int dst_gpu) const {
  double narrowest = 0;
  for (int id : Route(src_gpu, dst_gpu)) {
    const double bw = links_[id].bw_bytes_per_s;
    narrowest = narrowest == 0 ? bw : std::min(narrowest, bw);
  }
  return narrowest;
}

int Cluster::NicOf(int gpu) const {
  TERASIM_CHECK(gpu >= 0 && gpu < NumGpus(), "gpu {} of {}", gpu, NumGpus());
  return ShiftVertex(nic_of_local_[LocalIndex(gpu)], NodeOf(gpu));
}

int Cluster::HostCpuOf(int gpu) const {
  TERASIM_CHECK(gpu >= 0 && gpu < NumGpus(), "gpu {} of {}", gpu, NumGpus());
  return ShiftVertex(cpu_of_local_[LocalIndex(gpu)], NodeOf(gpu));
}

int Cluster::SocketOf(int gpu) const {
  const int cpu_component = vertices_[HostCpuOf(gpu)].local_index;
  int socket = 0;
  for (int k = 0; k < cpu_component; ++k) {
    if (instance_.components[k].kind == VertexKind::kCpu) ++socket;
  }
  return socket;
}

std::vector<std::vector<int>> Cluster::NodeRings(int node) const {
  TERASIM_CHECK(node >= 0 && node < num_nodes_, "node {} of {}", node, num_nodes_);
  std::vector<std::vector<int>> rings;
  for (const auto& pattern : instance_.rings) {
    std::vector<int> ring;
    for (int local : pattern) ring.push_back(GpuAt(node, local));
    rings.push_back(ring);
  }
  return rings;
}

std::vector<std::vector<int>> Cluster::ClusterRings() const {
  std::vector<std::vector<int>> rings;
  for (const auto& pattern : instance_.rings) {
    std::vector<int> ring;
    for (int n = 0; n < num_nodes_; ++n) {
      for (int local : pattern) ring.push_back(GpuAt(n, local));
    }
    rings.push_back(ring);
  }
  return rings;
}

std::vector<std::vector<int>> Cluster::GroupRings(const std::vector<int>& gpus) const {
  std::set<int> seen;
  for (int g : gpus) {
    if (g < 0 || g >= NumGpus()) {
      ThrowInput("collective group: GPU {} is not in cluster {} ({} GPUs)", g, Spec(), NumGpus());
    }
    if (!seen.insert(g).second) ThrowInput("collective group: GPU {} is listed twice", g);
  }
  std::vector<std::vector<int>> rings;
  for (const auto& pattern : instance_.rings) {
    std::vector<int> position(gpus_per_node_);
    for (size_t i = 0; i < pattern.size(); ++i) position[pattern[i]] = static_cast<int>(i);
    std::vector<int> ring = gpus;
    std::stable_sort(ring.begin(), ring.end(), [&](int a, int b) {
      if (NodeOf(a) != NodeOf(b)) return NodeOf(a) < NodeOf(b);
      return position[LocalIndex(a)] < position[LocalIndex(b)];
    });
    rings.push_back(ring);
  }
  return rings;
}

GpuConnection Cluster::Connection(int gpu_a, int gpu_b, int* nvlink_lanes) const {
  TERASIM_CHECK(gpu_a >= 0 && gpu_a < NumGpus() && gpu_b >= 0 && gpu_b < NumGpus(),
                "gpus {}, {} of {}", gpu_a, gpu_b, NumGpus());
  if (nvlink_lanes != nullptr) *nvlink_lanes = 0;
  if (NodeOf(gpu_a) != NodeOf(gpu_b)) return GpuConnection::kNetwork;
  const int a = LocalIndex(gpu_a);
  const int b = LocalIndex(gpu_b);
  if (nvlink_lanes != nullptr) *nvlink_lanes = connection_lanes_[a][b];
  return connection_[a][b];
}

std::string Cluster::ConnectionLabel(int gpu_a, int gpu_b) const {
  int lanes = 0;
  switch (Connection(gpu_a, gpu_b, &lanes)) {
    case GpuConnection::kSelf:
      return "X";
    case GpuConnection::kNvLink:
      return fmt::format("NV{}", lanes);
    case GpuConnection::kPix:
      return "PIX";
    case GpuConnection::kPhb:
      return "PHB";
    case GpuConnection::kSys:
      return "SYS";
    case GpuConnection::kNetwork:
      return "NET";
  }
  return "?";
}

int Cluster::NvLinkLanes(int gpu) const {
  int lanes = 0;
  for (int id : out_links_[gpu]) {
    if (links_[id].kind == LinkKind::kNvLink) lanes += links_[id].lanes;
  }
  return lanes;
}

Cluster BuildCluster(const InstanceSpec& instance, int nodes, const ClusterOptions& options) {
  ValidateClusterOptions(options);
  if (nodes < 1 || nodes > 65536) {
    ThrowInput("--cluster: node count must be in [1, 65536] (got {})", nodes);
  }
  return ClusterBuilder(instance, nodes, options).Build();
}

Cluster BuildCluster(const std::string& spec, const ClusterOptions& options) {
  ClusterSpec parsed = ParseClusterSpec(spec);
  return BuildCluster(LoadInstanceSpec(parsed.instance), parsed.nodes, options);
}

}  // namespace terasim

#include "sim/collective_plan.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <optional>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/model_card.h"
#include "topologies/instance_spec.h"

namespace terasim {
namespace {

// Bandwidth of the narrowest link on the ring's hops.
double RingBottleneck(const std::vector<int>& ring, bool closed, const NetworkTopology& topology) {
  double bottleneck = 0;
  const int p = static_cast<int>(ring.size());
  for (int i = 0; i + (closed ? 0 : 1) < p; ++i) {
    for (int link : topology.Route(ring[i], ring[(i + 1) % p])) {
      const double bw = topology.Links()[link].bw_bytes_per_s;
      if (bottleneck == 0 || bw < bottleneck) bottleneck = bw;
    }
  }
  return bottleneck;
}

// The ring rotated so that its smallest GPU comes first (to drop duplicates).
std::vector<int> Canonical(std::vector<int> ring) {
  std::rotate(ring.begin(), std::min_element(ring.begin(), ring.end()), ring.end());
  return ring;
}

// Rings over `gpus` with the share of the data each carries (weights sum to 1).
std::vector<std::pair<std::vector<int>, double>> WeightedRings(const std::vector<int>& gpus,
                                                               const NetworkTopology& topology,
                                                               const CollectiveOptions& options) {
  const int node = topology.NodeOf(gpus[0]);
  bool one_node = true;
  for (int g : gpus) one_node = one_node && topology.NodeOf(g) == node;
  std::vector<std::vector<int>> rings;
  if (one_node) {
    for (const std::vector<int>& node_ring : topology.NodeRings(node)) {
      std::vector<int> filtered;
      for (int g : node_ring) {
        if (std::find(gpus.begin(), gpus.end(), g) != gpus.end()) filtered.push_back(g);
      }
      if (filtered.size() != gpus.size()) continue;
      bool seen = false;
      for (const auto& r : rings) seen = seen || Canonical(r) == Canonical(filtered);
      if (!seen) rings.push_back(filtered);
    }
  }
  if (rings.empty()) rings.push_back(gpus);
  if (one_node && options.bidirectional_rings && gpus.size() > 2) {
    const size_t forward = rings.size();
    for (size_t i = 0; i < forward; ++i) rings.emplace_back(rings[i].rbegin(), rings[i].rend());
  }
  std::vector<double> bw(rings.size());
  double total = 0;
  for (size_t i = 0; i < rings.size(); ++i) {
    bw[i] = RingBottleneck(rings[i], true, topology);
    total += bw[i];
  }
  std::vector<std::pair<std::vector<int>, double>> weighted;
  for (size_t i = 0; i < rings.size(); ++i) {
    weighted.emplace_back(rings[i], total > 0 ? bw[i] / total : 1.0 / rings.size());
  }
  return weighted;
}

// Adds to `phase` a ring algorithm of `steps` steps over `gpus`: the data (`bytes` per rank) is
// split over the rings of `gpus` and each step moves share / p bytes per hop.
void AddRings(const std::vector<int>& gpus, double bytes, int steps,
              const NetworkTopology& topology, const CollectiveOptions& options,
              CollectivePhase& phase) {
  const int p = static_cast<int>(gpus.size());
  for (auto& [ring, weight] : WeightedRings(gpus, topology, options)) {
    RingRun run;
    run.gpus = ring;
    run.closed = true;
    run.steps = steps;
    run.bytes_per_flow = bytes * weight / p;
    phase.runs.push_back(std::move(run));
  }
}

}  // namespace

const char* CollectiveAlgorithmsName(CollectiveAlgorithms algorithms) {
  return algorithms == CollectiveAlgorithms::kNccl ? "nccl" : "ring";
}

CollectiveAlgorithms ParseCollectiveAlgorithms(const std::string& text, const std::string& where) {
  if (text == "ring") return CollectiveAlgorithms::kRing;
  if (text == "nccl") return CollectiveAlgorithms::kNccl;
  ThrowInput("{}: '{}' must be ring or nccl", where, text);
}

CollectiveOptions LoadCollectiveOptions(const std::string& path) {
  const nlohmann::json json = ParseJson(ReadTextFile(path), path);
  JsonReader reader(json, path);
  reader.RejectUnknown({"bidirectional_rings", "broadcast_chunk_bytes", "step_by_step",
                        "algorithms", "nccl", "nccl_channels_per_nic", "source"});
  CollectiveOptions options;
  options.bidirectional_rings = reader.RequireBool("bidirectional_rings");
  options.broadcast_chunk_bytes = reader.RequireInt("broadcast_chunk_bytes", 1);
  if (reader.Has("step_by_step")) options.step_by_step = reader.RequireBool("step_by_step");
  if (reader.Has("algorithms")) {
    options.algorithms = ParseCollectiveAlgorithms(reader.RequireString("algorithms"),
                                                   fmt::format("{}: algorithms", path));
  }
  if (options.algorithms == CollectiveAlgorithms::kNccl) {
    std::string table = reader.RequireString("nccl");
    if (!table.empty() && table[0] != '/') table = DataRoot() + "/" + table;
    options.nccl = LoadNcclTable(table);
    options.nccl_channels_per_nic = static_cast<int>(reader.RequireInt("nccl_channels_per_nic", 1));
  }
  return options;
}

std::string DefaultCollectiveOptionsPath() { return DataRoot() + "/sim/data/collectives.json"; }

namespace {

// The group's members per node, nodes in order of first appearance.
struct NodeGroups {
  std::vector<int> order;
  std::map<int, std::vector<int>> members;
  int g = 0;             // members of the first node
  bool uniform = false;  // every node holds g
};

NodeGroups GroupByNode(const std::vector<int>& gpus, const NetworkTopology& topology) {
  NodeGroups groups;
  for (int g : gpus) {
    const int node = topology.NodeOf(g);
    if (!groups.members.count(node)) groups.order.push_back(node);
    groups.members[node].push_back(g);
  }
  groups.g = static_cast<int>(groups.members[groups.order[0]].size());
  groups.uniform = true;
  for (const auto& [node, members] : groups.members) {
    groups.uniform = groups.uniform && members.size() == size_t(groups.g);
  }
  return groups;
}

// hierarchical: an all-reduce over whole nodes of g > 1 members each as reduce-scatter, the
// all-reduce across nodes, all-gather (else one ring in group order).
CollectivePlan PlanRuns(OpKind kind, const std::vector<int>& gpus, int root_gpu, Bytes bytes,
                        const NetworkTopology& topology, const CollectiveOptions& options,
                        bool hierarchical = true) {
  TERASIM_CHECK(IsCollective(kind), "{} is not a collective", OpKindName(kind));
  CollectivePlan plan;
  const int p = static_cast<int>(gpus.size());
  if (p <= 1 || bytes <= 0) return plan;
  const double n = static_cast<double>(bytes);

  if (kind == OpKind::kBroadcast) {
    std::vector<int> chain = WeightedRings(gpus, topology, options).front().first;
    auto root = std::find(chain.begin(), chain.end(), root_gpu);
    if (root != chain.end()) std::rotate(chain.begin(), root, chain.end());
    RingRun run;
    run.gpus = chain;
    run.closed = false;
    run.chunks = static_cast<int>(std::max<Bytes>(
        1, (bytes + options.broadcast_chunk_bytes - 1) / options.broadcast_chunk_bytes));
    run.steps = run.chunks + p - 2;
    run.bytes_per_flow = n / run.chunks;
    plan.phases.push_back(CollectivePhase{{run}});
    return plan;
  }
  if (kind == OpKind::kAllGather || kind == OpKind::kReduceScatter) {
    CollectivePhase phase;
    AddRings(gpus, n, p - 1, topology, options, phase);
    plan.phases.push_back(std::move(phase));
    return plan;
  }

  // ALLREDUCE.
  NodeGroups groups = GroupByNode(gpus, topology);
  const std::vector<int>& node_order = groups.order;
  std::map<int, std::vector<int>>& by_node = groups.members;
  const int nodes = static_cast<int>(node_order.size());
  const int g = groups.g;
  if (nodes == 1 || g == 1 || !groups.uniform || !hierarchical) {
    CollectivePhase phase;
    AddRings(gpus, n, 2 * (p - 1), topology, options, phase);
    plan.phases.push_back(std::move(phase));
    return plan;
  }
  CollectivePhase reduce_scatter, across, all_gather;
  for (int node : node_order) {
    AddRings(by_node[node], n, g - 1, topology, options, reduce_scatter);
    AddRings(by_node[node], n, g - 1, topology, options, all_gather);
  }
  for (int local = 0; local < g; ++local) {
    std::vector<int> ring;
    for (int node : node_order) ring.push_back(by_node[node][local]);
    AddRings(ring, n / g, 2 * (nodes - 1), topology, options, across);
  }
  plan.phases.push_back(std::move(reduce_scatter));
  plan.phases.push_back(std::move(across));
  plan.phases.push_back(std::move(all_gather));
  return plan;
}

// The members of one node in the order of its first NVLink ring.
std::vector<int> NodeChain(const std::vector<int>& members, const NetworkTopology& topology,
                           const CollectiveOptions& options) {
  if (members.size() <= 2) return members;
  return WeightedRings(members, topology, options).front().first;
}

// NCCL's binary tree over positions 0..n-1 (src/graph/trees.cc): 0 is the root; position r > 0
// with lowest set bit b hangs under (r - b) | 2b, or r - b where that is out of range.
int TreeParent(int r, int n) {
  if (r == 0) return -1;
  const int bit = r & -r;
  const int up = (r ^ bit) | (bit << 1);
  return up < n ? up : r ^ bit;
}

// NCCL's double binary tree all-reduce (sim/collective_plan.h): reduce then broadcast, each a
// phase of single-step transfers along the tree's edges.
CollectivePlan PlanTree(const NodeGroups& groups, Bytes bytes, const NetworkTopology& topology,
                        const CollectiveOptions& options) {
  const double n = static_cast<double>(bytes);
  const int nodes = static_cast<int>(groups.order.size());
  std::vector<std::vector<int>> chains;
  for (int node : groups.order) {
    chains.push_back(NodeChain(groups.members.at(node), topology, options));
  }
  std::map<std::pair<int, int>, double> up;  // (child, parent) -> bytes
  for (const std::vector<int>& chain : chains) {
    for (size_t i = 1; i < chain.size(); ++i) up[{chain[i], chain[i - 1]}] += n;
  }
  // The second tree: the first mirrored (an even count of nodes) or shifted by one (odd), so
  // that the first tree's inner nodes are mostly its leaves.
  const auto second = [nodes](int position) {
    return nodes % 2 == 0 ? nodes - 1 - position : (position + 1) % nodes;
  };
  for (int position = 1; position < nodes; ++position) {
    const int parent = TreeParent(position, nodes);
    up[{chains[position][0], chains[parent][0]}] += n / 2;
    up[{chains[second(position)][0], chains[second(parent)][0]}] += n / 2;
  }
  CollectivePlan plan;
  CollectivePhase reduce, broadcast;
  for (const auto& [edge, edge_bytes] : up) {
    RingRun run;
    run.closed = false;
    run.steps = 1;
    run.chunks = 1;
    run.bytes_per_flow = edge_bytes;
    run.gpus = {edge.first, edge.second};
    reduce.runs.push_back(run);
    run.gpus = {edge.second, edge.first};
    broadcast.runs.push_back(std::move(run));
  }
  plan.phases.push_back(std::move(reduce));
  plan.phases.push_back(std::move(broadcast));
  return plan;
}

Collective CollectiveOf(OpKind kind) {
  switch (kind) {
    case OpKind::kAllReduce:
      return Collective::kAllReduce;
    case OpKind::kAllGather:
      return Collective::kAllGather;
    case OpKind::kReduceScatter:
      return Collective::kReduceScatter;
    default:
      return Collective::kBroadcast;
  }
}

// The bus bandwidth of the rings AddRings lays over `gpus` (one node), uncontended: a step
// moves weight x share / p over each hop of each ring, so it takes the most loaded link's sum
// of weight / bandwidth per byte.
double RingsBusBw(const std::vector<int>& gpus, const NetworkTopology& topology,
                  const CollectiveOptions& options) {
  std::map<int, double> load;  // per link: seconds per byte of share / p
  for (const auto& [ring, weight] : WeightedRings(gpus, topology, options)) {
    const int p = static_cast<int>(ring.size());
    for (int i = 0; i < p; ++i) {
      for (int link : topology.Route(ring[i], ring[(i + 1) % p])) {
        load[link] += weight / topology.Links()[link].bw_bytes_per_s;
      }
    }
  }
  double most = 0;
  for (const auto& [link, seconds] : load) most = std::max(most, seconds);
  return most > 0 ? 1 / most : 0;
}

}  // namespace

std::optional<std::pair<int, int>> NcclShapeOf(const std::vector<int>& gpus,
                                               const NetworkTopology& topology,
                                               const CollectiveOptions& options) {
  const InstanceSpec* instance = topology.Instance();
  if (options.algorithms != CollectiveAlgorithms::kNccl || options.nccl == nullptr ||
      instance == nullptr || gpus.size() <= 1 || !NcclTableHas(*options.nccl, instance->name)) {
    return std::nullopt;
  }
  const int nodes = static_cast<int>(GroupByNode(gpus, topology).order.size());
  return std::make_pair(nodes, std::max(1, static_cast<int>(gpus.size()) / nodes));
}

NcclSystem NcclShapeSystem(int nodes, int per_node, const NetworkTopology& topology,
                           const CollectiveOptions& options) {
  const InstanceSpec& instance = *topology.Instance();
  const NetworkSpec& net = instance.network;
  return NcclSystemFrom(*options.nccl, instance.name, nodes, per_node,
                        instance.NumNics() * net.nic_raw_bw_bytes_per_s * net.efficiency,
                        static_cast<double>(net.latency_ns) / 1e3, net.gpudirect);
}

NcclSystem NcclCommunicatorOf(const std::vector<int>& gpus, NcclSystem system,
                              const NetworkTopology& topology, const CollectiveOptions& options) {
  if (system.nodes == 1) {
    const double bus_bw = RingsBusBw(gpus, topology, options);
    if (bus_bw > 0) {
      system.channels = static_cast<int>(
          std::max<int64_t>(1, std::llround(bus_bw / system.channel_bw_bytes_per_s)));
      system.channel_bw_bytes_per_s = bus_bw / system.channels;
    }
  } else {
    // A channel across nodes runs at its NIC's speed where that is above an NVLink lane's
    // (NCCL's search gives a multi-node ring one speed inside and between nodes).
    system.channels = std::max(1, options.nccl_channels_per_nic * topology.Instance()->NumNics());
    system.channel_bw_bytes_per_s =
        std::max(system.channel_bw_bytes_per_s, system.node_net_bw_bytes_per_s / system.channels);
  }
  return system;
}

std::optional<NcclSystem> NcclCommunicator(const std::vector<int>& gpus,
                                           const NetworkTopology& topology,
                                           const CollectiveOptions& options) {
  const std::optional<std::pair<int, int>> shape = NcclShapeOf(gpus, topology, options);
  if (!shape) return std::nullopt;
  return NcclCommunicatorOf(gpus, NcclShapeSystem(shape->first, shape->second, topology, options),
                            topology, options);
}

namespace {

// The plan of NCCL's choice of algorithm and protocol, its bytes on the wire (latencies are
// PlanCollective's).
CollectivePlan PlanNccl(OpKind kind, const std::vector<int>& gpus, int root_gpu, Bytes bytes,
                        const NetworkTopology& topology, const CollectiveOptions& options,
                        const NcclSystem& system) {
  TERASIM_CHECK(IsCollective(kind), "{} is not a collective", OpKindName(kind));
  if (gpus.size() <= 1 || bytes <= 0) return {};
  const NcclEstimate choice = NcclBestTime(system, CollectiveOf(kind), bytes);
  TERASIM_CHECK(choice.valid, "no NCCL algorithm for {} of {} bytes", OpKindName(kind), bytes);
  const NodeGroups groups = GroupByNode(gpus, topology);
  CollectivePlan plan;
  if (choice.algorithm == NcclAlgorithm::kTree) {
    plan = PlanTree(groups, bytes, topology, options);
  } else {
    std::vector<int> ordered;  // node after node
    if (groups.order.size() == 1) {
      ordered = gpus;
    } else {
      for (int node : groups.order) {
        for (int g : NodeChain(groups.members.at(node), topology, options)) ordered.push_back(g);
      }
    }
    plan = PlanRuns(kind, ordered, root_gpu, bytes, topology, options, /*hierarchical=*/false);
  }
  // Bytes on the wire: the protocol's (LL's flags, the tree's size correction), and where a
  // per-channel or LL cap holds the pair below that on the links NCCL plans with, the rest of
  // the way to the capped rate (NcclCapFactor): a rate limit as wire bytes, exact for a
  // collective alone; under contention it holds its links as long as the capped rate would.
  const double wire = 1 / (NcclBandwidthFactor(system, choice.algorithm, choice.protocol, bytes) *
                           NcclCapFactor(system, choice.algorithm, choice.protocol));
  for (CollectivePhase& phase : plan.phases) {
    for (RingRun& run : phase.runs) run.bytes_per_flow *= wire;
  }
  plan.nccl = true;
  plan.algorithm = choice.algorithm;
  plan.protocol = choice.protocol;
  return plan;
}

// NCCL's step latency of the plan's protocol over the hop a -> b, less the Simple ring's (which
// the topology's link latencies are), in ns.
TimeNs ProtocolDeltaNs(const CollectivePlan& plan, const NcclSystem& system, int a, int b,
                       const NetworkTopology& topology) {
  const NcclHop hop = topology.NodeOf(a) != topology.NodeOf(b) ? NcclHop::kNet
                      : system.intra_nvlink                    ? NcclHop::kNvlink
                                                               : NcclHop::kPci;
  const double us = NcclStepLatencyUs(system, plan.algorithm, plan.protocol, hop) -
                    NcclStepLatencyUs(system, NcclAlgorithm::kRing, NcclProtocol::kSimple, hop);
  return std::llround(us * 1e3);
}

// A tree's depth once per phase and NCCL's base latency once per collective.
void AddNcclLatencies(CollectivePlan& plan, const NcclSystem& system,
                      const NetworkTopology& topology) {
  if (plan.algorithm == NcclAlgorithm::kTree) {
    for (CollectivePhase& phase : plan.phases) {
      TimeNs intra_ns = 0, net_ns = 0;
      for (const RingRun& run : phase.runs) {
        const bool net = topology.NodeOf(run.gpus[0]) != topology.NodeOf(run.gpus[1]);
        (net ? net_ns : intra_ns) = std::max(net ? net_ns : intra_ns, run.alpha_ns);
      }
      const TimeNs depth_ns = (system.gpus_per_node - 1) * intra_ns +
                              (std::bit_width(static_cast<unsigned>(system.nodes)) - 1) * net_ns;
      for (RingRun& run : phase.runs) run.latency_ns = std::max<TimeNs>(0, depth_ns - run.alpha_ns);
    }
  }
  const TimeNs base_ns =
      std::llround(NcclBaseLatencyUs(system, plan.algorithm, plan.protocol) * 1e3);
  if (!plan.phases.empty()) {
    for (RingRun& run : plan.phases.front().runs) run.latency_ns += base_ns;
  }
}

}  // namespace

CollectivePlan PlanCollective(OpKind kind, const std::vector<int>& gpus, int root_gpu, Bytes bytes,
                              const NetworkTopology& topology, const CollectiveOptions& options) {
  return PlanCollective(kind, gpus, root_gpu, bytes, topology, options,
                        NcclCommunicator(gpus, topology, options));
}

CollectivePlan PlanCollective(OpKind kind, const std::vector<int>& gpus, int root_gpu, Bytes bytes,
                              const NetworkTopology& topology, const CollectiveOptions& options,
                              const std::optional<NcclSystem>& system) {
  CollectivePlan plan = system ? PlanNccl(kind, gpus, root_gpu, bytes, topology, options, *system)
                               : PlanRuns(kind, gpus, root_gpu, bytes, topology, options);
  const std::vector<NetLink>& links = topology.Links();
  for (CollectivePhase& phase : plan.phases) {
    for (RingRun& run : phase.runs) {
      const int p = static_cast<int>(run.gpus.size());
      for (int i = 0; i + (run.closed ? 0 : 1) < p; ++i) {
        const int a = run.gpus[i];
        const int b = run.gpus[(i + 1) % p];
        TimeNs latency_ns = 0;
        for (int link : topology.Route(a, b)) {
          run.links.push_back(link);
          latency_ns += links[link].latency_ns;
        }
        if (system) {
          latency_ns =
              std::max<TimeNs>(0, latency_ns + ProtocolDeltaNs(plan, *system, a, b, topology));
        }
        run.hop_latency_ns.push_back(latency_ns);
        run.alpha_ns = std::max(run.alpha_ns, latency_ns);
      }
    }
  }
  if (system && !plan.phases.empty()) AddNcclLatencies(plan, *system, topology);
  return plan;
}

std::vector<std::pair<int, int>> StepTransfers(const RingRun& run, int step) {
  std::vector<std::pair<int, int>> transfers;
  const int p = static_cast<int>(run.gpus.size());
  if (run.closed) {
    for (int i = 0; i < p; ++i) transfers.emplace_back(run.gpus[i], run.gpus[(i + 1) % p]);
  } else {
    for (int e = 0; e + 1 < p; ++e) {
      if (step - e >= 0 && step - e < run.chunks)
        transfers.emplace_back(run.gpus[e], run.gpus[e + 1]);
    }
  }
  return transfers;
}

}  // namespace terasim

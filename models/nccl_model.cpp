#include "models/nccl_model.h"

#include <algorithm>
#include <cmath>

#include "models/errors.h"
#include "models/json_reader.h"

namespace terasim {
namespace {

constexpr int kTree = 0;
constexpr int kRing = 1;
constexpr int kNvlink = 0;
constexpr int kPci = 1;
constexpr int kNet = 2;

int ProtocolIndex(NcclProtocol protocol) { return static_cast<int>(protocol); }

// NCCL's node-count index: 1 node, 2 nodes, more.
int NodeIndex(int nodes) { return nodes <= 2 ? nodes - 1 : 2; }

int FloorLog2(int64_t x) {
  int log = 0;
  while (x > 1) {
    x >>= 1;
    ++log;
  }
  return log;
}

int Steps(Collective collective, int p) {
  switch (collective) {
    case Collective::kAllReduce:
      return 2 * (p - 1);
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return p - 1;
    default:
      return p;
  }
}

// Per-channel bandwidth: inside the node, or its share of the node's network.
double ChannelBw(const NcclSystem& s) {
  if (s.nodes == 1) return s.channel_bw_bytes_per_s;
  return std::min(s.channel_bw_bytes_per_s, s.node_net_bw_bytes_per_s / s.channels);
}

// The tree's bandwidth correction for n bytes (1 outside the table).
double TreeCorrection(const NcclConstants& k, NcclProtocol protocol, Bytes n) {
  const int64_t log_size = n >= 64 ? FloorLog2(n >> 6) : -1;
  const std::vector<double>& correction = k.tree_correction[ProtocolIndex(protocol)];
  if (log_size >= 0 && log_size < static_cast<int64_t>(correction.size())) {
    return correction[static_cast<size_t>(log_size)];
  }
  return 1.0;
}

bool Ll128Enabled(const NcclSystem& s) { return s.intra_nvlink && (s.nodes == 1 || s.gpudirect); }

// The links' bandwidth as NCCL plans it: channels x per-channel bandwidth.
double LinksBw(const NcclSystem& s) { return s.channels * ChannelBw(s); }

// The protocol's fraction of the links (before the caps and the tree's size correction).
double ProtocolFactor(const NcclSystem& s, NcclAlgorithm algorithm, NcclProtocol protocol) {
  const NcclConstants& k = s.constants;
  if (algorithm == NcclAlgorithm::kRing) {
    if (protocol == NcclProtocol::kLL) return k.ring_ll_factor;
    if (protocol == NcclProtocol::kLL128) return k.ring_ll128_factor;
    return 1.0;
  }
  double factor = k.tree_allreduce_factor;
  if (protocol == NcclProtocol::kLL) factor *= k.tree_ll_factor;
  if (protocol == NcclProtocol::kLL128) {
    factor *= s.nodes == 1 ? k.tree_ll128_factor_one_node : k.tree_ll128_factor_nodes;
  }
  return factor;
}

// NCCL's bus bandwidth of a ring or tree pair: the links' times the protocol's factors, each
// step capped per channel (ring LL128, tree, tree LL128) or in all (LL, the host's limit
// across nodes).
double BusBw(const NcclSystem& s, NcclAlgorithm algorithm, NcclProtocol protocol) {
  const NcclConstants& k = s.constants;
  const int ni = NodeIndex(s.nodes);
  double busbw = LinksBw(s);
  if (algorithm == NcclAlgorithm::kRing) {
    if (protocol == NcclProtocol::kLL)
      busbw = std::min(k.ll_max_bw[ni] * 1e9, busbw * k.ring_ll_factor);
    if (protocol == NcclProtocol::kLL128) {
      busbw = std::min(busbw * k.ring_ll128_factor, s.channels * k.ring_ll128_cap[ni] * 1e9);
    }
    return busbw;
  }
  busbw = std::min(busbw * k.tree_allreduce_factor, s.channels * k.tree_cap[ni] * 1e9);
  if (protocol == NcclProtocol::kLL)
    busbw = std::min(busbw * k.tree_ll_factor, k.ll_max_bw[ni] * 1e9);
  if (protocol == NcclProtocol::kLL128) {
    const double factor = s.nodes == 1 ? k.tree_ll128_factor_one_node : k.tree_ll128_factor_nodes;
    busbw = std::min(busbw * factor, s.channels * k.tree_ll128_cap[ni] * 1e9);
  }
  return busbw;
}

NcclEstimate Ring(const NcclSystem& s, Collective collective, Bytes n, NcclProtocol protocol) {
  const NcclConstants& k = s.constants;
  const int pi = ProtocolIndex(protocol);
  const int p = s.Ranks();
  NcclEstimate e;
  e.algorithm = NcclAlgorithm::kRing;
  e.protocol = protocol;
  if (collective == Collective::kSendRecv) return e;
  if (protocol == NcclProtocol::kLL128 && !Ll128Enabled(s)) return e;
  const double busbw = BusBw(s, NcclAlgorithm::kRing, protocol);
  const int steps = Steps(collective, p);
  e.algbw_bytes_per_s = busbw * p / steps;
  const int intra_hw = s.intra_nvlink ? kNvlink : kPci;
  double latency_us = k.base_latency_us[kRing].v[pi];
  if (collective == Collective::kBroadcast) {
    latency_us += k.hw_latency_us[s.nodes == 1 ? intra_hw : kNet][kRing].v[pi];
  } else {
    double intra_us = k.hw_latency_us[intra_hw][kRing].v[pi];
    double net_us = k.hw_latency_us[kNet][s.gpus_per_node == 1 ? kTree : kRing].v[pi] +
                    s.net_latency_us * (protocol == NcclProtocol::kSimple ? 2 : 1);
    if (s.nodes > 1) {
      const double overhead =
          k.net_overhead_us *
          (protocol == NcclProtocol::kSimple ? k.net_overhead_simple_multiplier : 1);
      intra_us = std::max(intra_us, overhead);
    }
    const int net_steps =
        s.nodes == 1 ? 0 : (collective == Collective::kAllReduce ? 2 : 1) * (s.nodes - 1);
    latency_us += (steps - net_steps) * intra_us + net_steps * net_us;
    if (protocol == NcclProtocol::kSimple && s.nodes > 1 && collective == Collective::kAllReduce &&
        n / (static_cast<int64_t>(s.channels) * p) >= 64) {
      latency_us *= k.ring_simple_plateau_factor;
    }
  }
  e.latency_s = latency_us * 1e-6;
  e.time_s = e.latency_s + static_cast<double>(n) / e.algbw_bytes_per_s;
  e.valid = true;
  return e;
}

NcclEstimate Tree(const NcclSystem& s, Collective collective, Bytes n, NcclProtocol protocol) {
  const NcclConstants& k = s.constants;
  const int pi = ProtocolIndex(protocol);
  NcclEstimate e;
  e.algorithm = NcclAlgorithm::kTree;
  e.protocol = protocol;
  if (collective != Collective::kAllReduce) return e;
  if (protocol == NcclProtocol::kLL128 && !Ll128Enabled(s)) return e;
  e.algbw_bytes_per_s = BusBw(s, NcclAlgorithm::kTree, protocol) * 0.5;
  const int intra_hw = s.intra_nvlink ? kNvlink : kPci;
  const double intra_us = k.hw_latency_us[intra_hw][kTree].v[pi];
  const double net_us =
      k.hw_latency_us[kNet][kTree].v[pi] +
      (s.nodes > 1 ? s.net_latency_us * (protocol == NcclProtocol::kSimple ? 2 : 1) : 0);
  const double latency_us = k.base_latency_us[kTree].v[pi] +
                            2 * ((s.gpus_per_node - 1) * intra_us + FloorLog2(s.nodes) * net_us);
  e.latency_s = latency_us * 1e-6;
  const double bw = e.algbw_bytes_per_s * TreeCorrection(k, protocol, n);
  e.time_s = e.latency_s + static_cast<double>(n) / bw;
  e.valid = true;
  return e;
}

NcclEstimate Hierarchical(const NcclSystem& s, Collective collective, Bytes n) {
  NcclEstimate e;
  e.algorithm = NcclAlgorithm::kHierarchical;
  if (s.nodes == 1 || collective == Collective::kBroadcast || collective == Collective::kSendRecv) {
    return e;
  }
  NcclSystem intra = s;
  intra.nodes = 1;
  // The node's GPUs each run the cross-node phase on their shard at once, sharing its NICs.
  NcclSystem inter = s;
  inter.gpus_per_node = 1;
  inter.node_net_bw_bytes_per_s = s.node_net_bw_bytes_per_s / s.gpus_per_node;
  const Bytes shard = (n + s.gpus_per_node - 1) / s.gpus_per_node;
  double t = 0;
  switch (collective) {
    case Collective::kAllReduce:
      t = NcclBestTime(intra, Collective::kReduceScatter, n).time_s +
          NcclBestTime(inter, Collective::kAllReduce, shard).time_s +
          NcclBestTime(intra, Collective::kAllGather, n).time_s;
      break;
    case Collective::kReduceScatter:
      t = NcclBestTime(intra, Collective::kReduceScatter, n).time_s +
          NcclBestTime(inter, Collective::kReduceScatter, shard).time_s;
      break;
    case Collective::kAllGather:
      t = NcclBestTime(inter, Collective::kAllGather, shard).time_s +
          NcclBestTime(intra, Collective::kAllGather, n).time_s;
      break;
    default:
      return e;
  }
  e.time_s = t;
  e.algbw_bytes_per_s = static_cast<double>(n) / t;
  e.valid = true;
  return e;
}

// Reads a [LL, LL128, Simple] triple.
NcclConstants::PerProtocol ReadTriple(const JsonReader& r, const std::string& key) {
  const nlohmann::json& a = r.RequireArray(key);
  if (a.size() != 3) ThrowInput("{}: {}: must hold 3 numbers (LL, LL128, Simple)", r.where(), key);
  NcclConstants::PerProtocol out;
  for (size_t i = 0; i < 3; ++i) {
    if (!a[i].is_number() || !(a[i].get<double>() >= 0)) {
      ThrowInput("{}: {}[{}]: must be a number >= 0", r.where(), key, i);
    }
    out.v[i] = a[i].get<double>();
  }
  return out;
}

void ReadRow(const JsonReader& r, const std::string& key, double out[3]) {
  const NcclConstants::PerProtocol t = ReadTriple(r, key);
  for (int i = 0; i < 3; ++i) out[i] = t.v[i];
}

}  // namespace

const char* NcclAlgorithmName(NcclAlgorithm algorithm) {
  switch (algorithm) {
    case NcclAlgorithm::kRing:
      return "ring";
    case NcclAlgorithm::kTree:
      return "tree";
    case NcclAlgorithm::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

const char* NcclProtocolName(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::kLL:
      return "LL";
    case NcclProtocol::kLL128:
      return "LL128";
    case NcclProtocol::kSimple:
      return "Simple";
  }
  return "?";
}

NcclEstimate NcclPairTime(const NcclSystem& system, Collective collective, Bytes n,
                          NcclAlgorithm algorithm, NcclProtocol protocol) {
  TERASIM_CHECK(system.nodes >= 1 && system.gpus_per_node >= 1 && system.channels >= 1 && n >= 0,
                "nodes {} gpus_per_node {} channels {} bytes {}", system.nodes,
                system.gpus_per_node, system.channels, n);
  if (system.Ranks() == 1) {
    NcclEstimate e;
    e.algorithm = algorithm;
    e.protocol = protocol;
    e.valid = true;
    return e;
  }
  switch (algorithm) {
    case NcclAlgorithm::kRing:
      return Ring(system, collective, n, protocol);
    case NcclAlgorithm::kTree:
      return Tree(system, collective, n, protocol);
    case NcclAlgorithm::kHierarchical:
      return Hierarchical(system, collective, n);
  }
  return {};
}

NcclEstimate NcclAlgorithmTime(const NcclSystem& system, Collective collective, Bytes n,
                               NcclAlgorithm algorithm) {
  if (algorithm == NcclAlgorithm::kHierarchical) {
    return NcclPairTime(system, collective, n, algorithm, NcclProtocol::kSimple);
  }
  NcclEstimate best;
  for (NcclProtocol protocol : {NcclProtocol::kLL, NcclProtocol::kLL128, NcclProtocol::kSimple}) {
    const NcclEstimate e = NcclPairTime(system, collective, n, algorithm, protocol);
    if (e.valid && (!best.valid || e.time_s < best.time_s)) best = e;
  }
  return best;
}

NcclEstimate NcclBestTime(const NcclSystem& system, Collective collective, Bytes n) {
  NcclEstimate best = NcclAlgorithmTime(system, collective, n, NcclAlgorithm::kRing);
  const NcclEstimate tree = NcclAlgorithmTime(system, collective, n, NcclAlgorithm::kTree);
  if (tree.valid && (!best.valid || tree.time_s < best.time_s)) best = tree;
  return best;
}

struct NcclTable {
  std::string path;
  nlohmann::json doc;
};

std::shared_ptr<const NcclTable> LoadNcclTable(const std::string& path) {
  auto table = std::make_shared<NcclTable>();
  table->path = path;
  table->doc = ParseJson(ReadTextFile(path), path);
  return table;
}

bool NcclTableHas(const NcclTable& table, const std::string& instance) {
  const auto instances = table.doc.find("instances");
  return instances != table.doc.end() && instances->is_object() && instances->contains(instance);
}

double NcclBaseLatencyUs(const NcclSystem& system, NcclAlgorithm algorithm, NcclProtocol protocol) {
  TERASIM_CHECK(algorithm != NcclAlgorithm::kHierarchical, "no base latency for hierarchical");
  return system.constants.base_latency_us[algorithm == NcclAlgorithm::kTree ? kTree : kRing]
      .v[ProtocolIndex(protocol)];
}

double NcclStepLatencyUs(const NcclSystem& system, NcclAlgorithm algorithm, NcclProtocol protocol,
                         NcclHop hop) {
  TERASIM_CHECK(algorithm != NcclAlgorithm::kHierarchical, "no step latency for hierarchical");
  int a = algorithm == NcclAlgorithm::kTree ? kTree : kRing;
  const int hw = hop == NcclHop::kNvlink ? kNvlink : hop == NcclHop::kPci ? kPci : kNet;
  if (hw == kNet && system.gpus_per_node == 1) a = kTree;
  return system.constants.hw_latency_us[hw][a].v[ProtocolIndex(protocol)];
}

double NcclBandwidthFactor(const NcclSystem& system, NcclAlgorithm algorithm, NcclProtocol protocol,
                           Bytes n) {
  TERASIM_CHECK(algorithm != NcclAlgorithm::kHierarchical, "no bandwidth factor for hierarchical");
  const double factor = ProtocolFactor(system, algorithm, protocol);
  return algorithm == NcclAlgorithm::kRing ? factor
                                           : factor * TreeCorrection(system.constants, protocol, n);
}

double NcclLinkBandwidth(const NcclSystem& system) { return LinksBw(system); }

double NcclBusBandwidth(const NcclSystem& system, NcclAlgorithm algorithm, NcclProtocol protocol) {
  TERASIM_CHECK(algorithm != NcclAlgorithm::kHierarchical, "no bus bandwidth for hierarchical");
  return BusBw(system, algorithm, protocol);
}

double NcclCapFactor(const NcclSystem& system, NcclAlgorithm algorithm, NcclProtocol protocol) {
  TERASIM_CHECK(algorithm != NcclAlgorithm::kHierarchical, "no caps for hierarchical");
  const double uncapped = LinksBw(system) * ProtocolFactor(system, algorithm, protocol);
  return uncapped > 0 ? std::min(1.0, BusBw(system, algorithm, protocol) / uncapped) : 1.0;
}

NcclSystem LoadNcclSystem(const std::string& path, const std::string& instance, int nodes,
                          int gpus_per_node, double node_net_bw_bytes_per_s, double net_latency_us,
                          bool gpudirect) {
  return NcclSystemFrom(*LoadNcclTable(path), instance, nodes, gpus_per_node,
                        node_net_bw_bytes_per_s, net_latency_us, gpudirect);
}

NcclSystem NcclSystemFrom(const NcclTable& table, const std::string& instance, int nodes,
                          int gpus_per_node, double node_net_bw_bytes_per_s, double net_latency_us,
                          bool gpudirect) {
  if (nodes < 1 || gpus_per_node < 1) {
    ThrowInput("{}: a communicator of {} nodes x {} GPUs", instance, nodes, gpus_per_node);
  }
  const std::string& path = table.path;
  const JsonReader root(table.doc, path);
  const JsonReader instances = root.Child("instances");
  if (!instances.Has(instance)) {
    ThrowInput("{}: instances: no entry for '{}'", path, instance);
  }
  const JsonReader inst = instances.Child(instance);
  inst.RejectUnknown(
      {"generation", "cpu", "intra", "channels", "bw_per_channel_gbytes_per_s", "source"});
  const std::string generation = inst.RequireString("generation");
  if (generation != "volta" && generation != "ampere" && generation != "hopper") {
    ThrowInput("{}: generation: '{}' must be volta, ampere or hopper", inst.where(), generation);
  }
  const std::string cpu = inst.RequireString("cpu");
  if (cpu != "intel" && cpu != "amd") {
    ThrowInput("{}: cpu: '{}' must be intel or amd", inst.where(), cpu);
  }
  const std::string intra = inst.RequireString("intra");
  if (intra != "nvlink" && intra != "pci") {
    ThrowInput("{}: intra: '{}' must be nvlink or pci", inst.where(), intra);
  }
  NcclSystem s;
  s.nodes = nodes;
  s.gpus_per_node = gpus_per_node;
  s.intra_nvlink = intra == "nvlink";
  s.channels = static_cast<int>(inst.RequireInt("channels", 1));
  s.channel_bw_bytes_per_s = inst.RequirePositive("bw_per_channel_gbytes_per_s") * 1e9;
  s.node_net_bw_bytes_per_s = node_net_bw_bytes_per_s;
  s.net_latency_us = net_latency_us;
  s.gpudirect = gpudirect;

  const JsonReader t = root.Child("tuning");
  NcclConstants& k = s.constants;
  const JsonReader base = t.Child("base_latency_us");
  k.base_latency_us[kTree] = ReadTriple(base, "tree");
  k.base_latency_us[kRing] = ReadTriple(base, "ring");
  const JsonReader hw = t.Child("hw_latency_us");
  const char* hw_names[3] = {"nvlink", "pci", "net"};
  for (int i = 0; i < 3; ++i) {
    const JsonReader h = hw.Child(hw_names[i]);
    k.hw_latency_us[i][kTree] = ReadTriple(h, "tree");
    k.hw_latency_us[i][kRing] = ReadTriple(h, "ring");
  }
  // One node: the GPU's row; several: the CPU's (NCCL's LL limit is the host's then).
  ReadRow(t.Child("ll_max_bw_gbytes_per_s"), nodes == 1 ? generation : cpu, k.ll_max_bw);
  ReadRow(t.Child("ring_ll128_max_bw_per_channel_gbytes_per_s"), generation, k.ring_ll128_cap);
  ReadRow(t.Child("tree_ll128_max_bw_per_channel_gbytes_per_s"), generation, k.tree_ll128_cap);
  ReadRow(t.Child("tree_max_bw_per_channel_gbytes_per_s"), generation, k.tree_cap);
  k.ring_ll_factor = t.RequirePositive("ring_ll_factor");
  k.ring_ll128_factor = t.RequirePositive("ring_ll128_factor");
  k.tree_allreduce_factor = t.RequirePositive("tree_allreduce_factor");
  k.tree_ll_factor = t.RequirePositive("tree_ll_factor");
  k.tree_ll128_factor_one_node = t.RequirePositive("tree_ll128_factor_one_node");
  k.tree_ll128_factor_nodes = t.RequirePositive("tree_ll128_factor_nodes");
  k.ring_simple_plateau_factor = t.Child("ring_simple_plateau_factor").RequirePositive(generation);
  const JsonReader overhead = t.Child("net_overhead_us");
  k.net_overhead_us = overhead.RequirePositive(cpu);
  k.net_overhead_simple_multiplier = overhead.RequirePositive("simple_multiplier");
  const JsonReader correction = t.Child("tree_correction");
  const char* protocols[3] = {"LL", "LL128", "Simple"};
  for (int i = 0; i < 3; ++i) {
    const nlohmann::json& a = correction.RequireArray(protocols[i]);
    for (size_t j = 0; j < a.size(); ++j) {
      if (!a[j].is_number() || !(a[j].get<double>() > 0 && a[j].get<double>() <= 1)) {
        ThrowInput("{}: {}[{}]: must be in (0, 1]", correction.where(), protocols[i], j);
      }
      k.tree_correction[i].push_back(a[j].get<double>());
    }
  }
  return s;
}

}  // namespace terasim

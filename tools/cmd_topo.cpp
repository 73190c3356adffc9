// terasim topo: the instance types and clusters terasim knows.
//   terasim topo list                 every instance type
//   terasim topo show p3.16xlarge     one node's GPU link matrix, as `nvidia-smi topo -m`
//   terasim topo show p3.16xlarge:48  a cluster summary (GPUs, links, bisection bandwidth)
//   terasim topo route SPEC SRC DST   the links a transfer between two GPUs crosses
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "models/errors.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "topologies/topology.h"

namespace terasim::cli {
namespace {

constexpr const char* kUsage =
    "list [--json]\n"
    "       terasim topo show INSTANCE[:COUNT] [options] [--json]\n"
    "       terasim topo route INSTANCE[:COUNT] SRC_GPU DST_GPU [options] [--json]";

std::string RingText(const std::vector<int>& ring) {
  std::string text;
  for (int g : ring) text += (text.empty() ? "" : "-") + std::to_string(g);
  return text;
}

nlohmann::json ListJson(const std::vector<InstanceSpec>& specs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : specs) {
    out.push_back({{"name", s.name},
                   {"device", s.device},
                   {"gpus", s.gpus},
                   {"nvswitch", s.HasNvSwitch()},
                   {"nics", s.NumNics()},
                   {"nic_gbits_per_s", s.network.nic_raw_bw_bytes_per_s * 8 / 1e9},
                   {"transport", s.network.transport},
                   {"gpudirect", s.network.gpudirect},
                   {"description", s.description},
                   {"file", s.file}});
  }
  return out;
}

int List(bool json) {
  std::vector<InstanceSpec> specs = ListInstanceSpecs();
  if (json) {
    PrintJson(ListJson(specs));
    return 0;
  }
  std::cout << fmt::format("{:<16} {:<16} {:>4} {:<10} {:<16} {}\n", "instance", "device", "gpus",
                           "gpu links", "network", "gpudirect");
  for (const auto& s : specs) {
    std::string network =
        fmt::format("{} x {:g}G {}", s.NumNics(), s.network.nic_raw_bw_bytes_per_s * 8 / 1e9,
                    s.network.transport);
    std::cout << fmt::format("{:<16} {:<16} {:>4} {:<10} {:<16} {}\n", s.name, s.device, s.gpus,
                             s.HasNvSwitch() ? "NVSwitch" : "NVLink", network,
                             s.network.gpudirect ? "yes" : "no");
  }
  return 0;
}

int ShowMatrix(const Cluster& cluster, bool json) {
  if (!json) {
    std::cout << TopoMatrixText(cluster);
    return 0;
  }
  const int gpus = cluster.GpusPerNode();
  nlohmann::json matrix = nlohmann::json::array();
  nlohmann::json numa = nlohmann::json::array();
  nlohmann::json lanes = nlohmann::json::array();
  for (int a = 0; a < gpus; ++a) {
    nlohmann::json row = nlohmann::json::array();
    for (int b = 0; b < gpus; ++b) row.push_back(cluster.ConnectionLabel(a, b));
    matrix.push_back(row);
    numa.push_back(cluster.SocketOf(a));
    lanes.push_back(cluster.NvLinkLanes(a));
  }
  PrintJson({{"instance", cluster.Instance().name},
             {"device", cluster.Instance().device},
             {"gpus", gpus},
             {"matrix", matrix},
             {"numa_affinity", numa},
             {"nvlink_lanes", lanes},
             {"rings", cluster.NodeRings(0)}});
  return 0;
}

int ShowSummary(const Cluster& cluster, bool json) {
  std::map<std::string, int> by_kind;
  for (const Link& l : cluster.Links()) by_kind[LinkKindName(l.kind)]++;
  const InstanceSpec& inst = cluster.Instance();
  const double bisection_raw = cluster.BisectionBytesPerS(true);
  const double bisection_eff = cluster.BisectionBytesPerS(false);
  const ClusterOptions& o = cluster.Options();
  // The network links carry the effective NIC numbers (overrides applied).
  double nic_raw = 0;
  double nic_eff = 0;
  TimeNs nic_latency = 0;
  for (const Link& l : cluster.Links()) {
    if (l.kind != LinkKind::kNetwork) continue;
    nic_raw = l.raw_bw_bytes_per_s;
    nic_eff = l.bw_bytes_per_s / l.raw_bw_bytes_per_s;
    nic_latency += l.latency_ns;  // one up + one down link = the one-way latency
    if (cluster.Vertices()[l.dst].kind == VertexKind::kNic) break;
  }
  std::vector<std::string> rings;
  for (const auto& r : cluster.NodeRings(0)) rings.push_back(RingText(r));
  if (json) {
    PrintJson({{"cluster", cluster.Spec()},
               {"instance", inst.name},
               {"device", inst.device},
               {"nodes", cluster.NumNodes()},
               {"gpus_per_node", cluster.GpusPerNode()},
               {"gpus", cluster.NumGpus()},
               {"vertices", cluster.Vertices().size()},
               {"links", cluster.Links().size()},
               {"links_by_kind", by_kind},
               {"nvlink_lanes_per_gpu", cluster.NvLinkLanes(0)},
               {"nics_per_node", inst.NumNics()},
               {"nic_bytes_per_s", nic_raw},
               {"nic_efficiency", nic_eff},
               {"nic_latency_ns", nic_latency},
               {"transport", inst.network.transport},
               {"gpudirect", inst.network.gpudirect},
               {"fabric", FabricKindName(o.fabric)},
               {"nodes_per_leaf", o.nodes_per_leaf},
               {"oversubscription", o.oversubscription},
               {"bisection_bytes_per_s", bisection_raw},
               {"bisection_effective_bytes_per_s", bisection_eff},
               {"node_rings", cluster.NodeRings(0)}});
    return 0;
  }
  std::string kinds;
  for (const auto& [kind, count] : by_kind) {
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", kind, count);
  }
  std::string fabric = o.fabric == FabricKind::kSwitch
                           ? std::string("one non-blocking switch")
                           : fmt::format("fat tree, {} nodes per leaf, oversubscription {}",
                                         o.nodes_per_leaf, o.oversubscription);
  std::cout << fmt::format("cluster        {}\n", cluster.Spec());
  std::cout << fmt::format("GPUs           {} ({} nodes x {} {})\n", cluster.NumGpus(),
                           cluster.NumNodes(), cluster.GpusPerNode(), inst.device);
  std::cout << fmt::format("vertices       {}\n", cluster.Vertices().size());
  std::cout << fmt::format("links          {} directed ({})\n", cluster.Links().size(), kinds);
  std::cout << fmt::format("NVLink / GPU   {} lanes{}\n", cluster.NvLinkLanes(0),
                           inst.HasNvSwitch() ? " into NVSwitch" : "");
  std::cout << fmt::format(
      "network        {} x {:g} Gbps {} per node, efficiency {:.2f}, {:g} us "
      "one way, {}\n",
      inst.NumNics(), nic_raw * 8 / 1e9, inst.network.transport, nic_eff, nic_latency / 1e3,
      inst.network.gpudirect ? "GPUDirect RDMA" : "staged through host");
  std::cout << fmt::format("fabric         {}\n", fabric);
  std::cout << fmt::format("bisection      {:.3f} GB/s line rate, {:.3f} GB/s achievable\n",
                           bisection_raw / 1e9, bisection_eff / 1e9);
  std::cout << fmt::format("in-node rings  {}\n", fmt::join(rings, " | "));
  return 0;
}

int ShowRoute(const Cluster& cluster, int src, int dst, bool json) {
  if (src < 0 || src >= cluster.NumGpus() || dst < 0 || dst >= cluster.NumGpus()) {
    ThrowInput("terasim topo route: GPUs must be in [0, {}) on {} (got {} and {})",
               cluster.NumGpus(), cluster.Spec(), src, dst);
  }
  std::vector<int> route = cluster.Route(src, dst);
  if (json) {
    nlohmann::json links = nlohmann::json::array();
    for (int id : route) {
      const Link& l = cluster.Links()[id];
      links.push_back({{"id", id},
                       {"name", l.name},
                       {"kind", LinkKindName(l.kind)},
                       {"lanes", l.lanes},
                       {"bw_bytes_per_s", l.bw_bytes_per_s},
                       {"raw_bw_bytes_per_s", l.raw_bw_bytes_per_s},
                       {"latency_ns", l.latency_ns}});
    }
    PrintJson({{"cluster", cluster.Spec()},
               {"src", src},
               {"dst", dst},
               {"links", links},
               {"latency_ns", cluster.RouteLatencyNs(src, dst)},
               {"bottleneck_bytes_per_s", cluster.RouteBottleneckBytesPerS(src, dst)}});
    return 0;
  }
  std::cout << fmt::format("{:>6}  {:<32} {:<8} {:>5} {:>10} {:>10}\n", "link", "name", "kind",
                           "lanes", "GB/s", "latency us");
  for (int id : route) {
    const Link& l = cluster.Links()[id];
    std::cout << fmt::format("{:>6}  {:<32} {:<8} {:>5} {:>10.3f} {:>10.3f}\n", id, l.name,
                             LinkKindName(l.kind), l.lanes, l.bw_bytes_per_s / 1e9,
                             l.latency_ns / 1e3);
  }
  std::cout << fmt::format("total latency {:.3f} us, bottleneck {:.3f} GB/s\n",
                           cluster.RouteLatencyNs(src, dst) / 1e3,
                           cluster.RouteBottleneckBytesPerS(src, dst) / 1e9);
  return 0;
}

}  // namespace

int RunTopo(const Args& args) {
  po::options_description options("terasim topo");
  options.add_options()                                                                    //
      ("json", po::bool_switch(), "print JSON")                                            //
      ("fabric", po::value<std::string>()->default_value("switch"), "switch | fat-tree")   //
      ("nodes-per-leaf", po::value<int>()->default_value(16), "fat tree: nodes per leaf")  //
      ("oversubscription", po::value<double>()->default_value(1.0),
       "fat tree: leaf down/up bandwidth ratio")  //
      ("nic-gbps", po::value<double>()->default_value(-1),
       "what-if NIC line rate, Gbit/s (-1: the instance's)")  //
      ("nic-latency-us", po::value<double>()->default_value(-1),
       "what-if one-way NIC-to-NIC latency, us (-1: the instance's)")  //
      ("nic-efficiency", po::value<double>()->default_value(-1),
       "what-if achieved fraction of NIC line rate (-1: the instance's)")                 //
      ("action", po::value<std::string>()->default_value("list"), "list | show | route")  //
      ("spec", po::value<std::string>()->default_value(""), "INSTANCE[:COUNT]")           //
      ("src", po::value<int>()->default_value(0), "route: source GPU")                    //
      ("dst", po::value<int>()->default_value(0), "route: destination GPU");
  po::positional_options_description positional;
  positional.add("action", 1).add("spec", 1).add("src", 1).add("dst", 1);
  po::variables_map vm;
  if (!Parse("topo", kUsage, options, positional, args, vm)) return 0;
  const bool json = vm["json"].as<bool>();
  const std::string action = vm["action"].as<std::string>();
  if (action == "list") return List(json);
  if (action != "show" && action != "route") {
    ThrowInput("terasim topo: unknown action '{}' (list, show, route)", action);
  }
  const std::string spec = vm["spec"].as<std::string>();
  if (spec.empty()) ThrowInput("terasim topo {}: needs INSTANCE[:COUNT]", action);
  ClusterOptions cluster_options;
  cluster_options.fabric = ParseFabricKind(vm["fabric"].as<std::string>());
  cluster_options.nodes_per_leaf = vm["nodes-per-leaf"].as<int>();
  cluster_options.oversubscription = vm["oversubscription"].as<double>();
  // -1 (the default) keeps the instance's value; any other negative number is an error, not
  // a silent "the instance's".
  for (const char* flag : {"nic-gbps", "nic-latency-us", "nic-efficiency"}) {
    const double value = vm[flag].as<double>();
    if (!vm[flag].defaulted() && !(value >= 0)) {
      ThrowInput("--{} {}: must be a finite number >= 0 (leave it out for the instance's)", flag,
                 value);
    }
  }
  cluster_options.nic_gbps = vm["nic-gbps"].as<double>();
  cluster_options.nic_latency_us = vm["nic-latency-us"].as<double>();
  cluster_options.nic_efficiency = vm["nic-efficiency"].as<double>();
  Cluster cluster = BuildCluster(spec, cluster_options);
  if (action == "route") return ShowRoute(cluster, vm["src"].as<int>(), vm["dst"].as<int>(), json);
  if (ParseClusterSpec(spec).explicit_count) return ShowSummary(cluster, json);
  return ShowMatrix(cluster, json);
}

}  // namespace terasim::cli

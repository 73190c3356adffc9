// terasim collective: an nccl-tests-style table (size, time, algbw, busbw, algorithm,
// protocol) of one collective on a cluster, from the NCCL model (models/nccl_model.h) with the
// communicator's own channels (sim/collective_plan.h NcclCommunicator).
#include <cmath>
#include <iostream>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/model_card.h"
#include "models/nccl_model.h"
#include "sim/cluster_topology.h"
#include "sim/collective_plan.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "topologies/topology.h"

namespace terasim::cli {
namespace {

Collective ParseOp(const std::string& text) {
  if (text == "allreduce") return Collective::kAllReduce;
  if (text == "allgather") return Collective::kAllGather;
  if (text == "reducescatter") return Collective::kReduceScatter;
  if (text == "broadcast") return Collective::kBroadcast;
  ThrowInput("--op {}: must be allreduce, allgather, reducescatter or broadcast", text);
}

}  // namespace

int RunCollective(const Args& args) {
  po::options_description options("terasim collective");
  options.add_options()  //
      ("op", po::value<std::string>()->default_value("allreduce"),
       "allreduce|allgather|reducescatter|broadcast")                                          //
      ("cluster", po::value<std::string>()->default_value("p3.16xlarge:2"), "INSTANCE:COUNT")  //
      ("gpus", po::value<int>()->default_value(0),
       "ranks (0: every GPU); up to one instance's GPUs share one node, more fill whole nodes")  //
      ("min-bytes", po::value<int64_t>()->default_value(8), "smallest buffer, bytes")            //
      ("max-bytes", po::value<int64_t>()->default_value(int64_t{1} << 30),
       "largest buffer, bytes")                                                            //
      ("step-factor", po::value<int>()->default_value(2), "size multiplier between rows")  //
      ("algorithm", po::value<std::string>()->default_value("auto"),
       "auto (NCCL's choice of ring or tree), ring, tree or hierarchical")  //
      ("protocol", po::value<std::string>()->default_value("auto"),
       "auto (the fastest), LL, LL128 or Simple")  //
      ("nccl", po::value<std::string>()->default_value("models/data/nccl/nccl.json"),
       "NCCL tuning constants and per-instance channels (relative: under the data root)")  //
      ("json", po::bool_switch(), "print JSON");
  po::variables_map vm;
  if (!Parse("collective",
             "[--op OP] [--cluster C] [--gpus N] [--min-bytes B] [--max-bytes B] "
             "[--algorithm A] [--protocol P] [--json]",
             options, {}, args, vm)) {
    return 0;
  }
  const Collective op = ParseOp(vm["op"].as<std::string>());
  const ClusterSpec spec = ParseClusterSpec(vm["cluster"].as<std::string>());
  const InstanceSpec instance = LoadInstanceSpec(spec.instance);
  const int total = spec.nodes * instance.gpus;
  int gpus = vm["gpus"].as<int>();
  if (gpus == 0) gpus = total;
  if (gpus < 1 || gpus > total) {
    ThrowInput("--gpus {}: must be in [1, {}] for {}", gpus, total,
               vm["cluster"].as<std::string>());
  }
  if (gpus > instance.gpus && gpus % instance.gpus != 0) {
    ThrowInput("--gpus {}: more than one {} must fill whole nodes of {} GPUs", gpus, instance.name,
               instance.gpus);
  }
  const int per_node = std::min(gpus, instance.gpus);
  const int nodes = gpus / per_node;
  const int64_t min_bytes = vm["min-bytes"].as<int64_t>();
  const int64_t max_bytes = vm["max-bytes"].as<int64_t>();
  const int factor = vm["step-factor"].as<int>();
  if (min_bytes < 1 || max_bytes < min_bytes) {
    ThrowInput("--min-bytes {} --max-bytes {}: need 1 <= min <= max", min_bytes, max_bytes);
  }
  if (factor < 2) ThrowInput("--step-factor {}: must be >= 2", factor);
  const std::string algorithm = vm["algorithm"].as<std::string>();
  const std::string protocol = vm["protocol"].as<std::string>();
  if (algorithm != "auto" && algorithm != "ring" && algorithm != "tree" &&
      algorithm != "hierarchical") {
    ThrowInput("--algorithm {}: must be auto, ring, tree or hierarchical", algorithm);
  }
  if (protocol != "auto" && protocol != "LL" && protocol != "LL128" && protocol != "Simple") {
    ThrowInput("--protocol {}: must be auto, LL, LL128 or Simple", protocol);
  }
  if (protocol != "auto" && (algorithm == "auto" || algorithm == "hierarchical")) {
    ThrowInput("--protocol {}: needs --algorithm ring or tree", protocol);
  }

  std::string nccl_path = vm["nccl"].as<std::string>();
  if (!nccl_path.empty() && nccl_path[0] != '/') nccl_path = DataRoot() + "/" + nccl_path;
  const double net_bw =
      instance.NumNics() * instance.network.nic_raw_bw_bytes_per_s * instance.network.efficiency;
  const double net_latency_us = static_cast<double>(instance.network.latency_ns) / 1e3;
  // The communicator's own channels, as the simulator plans it (sim/collective_plan.h
  // NcclCommunicator): the first `per_node` GPUs of each of `nodes` instances.
  CollectiveOptions collectives = LoadCollectiveOptions(DefaultCollectiveOptionsPath());
  collectives.algorithms = CollectiveAlgorithms::kNccl;
  collectives.nccl = LoadNcclTable(nccl_path);
  const Cluster cluster = BuildCluster(instance, nodes);
  const ClusterTopology topology(cluster);
  std::vector<int> ranks;
  for (int node = 0; node < nodes; ++node) {
    for (int local = 0; local < per_node; ++local) ranks.push_back(cluster.GpuAt(node, local));
  }
  const std::optional<NcclSystem> communicator = NcclCommunicator(ranks, topology, collectives);
  const NcclSystem system = communicator
                                ? *communicator
                                : LoadNcclSystem(nccl_path, instance.name, nodes, per_node, net_bw,
                                                 net_latency_us, instance.network.gpudirect);

  auto estimate = [&](Bytes n) {
    if (algorithm == "auto") return NcclBestTime(system, op, n);
    const NcclAlgorithm a = algorithm == "ring"   ? NcclAlgorithm::kRing
                            : algorithm == "tree" ? NcclAlgorithm::kTree
                                                  : NcclAlgorithm::kHierarchical;
    if (protocol == "auto") return NcclAlgorithmTime(system, op, n, a);
    const NcclProtocol p = protocol == "LL"      ? NcclProtocol::kLL
                           : protocol == "LL128" ? NcclProtocol::kLL128
                                                 : NcclProtocol::kSimple;
    return NcclPairTime(system, op, n, a, p);
  };

  const double bus_factor = BusBandwidthFactor(op, gpus);
  nlohmann::json rows = nlohmann::json::array();
  std::string table;
  for (int64_t n = min_bytes; n <= max_bytes; n *= factor) {
    const NcclEstimate e = estimate(n);
    if (!e.valid) {
      ThrowInput("--algorithm {} --protocol {}: NCCL does not run {} that way on {}", algorithm,
                 protocol, CollectiveName(op), vm["cluster"].as<std::string>());
    }
    const double algbw = e.time_s > 0 ? static_cast<double>(n) / e.time_s : 0;
    const double busbw = algbw * bus_factor;
    const char* proto =
        e.algorithm == NcclAlgorithm::kHierarchical ? "-" : NcclProtocolName(e.protocol);
    rows.push_back({{"bytes", n},
                    {"time_us", e.time_s * 1e6},
                    {"algbw_gbytes_per_s", algbw / 1e9},
                    {"busbw_gbytes_per_s", busbw / 1e9},
                    {"algorithm", NcclAlgorithmName(e.algorithm)},
                    {"protocol", proto}});
    table += fmt::format("{:>14} {:>12} {:>12.2f} {:>12.3f} {:>12.3f}  {:<13} {}\n", n, n / 2,
                         e.time_s * 1e6, algbw / 1e9, busbw / 1e9, NcclAlgorithmName(e.algorithm),
                         proto);
    if (n > max_bytes / factor) break;
  }
  if (vm["json"].as<bool>()) {
    PrintJson({{"op", CollectiveName(op)},
               {"cluster", vm["cluster"].as<std::string>()},
               {"ranks", gpus},
               {"nodes", nodes},
               {"gpus_per_node", per_node},
               {"bus_factor", bus_factor},
               {"rows", rows}});
    return 0;
  }
  std::cout << fmt::format(
      "# terasim collective: {} on {}: {} ranks ({} node{} x {} GPUs), NCCL "
      "model ({})\n",
      CollectiveName(op), vm["cluster"].as<std::string>(), gpus, nodes, nodes == 1 ? "" : "s",
      per_node, nccl_path);
  std::cout << fmt::format(
      "# {} channels x {:.1f} GB/s ({}; inside a node over {}); network: {} NIC x "
      "{:.3g} GB/s x {:.2f} = {:.2f} GB/s per node, {:.1f} us, {}{}\n",
      system.channels, system.channel_bw_bytes_per_s / 1e9,
      nodes == 1 ? "the ranks' NVLink rings" : "per NIC across nodes",
      system.intra_nvlink ? "NVLink" : "PCI", instance.NumNics(),
      instance.network.nic_raw_bw_bytes_per_s / 1e9, instance.network.efficiency, net_bw / 1e9,
      net_latency_us, instance.network.transport,
      instance.network.gpudirect ? ", GPUDirect RDMA" : ", no GPUDirect");
  std::cout << fmt::format("# busbw = algbw x {:.4f} (nccl-tests' factor for {} ranks)\n",
                           bus_factor, gpus);
  std::cout << fmt::format("{:>14} {:>12} {:>12} {:>12} {:>12}  {:<13} {}\n", "size(B)",
                           "count(half)", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "algorithm",
                           "protocol");
  std::cout << table;
  return 0;
}

}  // namespace terasim::cli

#include "topologies/topo_matrix.h"

#include <set>

#include <fmt/format.h>

namespace terasim {

std::string TopoMatrixText(const Cluster& cluster) {
  const int gpus = cluster.GpusPerNode();
  std::string out = fmt::format("{:<8}", "");
  for (int b = 0; b < gpus; ++b) out += fmt::format("{:<8}", fmt::format("GPU{}", b));
  out += "NUMA Affinity\n";
  std::set<std::string> used;
  for (int a = 0; a < gpus; ++a) {
    out += fmt::format("{:<8}", fmt::format("GPU{}", a));
    for (int b = 0; b < gpus; ++b) {
      std::string label = cluster.ConnectionLabel(a, b);
      used.insert(label.substr(0, 2) == "NV" ? "NV#" : label);
      out += fmt::format("{:<8}", a == b ? " X" : label);
    }
    out += fmt::format("{}\n", cluster.SocketOf(a));
  }
  out += "\nLegend:\n\n";
  const std::pair<const char*, const char*> kLegend[] = {
      {"X", "Self"},
      {"SYS", "through PCIe and the interconnect between CPU sockets (QPI/UPI)"},
      {"PHB", "through PCIe and the CPU's host bridge (same socket)"},
      {"PIX", "through one PCIe switch"},
      {"NV#", "through # NVLinks (directly, or into the NVSwitch fabric)"},
  };
  for (const auto& [label, meaning] : kLegend) {
    if (used.count(label)) out += fmt::format("  {:<4} = {}\n", label, meaning);
  }
  const InstanceSpec& inst = cluster.Instance();
  out += "\n";
  for (size_t k = inst.gpus, nic = 0; k < inst.components.size(); ++k) {
    if (inst.components[k].kind != VertexKind::kNic) continue;
    std::string users;
    for (int g = 0; g < gpus; ++g) {
      if (cluster.Vertices()[cluster.NicOf(g)].local_index == static_cast<int>(k)) {
        users += (users.empty() ? "" : ",") + std::to_string(g);
      }
    }
    out += fmt::format("NIC{}: {} Gbps {}, {}; used by GPUs {}\n", nic++,
                       inst.network.nic_raw_bw_bytes_per_s * 8 / 1e9, inst.network.transport,
                       inst.network.gpudirect ? "GPUDirect RDMA" : "staged through host memory",
                       users);
  }
  return out;
}

}  // namespace terasim

#include "topologies/cluster_options.h"

#include <cmath>
#include <limits>

#include "models/errors.h"

namespace terasim {

const char* FabricKindName(FabricKind kind) {
  return kind == FabricKind::kFatTree ? "fat-tree" : "switch";
}

FabricKind ParseFabricKind(const std::string& text) {
  if (text == "switch") return FabricKind::kSwitch;
  if (text == "fat-tree") return FabricKind::kFatTree;
  ThrowInput("--fabric: unknown fabric '{}' (known: switch, fat-tree)", text);
}

ClusterSpec ParseClusterSpec(const std::string& spec) {
  ClusterSpec out;
  size_t colon = spec.rfind(':');
  out.instance = colon == std::string::npos ? spec : spec.substr(0, colon);
  if (out.instance.empty()) {
    ThrowInput("--cluster: '{}': missing the instance type (INSTANCE:COUNT, e.g. p3.16xlarge:48)",
               spec);
  }
  if (colon == std::string::npos) return out;
  std::string count = spec.substr(colon + 1);
  if (count.empty() || count.size() > 6 ||
      count.find_first_not_of("0123456789") != std::string::npos) {
    ThrowInput("--cluster: '{}': node count '{}' is not a positive integer", spec, count);
  }
  long value = std::stol(count);
  if (value < 1 || value > 65536) {
    ThrowInput("--cluster: '{}': node count must be in [1, 65536] (got {})", spec, value);
  }
  out.nodes = static_cast<int>(value);
  out.explicit_count = true;
  return out;
}

void ValidateClusterOptions(const ClusterOptions& options) {
  if (options.nodes_per_leaf < 1) {
    ThrowInput("--nodes-per-leaf: must be >= 1 (got {})", options.nodes_per_leaf);
  }
  if (!std::isfinite(options.oversubscription) || options.oversubscription < 1) {
    ThrowInput("--oversubscription: must be >= 1 (got {})", options.oversubscription);
  }
  if (!std::isfinite(options.nic_gbps) || options.nic_gbps == 0) {
    ThrowInput("--nic-gbps: must be > 0 (got {})", options.nic_gbps);
  }
  if (!std::isfinite(options.nic_latency_us)) {
    ThrowInput("--nic-latency-us: must be >= 0 (got {})", options.nic_latency_us);
  }
  if (!std::isfinite(options.nic_efficiency) || options.nic_efficiency == 0 ||
      options.nic_efficiency > 1) {
    ThrowInput("--nic-efficiency: must be in (0, 1] (got {})", options.nic_efficiency);
  }
}

}  // namespace terasim

#include "sim/cluster_topology.h"

namespace terasim {

ClusterTopology::ClusterTopology(const Cluster& cluster) : cluster_(cluster) {
  links_.reserve(cluster.Links().size());
  for (const Link& link : cluster.Links()) {
    links_.push_back(
        NetLink{link.bw_bytes_per_s, link.latency_ns, link.name + " " + LinkKindName(link.kind)});
  }
}

int ClusterTopology::NetworkLinksPerNode() const {
  const ClusterOptions& options = cluster_.Options();
  const bool one_switch =
      options.fabric == FabricKind::kSwitch || cluster_.NumNodes() <= options.nodes_per_leaf;
  return one_switch ? 2 * cluster_.Instance().NumNics() : 0;
}

}  // namespace terasim

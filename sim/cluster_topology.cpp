#include "sim/cluster_topology.h"

namespace terasim {

ClusterTopology::ClusterTopology(const Cluster& cluster) : cluster_(cluster) {
  links_.reserve(cluster.Links().size());
  for (const Link& link : cluster.Links()) {
    links_.push_back(
        NetLink{link.bw_bytes_per_s, link.latency_ns, link.name + " " + LinkKindName(link.kind)});
  }
}

}  // namespace terasim

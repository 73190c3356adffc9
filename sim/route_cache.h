// RouteCache: memoized NetworkTopology::Route, plus the per-route sums the simulator asks for
// again and again (total latency, narrowest bandwidth). Borrows the topology, which must
// outlive it. Not thread-safe.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "models/units.h"
#include "sim/network_topology.h"

namespace terasim {

class RouteCache {
 public:
  struct Entry {
    std::vector<int> links;
    TimeNs latency_ns = 0;     // sum over the links
    double bottleneck_bw = 0;  // narrowest link (bytes/s); 0 for an empty route
    bool filled = false;
  };

  explicit RouteCache(const NetworkTopology& topology);

  // The route from src_gpu to dst_gpu (both in [0, NumGpus())).
  const Entry& Get(int src_gpu, int dst_gpu);
  const NetworkTopology& Topology() const { return topology_; }

 private:
  const NetworkTopology& topology_;
  int num_gpus_;
  // Keyed by src * num_gpus + dst, filled on first use: a table of every pair would take
  // GPUs^2 entries (450 MB on 3072 GPUs) where a replay uses a few per GPU. Node-based, so
  // references stay valid as it grows.
  std::unordered_map<int64_t, Entry> entries_;
};

}  // namespace terasim

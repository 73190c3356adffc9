// RouteCache: memoized NetworkTopology::Route, plus the per-route sums the simulator asks for
// again and again (total latency, narrowest bandwidth). Borrows the topology, which must
// outlive it. Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
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

  // The route from src_gpu to dst_gpu (both in [0, NumGpus())). The reference stays valid for
  // the cache's lifetime.
  const Entry& Get(int src_gpu, int dst_gpu);
  const NetworkTopology& Topology() const { return topology_; }
  // Routes computed so far.
  int Size() const { return static_cast<int>(entries_.size()); }

 private:
  // An open-addressing slot: the pair src * num_gpus + dst (-1 when empty) and its entry.
  struct Slot {
    int64_t pair = -1;
    int32_t entry = 0;
  };
  const Entry& Fill(int64_t pair, int src_gpu, int dst_gpu);
  void Grow();

  const NetworkTopology& topology_;
  int num_gpus_;
  // Filled on first use: a table of every pair would take GPUs^2 entries (450 MB on 3072 GPUs)
  // where a replay uses a few per GPU. Slots are a power of 2, at most half full; entries sit
  // in a deque, so references stay valid as it grows.
  std::vector<Slot> slots_;
  std::deque<Entry> entries_;
};

}  // namespace terasim

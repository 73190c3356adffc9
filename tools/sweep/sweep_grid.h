// SweepGrid: the points of a SweepSpec in a fixed order (the same in every process, so shards
// and MPI ranks agree on indices), each with its canonical configuration and config_key, and
// ClusterCache, which builds a point's cluster when a worker first needs it.
//
// Building the grid loads each instance type once (its GPU count decides which points fit)
// but builds no cluster: a sweep of 100 k NIC rates holds 100 k small points, and the
// clusters of the points in flight.
//
// Thread safety: a SweepGrid is immutable once built; ClusterCache is thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/device_spec.h"
#include "sim/cluster_topology.h"
#include "tools/sweep/sweep_spec.h"
#include "topologies/cluster.h"

namespace terasim {

// One grid point.
struct SweepPoint {
  std::string model, instance;
  int count = 1, batch = 1;
  double nic_gbps = 0, nic_latency_us = -1;
  StrategyPoint strategy;
  nlohmann::json config;
  std::string config_key;  // "sweep " + config.dump()
};

struct SweepGrid {
  std::vector<SweepPoint> points;
  int64_t left_out = 0;  // points whose cluster has too few GPUs or whose batch does not split
  std::map<std::string, DeviceSpec> devices;  // instance type -> its GPU
};

// The grid of `spec`, in the order models, instances, counts, NIC rates, latencies, batches,
// strategies (the last varies fastest). Throws InputError for an unknown instance type or
// device.
SweepGrid BuildSweepGrid(const SweepSpec& spec);

// A point's cluster and its topology.
struct PreparedCluster {
  Cluster cluster;
  std::unique_ptr<ClusterTopology> topology;  // borrows `cluster`: heap-held so moves keep it
};

class ClusterCache {
 public:
  // Keeps at most `capacity` (>= 1) clusters, dropping the oldest built.
  explicit ClusterCache(size_t capacity) : capacity_(capacity) {}
  // The cluster of `point`, built on first use. Shared: a worker keeps the one it simulates
  // on while another worker's miss drops it from the cache. Throws what BuildCluster throws.
  std::shared_ptr<const PreparedCluster> Get(const SweepPoint& point);
  // Clusters built so far (for tests: how lazy the sweep is).
  size_t Built() const;

 private:
  using Key = std::tuple<std::string, int, double, double>;
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::map<Key, std::shared_ptr<const PreparedCluster>> clusters_;
  std::vector<Key> order_;  // oldest first
  size_t built_ = 0;
};

}  // namespace terasim

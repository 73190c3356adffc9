#include "tools/sweep/sweep_grid.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/errors.h"
#include "topologies/instance_spec.h"
#include "topologies/topology.h"

namespace terasim {

SweepGrid BuildSweepGrid(const SweepSpec& spec) {
  SweepGrid grid;
  std::map<std::string, int> gpus_per_instance;
  for (const std::string& instance : spec.instances) {
    const InstanceSpec is = LoadInstanceSpec(instance);
    gpus_per_instance[instance] = is.gpus;
    grid.devices.emplace(instance, LoadDeviceSpec(is.device));
  }
  for (const std::string& model : spec.models) {
    for (const std::string& instance : spec.instances) {
      for (int count : spec.counts) {
        const int64_t gpus = static_cast<int64_t>(gpus_per_instance.at(instance)) * count;
        for (double gbps : spec.nic_gbps) {
          for (double latency : spec.nic_latency_us) {
            for (int batch : spec.batches) {
              for (const StrategyPoint& s : spec.strategies) {
                const int64_t devices = static_cast<int64_t>(s.dp) * s.pp * s.tp;
                const int64_t split = static_cast<int64_t>(s.dp) * s.microbatch_size;
                if (devices > gpus || batch % split != 0) {
                  ++grid.left_out;
                  continue;
                }
                SweepPoint p;
                p.model = model;
                p.instance = instance;
                p.count = count;
                p.batch = batch;
                p.nic_gbps = gbps;
                p.nic_latency_us = latency;
                p.strategy = s;
                p.config = {{"model", model},
                            {"cluster", fmt::format("{}:{}", instance, count)},
                            {"nic_gbps", gbps},
                            {"nic_latency_us", latency},
                            {"batch", batch},
                            {"strategy", s.strategy},
                            {"dp", s.dp},
                            {"pp", s.pp},
                            {"tp", s.tp},
                            {"microbatch_size", s.microbatch_size},
                            {"virtual_stages", s.virtual_stages},
                            {"slices", s.slices},
                            {"order", s.order},
                            {"boundary", s.boundary},
                            {"network", spec.network},
                            {"calib", spec.calib}};
                p.config_key = "sweep " + p.config.dump();
                grid.points.push_back(std::move(p));
              }
            }
          }
        }
      }
    }
  }
  return grid;
}

std::shared_ptr<const PreparedCluster> ClusterCache::Get(const SweepPoint& point) {
  const Key key(point.instance, point.count, point.nic_gbps, point.nic_latency_us);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = clusters_.find(key);
    if (it != clusters_.end()) return it->second;
  }
  // Built outside the lock: workers build different clusters at once (two may build the same
  // one; the first stored wins).
  ClusterOptions o;
  if (point.nic_gbps > 0) o.nic_gbps = point.nic_gbps;
  if (point.nic_latency_us >= 0) o.nic_latency_us = point.nic_latency_us;
  auto built = std::make_shared<PreparedCluster>();
  built->cluster = BuildCluster(fmt::format("{}:{}", point.instance, point.count), o);
  built->topology = std::make_unique<ClusterTopology>(built->cluster);
  std::lock_guard<std::mutex> lock(mutex_);
  ++built_;
  auto [it, fresh] = clusters_.emplace(key, std::move(built));
  if (fresh) {
    order_.push_back(key);
    if (order_.size() > std::max<size_t>(capacity_, 1)) {
      clusters_.erase(order_.front());
      order_.erase(order_.begin());
    }
  }
  return it->second;
}

size_t ClusterCache::Built() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return built_;
}

}  // namespace terasim

#include "sim/plan_cache.h"

namespace terasim {

PlanCache::PlanCache(const NetworkTopology& topology, const CollectiveOptions& options)
    : topology_(topology), options_(options), routes_(topology) {}

bool PlanCache::Serves(const NetworkTopology& topology, const CollectiveOptions& options) const {
  return &topology == &topology_ && options.algorithms == options_.algorithms &&
         options.nccl == options_.nccl &&
         options.bidirectional_rings == options_.bidirectional_rings &&
         options.broadcast_chunk_bytes == options_.broadcast_chunk_bytes &&
         options.nccl_channels_per_nic == options_.nccl_channels_per_nic;
}

int PlanCache::GpuSetOf(const std::vector<int>& gpus) {
  const auto known = gpu_sets_.find(gpus);
  if (known != gpu_sets_.end()) return known->second;
  // Computed before anything is stored: a throw leaves the cache as it was.
  std::optional<NcclSystem> system;
  const std::optional<std::pair<int, int>> shape = NcclShapeOf(gpus, topology_, options_);
  if (shape) {
    auto it = shapes_.find(*shape);
    if (it == shapes_.end()) {
      NcclSystem from = NcclShapeSystem(shape->first, shape->second, topology_, options_);
      it = shapes_.emplace(*shape, std::move(from)).first;
    }
    system = NcclCommunicatorOf(gpus, it->second, topology_, options_);
  }
  systems_.push_back(std::move(system));
  gpu_sets_.emplace(gpus, static_cast<int>(systems_.size()) - 1);
  return static_cast<int>(systems_.size()) - 1;
}

const std::optional<NcclSystem>& PlanCache::Communicator(const std::vector<int>& gpus) {
  return systems_[GpuSetOf(gpus)];
}

const CollectivePlan& PlanCache::Plan(OpKind kind, const std::vector<int>& gpus, int root_gpu,
                                      Bytes bytes) {
  const int set = GpuSetOf(gpus);
  const auto key = std::make_tuple(set, static_cast<int>(kind), bytes, root_gpu);
  const auto known = plan_of_.find(key);
  if (known != plan_of_.end()) return plans_[known->second];
  plans_.push_back(PlanCollective(kind, gpus, root_gpu, bytes, topology_, options_, systems_[set]));
  plan_of_.emplace(key, static_cast<int>(plans_.size()) - 1);
  return plans_.back();
}

}  // namespace terasim

#include "sim/plan_cache.h"

#include <algorithm>

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
  // The communicator is computed when first asked for (SystemOf): a plan shifted from node 0's
  // needs none.
  systems_.emplace_back();
  system_known_.push_back(0);
  gpu_sets_.emplace(gpus, static_cast<int>(systems_.size()) - 1);
  return static_cast<int>(systems_.size()) - 1;
}

const std::optional<NcclSystem>& PlanCache::SystemOf(int set, const std::vector<int>& gpus) {
  if (system_known_[set]) return systems_[set];
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
  systems_[set] = std::move(system);
  system_known_[set] = 1;
  return systems_[set];
}

const std::optional<NcclSystem>& PlanCache::Communicator(const std::vector<int>& gpus) {
  return SystemOf(GpuSetOf(gpus), gpus);
}

int PlanCache::ShiftedNode(const std::vector<int>& gpus, int root_gpu) {
  const int links_per_node = topology_.LinksPerNode();
  const int nodes = topology_.NumNodes();
  if (links_per_node <= 0 || nodes <= 1 || gpus.empty()) return 0;
  const int per_node = topology_.NumGpus() / nodes;
  const int num_gpus = topology_.NumGpus();
  int low = nodes, high = -1;
  for (int gpu : gpus) {
    if (gpu < 0 || gpu >= num_gpus) return 0;
    low = std::min(low, gpu / per_node);
    high = std::max(high, gpu / per_node);
  }
  if (root_gpu >= 0) {
    if (root_gpu >= num_gpus) return 0;
    low = std::min(low, root_gpu / per_node);
    high = std::max(high, root_gpu / per_node);
  }
  // Across nodes only where the routes between nodes shift too.
  if (low == 0 || (high > low && topology_.NetworkLinksPerNode() <= 0)) return 0;
  // The group's nodes and their images down there (whose plan it takes).
  for (int gpu : gpus) {
    if (!NodeLikeNodeZero(gpu / per_node) || !NodeLikeNodeZero(gpu / per_node - low)) return 0;
  }
  return low;
}

bool PlanCache::NodeLikeNodeZero(int node) {
  // The declaration's bandwidths and latencies, checked once per node (a link made slower on
  // one node, as a what-if, must not take node 0's plan).
  if (node_alike_.empty()) node_alike_.assign(topology_.NumNodes(), -1);
  if (node_alike_[node] < 0) {
    const std::vector<NetLink>& links = topology_.Links();
    const int links_per_node = topology_.LinksPerNode();
    const int network_per_node = std::max(0, topology_.NetworkLinksPerNode());
    const int network_begin = topology_.NumNodes() * links_per_node;
    const auto alike = [&](int mine, int zero) {
      return mine < static_cast<int>(links.size()) &&
             links[mine].bw_bytes_per_s == links[zero].bw_bytes_per_s &&
             links[mine].latency_ns == links[zero].latency_ns;
    };
    bool all = true;
    for (int l = 0; l < links_per_node && all; ++l) all = alike(node * links_per_node + l, l);
    for (int l = 0; l < network_per_node && all; ++l) {
      all = alike(network_begin + node * network_per_node + l, network_begin + l);
    }
    node_alike_[node] = all ? 1 : 0;
  }
  return node_alike_[node] == 1;
}

const CollectivePlan& PlanCache::Plan(OpKind kind, const std::vector<int>& gpus, int root_gpu,
                                      Bytes bytes) {
  const int set = GpuSetOf(gpus);
  const auto key = std::make_tuple(set, static_cast<int>(kind), bytes, root_gpu);
  const auto known = plan_of_.find(key);
  if (known != plan_of_.end()) return plans_[known->second];
  // A group on nodes n.. (n > 0) of a topology whose nodes are node 0 shifted: the plan of its
  // image n nodes down, every GPU and link shifted up (PlanCollective reads the group's nodes'
  // rings, routes and links, the nodes' order and the instance alone, and orders GPUs and links
  // by id: the shift keeps every order). One plan per class of groups, not per tp group.
  if (const int node = ShiftedNode(gpus, root_gpu); node > 0) {
    const int gpu_shift = node * (topology_.NumGpus() / topology_.NumNodes());
    const int num_links = static_cast<int>(topology_.Links().size());
    const int network_begin = topology_.NumNodes() * topology_.LinksPerNode();
    const int link_shift = node * topology_.LinksPerNode();
    const int network_shift = node * std::max(0, topology_.NetworkLinksPerNode());
    const auto shift_link = [&](int link) {
      return link < network_begin ? link + link_shift : link + network_shift;
    };
    std::vector<int> base_gpus = gpus;
    for (int& gpu : base_gpus) gpu -= gpu_shift;
    const CollectivePlan& base =
        Plan(kind, base_gpus, root_gpu >= 0 ? root_gpu - gpu_shift : root_gpu, bytes);
    // Node 0's links stay in-node links, network links (declared shifted) in the network.
    bool in_range = true;
    for (const CollectivePhase& phase : base.phases) {
      for (const RingRun& run : phase.runs) {
        for (int link : run.links) {
          in_range =
              in_range &&
              (link < network_begin ? shift_link(link) < network_begin : network_shift > 0) &&
              shift_link(link) < num_links;
        }
      }
    }
    if (in_range) {
      CollectivePlan shifted = base;
      for (CollectivePhase& phase : shifted.phases) {
        for (RingRun& run : phase.runs) {
          for (int& gpu : run.gpus) gpu += gpu_shift;
          for (int& link : run.links) link = shift_link(link);
        }
      }
      plans_.push_back(std::move(shifted));
      ++shifted_plans_;
      plan_of_.emplace(key, static_cast<int>(plans_.size()) - 1);
      return plans_.back();
    }
  }
  plans_.push_back(
      PlanCollective(kind, gpus, root_gpu, bytes, topology_, options_, SystemOf(set, gpus)));
  plan_of_.emplace(key, static_cast<int>(plans_.size()) - 1);
  return plans_.back();
}

}  // namespace terasim

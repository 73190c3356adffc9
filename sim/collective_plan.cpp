#include "sim/collective_plan.h"

#include <algorithm>
#include <map>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/model_card.h"

namespace terasim {
namespace {

// Bandwidth of the narrowest link on the ring's hops.
double RingBottleneck(const std::vector<int>& ring, bool closed, const NetworkTopology& topology) {
  double bottleneck = 0;
  const int p = static_cast<int>(ring.size());
  for (int i = 0; i + (closed ? 0 : 1) < p; ++i) {
    for (int link : topology.Route(ring[i], ring[(i + 1) % p])) {
      const double bw = topology.Links()[link].bw_bytes_per_s;
      if (bottleneck == 0 || bw < bottleneck) bottleneck = bw;
    }
  }
  return bottleneck;
}

// The ring rotated so that its smallest GPU comes first (to drop duplicates).
std::vector<int> Canonical(std::vector<int> ring) {
  std::rotate(ring.begin(), std::min_element(ring.begin(), ring.end()), ring.end());
  return ring;
}

// Rings over `gpus` with the share of the data each carries (weights sum to 1).
std::vector<std::pair<std::vector<int>, double>> WeightedRings(const std::vector<int>& gpus,
                                                               const NetworkTopology& topology,
                                                               const CollectiveOptions& options) {
  const int node = topology.NodeOf(gpus[0]);
  bool one_node = true;
  for (int g : gpus) one_node = one_node && topology.NodeOf(g) == node;
  std::vector<std::vector<int>> rings;
  if (one_node) {
    for (const std::vector<int>& node_ring : topology.NodeRings(node)) {
      std::vector<int> filtered;
      for (int g : node_ring) {
        if (std::find(gpus.begin(), gpus.end(), g) != gpus.end()) filtered.push_back(g);
      }
      if (filtered.size() != gpus.size()) continue;
      bool seen = false;
      for (const auto& r : rings) seen = seen || Canonical(r) == Canonical(filtered);
      if (!seen) rings.push_back(filtered);
    }
  }
  if (rings.empty()) rings.push_back(gpus);
  if (one_node && options.bidirectional_rings && gpus.size() > 2) {
    const size_t forward = rings.size();
    for (size_t i = 0; i < forward; ++i) rings.emplace_back(rings[i].rbegin(), rings[i].rend());
  }
  std::vector<double> bw(rings.size());
  double total = 0;
  for (size_t i = 0; i < rings.size(); ++i) {
    bw[i] = RingBottleneck(rings[i], true, topology);
    total += bw[i];
  }
  std::vector<std::pair<std::vector<int>, double>> weighted;
  for (size_t i = 0; i < rings.size(); ++i) {
    weighted.emplace_back(rings[i], total > 0 ? bw[i] / total : 1.0 / rings.size());
  }
  return weighted;
}

// Adds to `phase` a ring algorithm of `steps` steps over `gpus`: the data (`bytes` per rank) is
// split over the rings of `gpus` and each step moves share / p bytes per hop.
void AddRings(const std::vector<int>& gpus, double bytes, int steps,
              const NetworkTopology& topology, const CollectiveOptions& options,
              CollectivePhase& phase) {
  const int p = static_cast<int>(gpus.size());
  for (auto& [ring, weight] : WeightedRings(gpus, topology, options)) {
    RingRun run;
    run.gpus = ring;
    run.closed = true;
    run.steps = steps;
    run.bytes_per_flow = bytes * weight / p;
    phase.runs.push_back(std::move(run));
  }
}

}  // namespace

CollectiveOptions LoadCollectiveOptions(const std::string& path) {
  const nlohmann::json json = ParseJson(ReadTextFile(path), path);
  JsonReader reader(json, path);
  reader.RejectUnknown({"bidirectional_rings", "broadcast_chunk_bytes", "step_by_step", "source"});
  CollectiveOptions options;
  options.bidirectional_rings = reader.RequireBool("bidirectional_rings");
  options.broadcast_chunk_bytes = reader.RequireInt("broadcast_chunk_bytes", 1);
  if (reader.Has("step_by_step")) options.step_by_step = reader.RequireBool("step_by_step");
  return options;
}

std::string DefaultCollectiveOptionsPath() { return DataRoot() + "/sim/data/collectives.json"; }

namespace {

CollectivePlan PlanRuns(OpKind kind, const std::vector<int>& gpus, int root_gpu, Bytes bytes,
                        const NetworkTopology& topology, const CollectiveOptions& options) {
  TERASIM_CHECK(IsCollective(kind), "{} is not a collective", OpKindName(kind));
  CollectivePlan plan;
  const int p = static_cast<int>(gpus.size());
  if (p <= 1 || bytes <= 0) return plan;
  const double n = static_cast<double>(bytes);

  if (kind == OpKind::kBroadcast) {
    std::vector<int> chain = WeightedRings(gpus, topology, options).front().first;
    auto root = std::find(chain.begin(), chain.end(), root_gpu);
    if (root != chain.end()) std::rotate(chain.begin(), root, chain.end());
    RingRun run;
    run.gpus = chain;
    run.closed = false;
    run.chunks = static_cast<int>(std::max<Bytes>(
        1, (bytes + options.broadcast_chunk_bytes - 1) / options.broadcast_chunk_bytes));
    run.steps = run.chunks + p - 2;
    run.bytes_per_flow = n / run.chunks;
    plan.phases.push_back(CollectivePhase{{run}});
    return plan;
  }
  if (kind == OpKind::kAllGather || kind == OpKind::kReduceScatter) {
    CollectivePhase phase;
    AddRings(gpus, n, p - 1, topology, options, phase);
    plan.phases.push_back(std::move(phase));
    return plan;
  }

  // ALLREDUCE: members per node, nodes in order of first appearance.
  std::vector<int> node_order;
  std::map<int, std::vector<int>> by_node;
  for (int g : gpus) {
    const int node = topology.NodeOf(g);
    if (!by_node.count(node)) node_order.push_back(node);
    by_node[node].push_back(g);
  }
  const int nodes = static_cast<int>(node_order.size());
  const int g = static_cast<int>(by_node[node_order[0]].size());
  bool uniform = true;
  for (const auto& [node, members] : by_node) uniform = uniform && members.size() == size_t(g);
  if (nodes == 1 || g == 1 || !uniform) {
    CollectivePhase phase;
    AddRings(gpus, n, 2 * (p - 1), topology, options, phase);
    plan.phases.push_back(std::move(phase));
    return plan;
  }
  CollectivePhase reduce_scatter, across, all_gather;
  for (int node : node_order) {
    AddRings(by_node[node], n, g - 1, topology, options, reduce_scatter);
    AddRings(by_node[node], n, g - 1, topology, options, all_gather);
  }
  for (int local = 0; local < g; ++local) {
    std::vector<int> ring;
    for (int node : node_order) ring.push_back(by_node[node][local]);
    AddRings(ring, n / g, 2 * (nodes - 1), topology, options, across);
  }
  plan.phases.push_back(std::move(reduce_scatter));
  plan.phases.push_back(std::move(across));
  plan.phases.push_back(std::move(all_gather));
  return plan;
}

}  // namespace

CollectivePlan PlanCollective(OpKind kind, const std::vector<int>& gpus, int root_gpu, Bytes bytes,
                              const NetworkTopology& topology, const CollectiveOptions& options) {
  CollectivePlan plan = PlanRuns(kind, gpus, root_gpu, bytes, topology, options);
  const std::vector<NetLink>& links = topology.Links();
  for (CollectivePhase& phase : plan.phases) {
    for (RingRun& run : phase.runs) {
      const int p = static_cast<int>(run.gpus.size());
      for (int i = 0; i + (run.closed ? 0 : 1) < p; ++i) {
        TimeNs latency_ns = 0;
        for (int link : topology.Route(run.gpus[i], run.gpus[(i + 1) % p])) {
          run.links.push_back(link);
          latency_ns += links[link].latency_ns;
        }
        run.alpha_ns = std::max(run.alpha_ns, latency_ns);
      }
    }
  }
  return plan;
}

std::vector<std::pair<int, int>> StepTransfers(const RingRun& run, int step) {
  std::vector<std::pair<int, int>> transfers;
  const int p = static_cast<int>(run.gpus.size());
  if (run.closed) {
    for (int i = 0; i < p; ++i) transfers.emplace_back(run.gpus[i], run.gpus[(i + 1) % p]);
  } else {
    for (int e = 0; e + 1 < p; ++e) {
      if (step - e >= 0 && step - e < run.chunks)
        transfers.emplace_back(run.gpus[e], run.gpus[e + 1]);
    }
  }
  return transfers;
}

}  // namespace terasim

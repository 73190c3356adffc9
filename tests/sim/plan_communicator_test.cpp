// PlanCollective given the group's NCCL communicator (what SymmetryFold's checks compute once per
// group) against PlanCollective computing it (sim/collective_plan.h); PlanCache's plans and
// communicators (sim/plan_cache.h) against PlanCollective's and NcclCommunicator's.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "models/model_card.h"
#include "models/nccl_model.h"
#include "sim/cluster_topology.h"
#include "sim/collective_plan.h"
#include "sim/plan_cache.h"
#include "tests/sim/test_model.h"
#include "topologies/cluster.h"

namespace terasim {
namespace {

CollectiveOptions Nccl() {
  CollectiveOptions options = LoadCollectiveOptions(DataRoot() + "/sim/data/collectives.json");
  options.algorithms = CollectiveAlgorithms::kNccl;
  options.nccl = LoadNcclTable(DataRoot() + "/models/data/nccl/nccl.json");
  return options;
}

// Every field of a run and of a plan, as tuples.
auto Fields(const RingRun& r) {
  return std::tie(r.gpus, r.closed, r.steps, r.bytes_per_flow, r.chunks, r.links, r.alpha_ns,
                  r.hop_latency_ns, r.latency_ns);
}

void RequireSamePlan(const CollectivePlan& a, const CollectivePlan& b) {
  REQUIRE(std::tie(a.nccl, a.algorithm, a.protocol) == std::tie(b.nccl, b.algorithm, b.protocol));
  REQUIRE(a.phases.size() == b.phases.size());
  for (size_t p = 0; p < a.phases.size(); ++p) {
    REQUIRE(a.phases[p].runs.size() == b.phases[p].runs.size());
    for (size_t r = 0; r < a.phases[p].runs.size(); ++r) {
      REQUIRE(Fields(a.phases[p].runs[r]) == Fields(b.phases[p].runs[r]));
    }
  }
}

TEST_CASE("A plan from the group's communicator computed once is the plan PlanCollective makes") {
  const Cluster cluster = BuildCluster("p3.16xlarge:4");
  const ClusterTopology topology(cluster);
  const CollectiveOptions options = Nccl();
  // One node's tp group, a group across nodes, one spread one per node.
  const std::vector<std::vector<int>> groups = {
      {0, 1, 2, 3, 4, 5, 6, 7}, {4, 5, 6, 7, 8, 9, 10, 11}, {0, 8, 16, 24}};
  for (const std::vector<int>& gpus : groups) {
    const std::optional<NcclSystem> system = NcclCommunicator(gpus, topology, options);
    REQUIRE(system.has_value());  // NCCL options on a cluster its table knows
    for (OpKind kind : {OpKind::kAllReduce, OpKind::kAllGather, OpKind::kBroadcast}) {
      // 64 KiB (tree or LL across nodes) and 256 MiB (ring, Simple).
      for (Bytes bytes : {Bytes{64} << 10, Bytes{256} << 20}) {
        INFO(OpKindName(kind) << " " << bytes << " bytes on " << gpus.size() << " GPUs");
        const int root = kind == OpKind::kBroadcast ? gpus.back() : -1;
        const CollectivePlan fresh = PlanCollective(kind, gpus, root, bytes, topology, options);
        REQUIRE_FALSE(fresh.phases.empty());
        RequireSamePlan(PlanCollective(kind, gpus, root, bytes, topology, options, system), fresh);
      }
    }
  }
}

TEST_CASE("PlanCache plans as PlanCollective, each GPU set's communicator and shape once") {
  const Cluster cluster = BuildCluster("p3.16xlarge:4");
  const ClusterTopology topology(cluster);
  for (const CollectiveOptions& options : {Nccl(), CollectiveOptions{}}) {
    const bool nccl = options.algorithms == CollectiveAlgorithms::kNccl;
    INFO((nccl ? "nccl" : "ring") << " plans");
    PlanCache cache(topology, options);
    // Two whole nodes (one shape: 1 node x 8), half of two nodes (2 x 4), one GPU per node
    // (4 x 1).
    const std::vector<std::vector<int>> groups = {{0, 1, 2, 3, 4, 5, 6, 7},
                                                  {8, 9, 10, 11, 12, 13, 14, 15},
                                                  {4, 5, 6, 7, 8, 9, 10, 11},
                                                  {0, 8, 16, 24}};
    for (const std::vector<int>& gpus : groups) {
      const std::optional<NcclSystem> fresh = NcclCommunicator(gpus, topology, options);
      const std::optional<NcclSystem>& cached = cache.Communicator(gpus);
      REQUIRE(cached.has_value() == nccl);
      REQUIRE(fresh.has_value() == nccl);
      if (nccl) {
        CHECK(std::tie(cached->nodes, cached->gpus_per_node, cached->channels,
                       cached->channel_bw_bytes_per_s, cached->node_net_bw_bytes_per_s) ==
              std::tie(fresh->nodes, fresh->gpus_per_node, fresh->channels,
                       fresh->channel_bw_bytes_per_s, fresh->node_net_bw_bytes_per_s));
      }
      for (OpKind kind : {OpKind::kAllReduce, OpKind::kReduceScatter, OpKind::kBroadcast}) {
        for (Bytes bytes : {Bytes{64} << 10, Bytes{256} << 20}) {
          INFO(OpKindName(kind) << " " << bytes << " bytes on " << gpus.size() << " GPUs");
          const int root = kind == OpKind::kBroadcast ? gpus[1] : -1;
          const CollectivePlan& plan = cache.Plan(kind, gpus, root, bytes);
          RequireSamePlan(plan, PlanCollective(kind, gpus, root, bytes, topology, options));
          // Asked again: the same plan, not planned again.
          const int plans = cache.Plans();
          CHECK(&cache.Plan(kind, gpus, root, bytes) == &plan);
          CHECK(cache.Plans() == plans);
        }
      }
    }
    // 4 GPU sets x 3 kinds x 2 sizes; NCCL's system once per shape (1 x 8, 2 x 4, 4 x 1).
    CHECK(cache.GpuSets() == 4);
    CHECK(cache.Plans() == 24);
    CHECK(cache.Shapes() == (nccl ? 3 : 0));
    CHECK(cache.Serves(topology, options));
    CollectiveOptions one_way = options;
    one_way.bidirectional_rings = !options.bidirectional_rings;
    CHECK_FALSE(cache.Serves(topology, one_way));
    const ClusterTopology other(cluster);  // equal, but another object: not served
    CHECK_FALSE(cache.Serves(other, options));
  }
}

}  // namespace
}  // namespace terasim

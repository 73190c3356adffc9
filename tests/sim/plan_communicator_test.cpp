// PlanCollective given the group's NCCL communicator (what SymmetryFold's checks compute once per
// group) against PlanCollective computing it (sim/collective_plan.h).
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "models/model_card.h"
#include "models/nccl_model.h"
#include "sim/cluster_topology.h"
#include "sim/collective_plan.h"
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

}  // namespace
}  // namespace terasim

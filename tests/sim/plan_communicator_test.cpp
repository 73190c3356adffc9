// PlanCollective given the group's NCCL communicator (what SymmetryFold's checks compute once per
// group) against PlanCollective computing it (sim/collective_plan.h); PlanCache's plans and
// communicators (sim/plan_cache.h) against PlanCollective's and NcclCommunicator's; plans of
// groups inside node n > 0 shifted from node 0's (NetworkTopology::LinksPerNode).
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
#include "tests/sim/fold_cases.h"
#include "tests/sim/test_model.h"
#include "topologies/cluster.h"
#include "topologies/cluster_options.h"

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

TEST_CASE("A cluster's nodes are node 0 shifted, as ClusterTopology declares") {
  for (const char* spec : {"p3.16xlarge:3", "p4d.24xlarge:3", "p5.48xlarge:3"}) {
    INFO(spec);
    const Cluster cluster = BuildCluster(spec);
    const ClusterTopology topology(cluster);
    const int links_per_node = topology.LinksPerNode();
    const int per_node = topology.NumGpus() / topology.NumNodes();
    REQUIRE(links_per_node == cluster.LinksPerNode());
    REQUIRE(links_per_node > 0);
    const std::vector<NetLink>& links = topology.Links();
    for (int node = 1; node < topology.NumNodes(); ++node) {
      for (int l = 0; l < links_per_node; ++l) {
        const NetLink& mine = links[node * links_per_node + l];
        REQUIRE(mine.bw_bytes_per_s == links[l].bw_bytes_per_s);
        REQUIRE(mine.latency_ns == links[l].latency_ns);
      }
      for (int a = 0; a < per_node; ++a) {
        for (int b = 0; b < per_node; ++b) {
          std::vector<int> shifted = topology.Route(a, b);
          for (int& link : shifted) {
            REQUIRE(link < links_per_node);  // in node 0
            link += node * links_per_node;
          }
          REQUIRE(topology.Route(node * per_node + a, node * per_node + b) == shifted);
        }
      }
      // Across nodes (one switch): node 0 -> 1's route shifted to node n -> n + 1, its in-node
      // links by n x L, its NIC links by n x K.
      const int network_per_node = topology.NetworkLinksPerNode();
      const int network_begin = topology.NumNodes() * links_per_node;
      REQUIRE(network_per_node > 0);
      REQUIRE(static_cast<int>(links.size()) ==
              network_begin + topology.NumNodes() * network_per_node);
      for (int l = 0; l < network_per_node; ++l) {
        const NetLink& mine = links[network_begin + node * network_per_node + l];
        REQUIRE(mine.bw_bytes_per_s == links[network_begin + l].bw_bytes_per_s);
        REQUIRE(mine.latency_ns == links[network_begin + l].latency_ns);
      }
      for (int a = 0; a < per_node && node + 1 < topology.NumNodes(); ++a) {
        for (int b = per_node; b < 2 * per_node; ++b) {
          std::vector<int> shifted = topology.Route(a, b);
          for (int& link : shifted) {
            link += link < network_begin ? node * links_per_node : node * network_per_node;
          }
          REQUIRE(topology.Route(node * per_node + a, node * per_node + b) == shifted);
        }
      }
      std::vector<std::vector<int>> rings = topology.NodeRings(0);
      for (std::vector<int>& ring : rings) {
        for (int& gpu : ring) gpu += node * per_node;
      }
      REQUIRE(topology.NodeRings(node) == rings);
    }
  }
  // A fat tree of two leaves: a node's shift may cross a leaf, so routes across nodes are not
  // declared shifted; of one leaf, they are.
  ClusterOptions tree;
  tree.fabric = FabricKind::kFatTree;
  tree.nodes_per_leaf = 2;
  const Cluster two_leaves = BuildCluster("p4d.24xlarge:4", tree);
  CHECK(ClusterTopology(two_leaves).NetworkLinksPerNode() == 0);
  CHECK(ClusterTopology(two_leaves).LinksPerNode() > 0);
  tree.nodes_per_leaf = 4;
  const Cluster one_leaf = BuildCluster("p4d.24xlarge:4", tree);
  CHECK(ClusterTopology(one_leaf).NetworkLinksPerNode() == 2 * one_leaf.Instance().NumNics());
}

TEST_CASE("PlanCache shifts node 0's plan onto a group inside another node, bit for bit") {
  for (const char* spec : {"p3.16xlarge:3", "p4d.24xlarge:3", "p5.48xlarge:3"}) {
    const Cluster cluster = BuildCluster(spec);
    const ClusterTopology topology(cluster);
    const int per_node = topology.NumGpus() / topology.NumNodes();
    for (const CollectiveOptions& options : {Nccl(), CollectiveOptions{}}) {
      const bool nccl = options.algorithms == CollectiveAlgorithms::kNccl;
      INFO(spec << " " << (nccl ? "nccl" : "ring") << " plans");
      PlanCache cache(topology, options);
      // In node 2: the whole node, reversed, a half, a pair, ranks spread over the node.
      const std::vector<std::vector<int>> locals = {
          {0, 1, 2, 3, 4, 5, 6, 7}, {7, 6, 5, 4, 3, 2, 1, 0}, {4, 5, 6, 7}, {0, 1}, {1, 3, 4, 6}};
      int plans = 0;
      for (const std::vector<int>& local : locals) {
        std::vector<int> gpus;
        for (int g : local) gpus.push_back(2 * per_node + g);
        for (OpKind kind :
             {OpKind::kAllReduce, OpKind::kAllGather, OpKind::kReduceScatter, OpKind::kBroadcast}) {
          for (Bytes bytes : {Bytes{64} << 10, Bytes{256} << 20}) {
            INFO(OpKindName(kind) << " " << bytes << " bytes on " << gpus.size() << " GPUs");
            const int root = kind == OpKind::kBroadcast ? gpus[1] : -1;
            RequireSamePlan(cache.Plan(kind, gpus, root, bytes),
                            PlanCollective(kind, gpus, root, bytes, topology, options));
            ++plans;
          }
        }
        // Its communicator, not needed by the shifted plans, is still NcclCommunicator's.
        const std::optional<NcclSystem> fresh = NcclCommunicator(gpus, topology, options);
        const std::optional<NcclSystem>& cached = cache.Communicator(gpus);
        REQUIRE(cached.has_value() == fresh.has_value());
        if (nccl) CHECK(cached->channels == fresh->channels);
      }
      // Every node-2 plan shifted from node 0's, planned once each: 2 x (5 x 4 x 2) plans.
      CHECK(cache.ShiftedPlans() == plans);
      CHECK(cache.Plans() == 2 * plans);
      // Groups across nodes 0 and 1 are planned; across nodes 1 and 2 shifted from them (over
      // the NICs of nodes 1 and 2).
      const std::vector<std::vector<int>> across = {
          {per_node - 1, per_node}, {0, 1, per_node, per_node + 1}, {per_node + 2, 2}};
      for (const std::vector<int>& low : across) {
        std::vector<int> high = low;
        for (int& gpu : high) gpu += per_node;
        for (OpKind kind : {OpKind::kAllReduce, OpKind::kAllGather, OpKind::kBroadcast}) {
          for (Bytes bytes : {Bytes{64} << 10, Bytes{256} << 20}) {
            INFO(OpKindName(kind) << " " << bytes << " bytes across nodes");
            const int shifted = cache.ShiftedPlans();
            const int root = kind == OpKind::kBroadcast ? low.back() : -1;
            const int high_root = root >= 0 ? root + per_node : root;
            RequireSamePlan(cache.Plan(kind, low, root, bytes),
                            PlanCollective(kind, low, root, bytes, topology, options));
            CHECK(cache.ShiftedPlans() == shifted);
            RequireSamePlan(cache.Plan(kind, high, high_root, bytes),
                            PlanCollective(kind, high, high_root, bytes, topology, options));
            CHECK(cache.ShiftedPlans() == shifted + 1);
          }
        }
      }
    }
  }
}

TEST_CASE("PlanCache plans a group itself on a node whose links differ from node 0's") {
  const Cluster cluster = BuildCluster("p3.16xlarge:3");
  const ClusterTopology p3(cluster);
  const std::vector<int> node0 = {0, 1, 2, 3, 4, 5, 6, 7};
  const std::vector<int> node2 = {16, 17, 18, 19, 20, 21, 22, 23};
  // Node 2's NVLink 16 -> 17 at half its bandwidth: the rings crossing it get a smaller share
  // of the data, so node 0's plan shifted would be wrong.
  const testing::SlowLink topology(p3, p3.Route(16, 17).front(), /*declared_alike=*/true);
  REQUIRE(topology.LinksPerNode() > 0);
  REQUIRE(topology.NetworkLinksPerNode() > 0);
  const CollectiveOptions options;
  PlanCache cache(topology, options);
  const CollectivePlan& zero = cache.Plan(OpKind::kAllReduce, node0, -1, Bytes{256} << 20);
  const CollectivePlan& two = cache.Plan(OpKind::kAllReduce, node2, -1, Bytes{256} << 20);
  CHECK(cache.ShiftedPlans() == 0);
  RequireSamePlan(
      two, PlanCollective(OpKind::kAllReduce, node2, -1, Bytes{256} << 20, topology, options));
  REQUIRE(two.phases.size() == 1);
  REQUIRE(two.phases[0].runs.size() == zero.phases[0].runs.size());
  bool differ = false;
  for (size_t r = 0; r < two.phases[0].runs.size(); ++r) {
    differ =
        differ || two.phases[0].runs[r].bytes_per_flow != zero.phases[0].runs[r].bytes_per_flow;
  }
  CHECK(differ);
  // Node 1 is like node 0: its plan is shifted.
  cache.Plan(OpKind::kAllReduce, {8, 9, 10, 11, 12, 13, 14, 15}, -1, Bytes{256} << 20);
  CHECK(cache.ShiftedPlans() == 1);
  // Across nodes 1 and 2 (node 2 slower): planned, not shifted from nodes 0 and 1.
  const std::vector<int> across = {15, 16};
  cache.Plan(OpKind::kAllReduce, {7, 8}, -1, Bytes{1} << 20);
  RequireSamePlan(
      cache.Plan(OpKind::kAllReduce, across, -1, Bytes{1} << 20),
      PlanCollective(OpKind::kAllReduce, across, -1, Bytes{1} << 20, topology, options));
  CHECK(cache.ShiftedPlans() == 1);
}

TEST_CASE("PlanCache does not shift a plan down onto a node whose links differ from node 0's") {
  const Cluster cluster = BuildCluster("p3.16xlarge:4");
  const ClusterTopology p3(cluster);
  // Node 1's last link into GPU 8 slower: the plan of {7, 8} (nodes 0 and 1) crosses it, that
  // of {23, 24} (nodes 2 and 3, alike) does not.
  const testing::SlowLink topology(p3, p3.Route(7, 8).back(), /*declared_alike=*/true);
  const CollectiveOptions options;
  PlanCache cache(topology, options);
  cache.Plan(OpKind::kAllReduce, {7, 8}, -1, Bytes{1} << 20);
  const std::vector<int> high = {23, 24};
  RequireSamePlan(cache.Plan(OpKind::kAllReduce, high, -1, Bytes{1} << 20),
                  PlanCollective(OpKind::kAllReduce, high, -1, Bytes{1} << 20, topology, options));
  CHECK(cache.ShiftedPlans() == 0);
}

TEST_CASE("PlanCache does not shift a plan across nodes where the network is not declared so") {
  // Leaves of two nodes: nodes 1 and 2 hang off different leaves, nodes 0 and 1 off one.
  ClusterOptions tree;
  tree.fabric = FabricKind::kFatTree;
  tree.nodes_per_leaf = 2;
  const Cluster cluster = BuildCluster("p4d.24xlarge:4", tree);
  const ClusterTopology topology(cluster);
  const CollectiveOptions options;
  PlanCache cache(topology, options);
  const std::vector<int> low = {7, 8}, high = {15, 16};
  cache.Plan(OpKind::kAllReduce, low, -1, Bytes{1} << 20);
  RequireSamePlan(cache.Plan(OpKind::kAllReduce, high, -1, Bytes{1} << 20),
                  PlanCollective(OpKind::kAllReduce, high, -1, Bytes{1} << 20, topology, options));
  // The route 15 -> 16 crosses the spine, 7 -> 8 does not: a shifted plan would be wrong.
  CHECK(topology.Route(15, 16).size() == topology.Route(7, 8).size() + 2);
  CHECK(cache.ShiftedPlans() == 0);
  // Inside a node, still shifted.
  cache.Plan(OpKind::kAllReduce, {0, 1, 2, 3}, -1, Bytes{1} << 20);
  cache.Plan(OpKind::kAllReduce, {24, 25, 26, 27}, -1, Bytes{1} << 20);
  CHECK(cache.ShiftedPlans() == 1);
}

}  // namespace
}  // namespace terasim

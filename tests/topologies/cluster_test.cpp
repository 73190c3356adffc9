#include <catch2/catch.hpp>

#include <set>

#include "models/errors.h"
#include "topologies/topology.h"

using namespace terasim;

namespace {

// FACTS.md: the p3.16xlarge (DGX-1V) hybrid cube-mesh.
const std::vector<std::pair<int, int>> kNv2Pairs = {{0, 3}, {0, 4}, {1, 2}, {1, 5},
                                                    {2, 3}, {4, 7}, {5, 6}, {6, 7}};
const std::vector<std::pair<int, int>> kNv1Pairs = {{0, 1}, {0, 2}, {1, 3}, {2, 6},
                                                    {3, 7}, {4, 5}, {4, 6}, {5, 7}};

int Lanes(int a, int b) {
  for (auto [x, y] : kNv2Pairs) {
    if ((x == a && y == b) || (x == b && y == a)) return 2;
  }
  for (auto [x, y] : kNv1Pairs) {
    if ((x == a && y == b) || (x == b && y == a)) return 1;
  }
  return 0;
}

}  // namespace

TEST_CASE("the p3.16xlarge matrix equals FACTS.md's NVLink pairs and PCIe layout", "[topologies]") {
  Cluster c = BuildCluster("p3.16xlarge");
  REQUIRE(c.NumGpus() == 8);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      std::string expected;
      if (a == b) {
        expected = "X";
      } else if (Lanes(a, b) > 0) {
        expected = "NV" + std::to_string(Lanes(a, b));
      } else if (a / 2 == b / 2) {
        expected = "PIX";  // pairs (0,1), (2,3), (4,5), (6,7) share a switch (all NVLinked)
      } else if (a / 4 == b / 4) {
        expected = "PHB";  // GPUs 0-3 on socket 0, 4-7 on socket 1
      } else {
        expected = "SYS";
      }
      INFO("GPU" << a << " - GPU" << b);
      CHECK(c.ConnectionLabel(a, b) == expected);
    }
  }
  // 8 NV2 pairs + 8 NV1 pairs = 24 links, 6 at every GPU
  for (int g = 0; g < 8; ++g) CHECK(c.NvLinkLanes(g) == 6);
  // GPUs 0-3 on NUMA node 0, 4-7 on node 1
  for (int g = 0; g < 8; ++g) CHECK(c.SocketOf(g) == g / 4);
}

TEST_CASE("the p3.16xlarge matrix has one NVLink edge per pair and direction", "[topologies]") {
  Cluster c = BuildCluster("p3.16xlarge");
  int nvlink_edges = 0;
  int lanes = 0;
  for (const Link& l : c.Links()) {
    if (l.kind != LinkKind::kNvLink) continue;
    ++nvlink_edges;
    lanes += l.lanes;
    // an NV2 pair is one edge of two lanes: 2 x 25 GB/s raw, 2 x 20 GB/s as NCCL plans
    CHECK(l.lanes == Lanes(l.src, l.dst));
    CHECK(l.raw_bw_bytes_per_s == Approx(25e9 * l.lanes));
    CHECK(l.bw_bytes_per_s == Approx(20e9 * l.lanes));
  }
  // 16 pairs x 2 directions; 24 links x 2 directions
  CHECK(nvlink_edges == 32);
  CHECK(lanes == 48);
}

TEST_CASE("NVSwitch instances show NV12 (A100) and NV18 (H100) between every pair",
          "[topologies]") {
  Cluster p4d = BuildCluster("p4d.24xlarge");
  Cluster p5 = BuildCluster("p5.48xlarge");
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      // A100: 12 NVLink3 links into the NVSwitches; H100: 18 NVLink4 links
      CHECK(p4d.ConnectionLabel(a, b) == "NV12");
      CHECK(p5.ConnectionLabel(a, b) == "NV18");
    }
  }
  // 600 GB/s bidirectional per A100 = 300 GB/s each way raw; 900 bidirectional per H100
  const Link& a100 = p4d.Links()[p4d.Route(0, 1).front()];
  CHECK(a100.raw_bw_bytes_per_s == Approx(300e9));
  const Link& h100 = p5.Links()[p5.Route(0, 1).front()];
  CHECK(h100.raw_bw_bytes_per_s == Approx(450e9));
}

TEST_CASE("the cluster layout puts GPU g at vertex g and shifts node links", "[topologies]") {
  Cluster c = BuildCluster("p3.16xlarge:4");
  CHECK(c.NumGpus() == 32);
  CHECK(c.NumNodes() == 4);
  CHECK(c.NodeOf(13) == 1);
  CHECK(c.LocalIndex(13) == 5);
  for (int g = 0; g < c.NumGpus(); ++g) {
    CHECK(c.Vertices()[g].kind == VertexKind::kGpu);
    CHECK(c.Vertices()[g].node == g / 8);
  }
  for (size_t i = 0; i < c.Links().size(); ++i) CHECK(c.Links()[i].id == static_cast<int>(i));
  // node 2's route 0 -> 5 is node 0's shifted by 2 x LinksPerNode (30 links x 2 directions)
  CHECK(c.LinksPerNode() == 60);
  std::vector<int> shifted = c.Route(0, 5);
  for (int& id : shifted) id += 2 * c.LinksPerNode();
  CHECK(c.Route(16, 21) == shifted);
  CHECK(c.Spec() == "p3.16xlarge:4");
}

TEST_CASE("bisection of p3.16xlarge:48 is 24 NICs of 3.125 GB/s", "[topologies]") {
  Cluster c = BuildCluster("p3.16xlarge:48");
  // one 25 Gbps NIC per node each way: the 24 nodes of one half send at 3.125 GB/s each
  CHECK(c.BisectionBytesPerS(true) == Approx(24 * 3.125e9));
  // achievable: the same at the NIC efficiency of the instance file
  CHECK(c.BisectionBytesPerS(false) == Approx(24 * 3.125e9 * c.Instance().network.efficiency));
}

TEST_CASE("bisection of one p3.16xlarge node counts the NVLinks and QPI across the halves",
          "[topologies]") {
  Cluster c = BuildCluster("p3.16xlarge");
  // GPUs 0-3 vs 4-7: NVLinks 0-4 (2), 1-5 (2), 2-6 (1), 3-7 (1) = 6 x 25 GB/s, plus QPI 6 GB/s
  CHECK(c.BisectionBytesPerS(true) == Approx(6 * 25e9 + 6e9));
}

TEST_CASE("a fat tree with oversubscription narrows the bisection", "[topologies]") {
  ClusterOptions tree;
  tree.fabric = FabricKind::kFatTree;
  tree.nodes_per_leaf = 8;
  tree.oversubscription = 2;
  Cluster c = BuildCluster("p3.16xlarge:32", tree);
  // 4 leaves of 8 nodes; each uplink 8 x 3.125 / 2 = 12.5 GB/s; a half is 2 leaves: 25 GB/s
  CHECK(c.BisectionBytesPerS(true) == Approx(2 * 12.5e9));
  // non-blocking (oversubscription 1): 16 nodes x 3.125 GB/s
  tree.oversubscription = 1;
  CHECK(BuildCluster("p3.16xlarge:32", tree).BisectionBytesPerS(true) == Approx(16 * 3.125e9));
  // across leaves: NIC -> leaf -> spine -> leaf -> NIC; within a leaf: NIC -> leaf -> NIC
  int network_hops = 0;
  for (int id : c.Route(0, 8 * 8)) {
    LinkKind k = c.Links()[id].kind;
    network_hops += k == LinkKind::kNetwork || k == LinkKind::kFabric;
  }
  CHECK(network_hops == 4);
  network_hops = 0;
  for (int id : c.Route(0, 8)) network_hops += c.Links()[id].kind == LinkKind::kNetwork;
  CHECK(network_hops == 2);
}

TEST_CASE("what-if options override NIC speed, latency and efficiency", "[topologies]") {
  ClusterOptions what_if;
  what_if.nic_gbps = 100;
  what_if.nic_latency_us = 10;
  what_if.nic_efficiency = 0.9;
  Cluster c = BuildCluster("p3.16xlarge:2", what_if);
  for (const Link& l : c.Links()) {
    if (l.kind != LinkKind::kNetwork) continue;
    // 100 Gbps = 12.5 GB/s line rate, 90% of it achievable
    CHECK(l.raw_bw_bytes_per_s == Approx(12.5e9));
    CHECK(l.bw_bytes_per_s == Approx(0.9 * 12.5e9));
  }
  // one-way latency is paid once: 10 us + six PCIe hops (3 to the NIC, 3 from it) of 1425 ns
  CHECK(c.RouteLatencyNs(0, 8) == 10000 + 6 * 1425);
  // bisection: 1 NIC of 12.5 GB/s
  CHECK(c.BisectionBytesPerS() == Approx(12.5e9));
}

TEST_CASE("NodeRings gives the two edge-disjoint cube-mesh rings, shifted per node",
          "[topologies]") {
  Cluster c = BuildCluster("p3.16xlarge:2");
  auto rings = c.NodeRings(1);
  REQUIRE(rings.size() == 2);
  // node 1 holds GPUs 8..15: FACTS.md's rings + 8
  CHECK(rings[0] == std::vector<int>{8, 11, 10, 9, 13, 14, 15, 12});
  CHECK(rings[1] == std::vector<int>{8, 9, 11, 15, 13, 12, 14, 10});
  auto all = c.ClusterRings();
  REQUIRE(all.size() == 2);
  // node 0's ring then node 1's
  CHECK(all[0] == std::vector<int>{0, 3, 2, 1, 5, 6, 7, 4, 8, 11, 10, 9, 13, 14, 15, 12});
  // a group of one GPU per node keeps node order; a group inside a node keeps ring order
  CHECK(c.GroupRings({8, 0})[0] == std::vector<int>{0, 8});
  CHECK(c.GroupRings({4, 1, 3, 0})[0] == std::vector<int>{0, 3, 1, 4});
  CHECK(c.GroupRings({4, 1, 3, 0})[1] == std::vector<int>{0, 1, 3, 4});
  CHECK_THROWS_AS(c.GroupRings({1, 1}), InputError);
}

TEST_CASE("the cube-mesh rings are edge-disjoint and use every NVLink", "[topologies]") {
  Cluster c = BuildCluster("p3.16xlarge");
  std::multiset<int> used;  // directed links crossed by the rings, run both ways
  for (const auto& ring : c.NodeRings(0)) {
    for (size_t i = 0; i < ring.size(); ++i) {
      int a = ring[i];
      int b = ring[(i + 1) % ring.size()];
      // each ring step is one direct NVLink, forwards and backwards
      std::vector<int> forward = c.Route(a, b);
      std::vector<int> backward = c.Route(b, a);
      REQUIRE(forward.size() == 1);
      REQUIRE(backward.size() == 1);
      CHECK(c.Links()[forward[0]].kind == LinkKind::kNvLink);
      used.insert(forward[0]);
      used.insert(backward[0]);
    }
  }
  std::set<int> nvlinks;
  for (const Link& l : c.Links()) {
    if (l.kind == LinkKind::kNvLink) nvlinks.insert(l.id);
  }
  // disjoint: no directed link twice; complete: all 32 directed NVLink edges (48 lanes)
  CHECK(used.size() == std::set<int>(used.begin(), used.end()).size());
  CHECK(std::set<int>(used.begin(), used.end()) == nvlinks);
}

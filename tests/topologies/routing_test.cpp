#include <catch2/catch.hpp>

#include <set>

#include "topologies/topology.h"

using namespace terasim;

namespace {

std::vector<std::string> VertexNames(const Cluster& c, int src, int dst) {
  std::vector<std::string> names;
  for (int v : c.RouteVertices(src, dst)) names.push_back(c.Vertices()[v].name);
  return names;
}

// Every route is a chain of links from src to dst that visits no vertex twice.
void CheckRoutesAreChains(const Cluster& c) {
  for (int s = 0; s < c.NumGpus(); ++s) {
    for (int d = 0; d < c.NumGpus(); ++d) {
      std::vector<int> route = c.Route(s, d);
      int at = s;
      std::set<int> seen{s};
      for (int id : route) {
        REQUIRE(c.Links()[id].src == at);
        at = c.Links()[id].dst;
        REQUIRE(seen.insert(at).second);
      }
      REQUIRE(at == d);
    }
  }
}

}  // namespace

TEST_CASE("GPU0 -> GPU3 on p3.16xlarge takes the NV2 link", "[topologies]") {
  Cluster c = BuildCluster("p3.16xlarge");
  std::vector<int> route = c.Route(0, 3);
  REQUIRE(route.size() == 1);
  const Link& l = c.Links()[route[0]];
  CHECK(l.kind == LinkKind::kNvLink);
  // NV2: two lanes, 2 x 20 GB/s as NCCL plans it
  CHECK(l.lanes == 2);
  CHECK(l.bw_bytes_per_s == Approx(40e9));
  CHECK(l.name == "n0.gpu0->n0.gpu3");
  // one NVLink crossing
  CHECK(c.RouteLatencyNs(0, 3) == l.latency_ns);
  CHECK(c.Route(3, 3).empty());
}

TEST_CASE("GPU0 -> GPU5 on p3.16xlarge goes through PCIe and both CPU sockets", "[topologies]") {
  Cluster c = BuildCluster("p3.16xlarge");
  // no NVLink between 0 and 5: GPU -> PCIe switch -> CPU -> other CPU -> PCIe switch -> GPU
  CHECK(VertexNames(c, 0, 5) == std::vector<std::string>{"n0.gpu0", "n0.pcie0", "n0.cpu0",
                                                         "n0.cpu1", "n0.pcie2", "n0.gpu5"});
  std::vector<LinkKind> kinds;
  for (int id : c.Route(0, 5)) kinds.push_back(c.Links()[id].kind);
  CHECK(kinds == std::vector<LinkKind>{LinkKind::kPcie, LinkKind::kPcie, LinkKind::kSocket,
                                       LinkKind::kPcie, LinkKind::kPcie});
  // the bottleneck is QPI at 6 GB/s
  CHECK(c.RouteBottleneckBytesPerS(0, 5) == Approx(6e9));
  // 1 and 6: different sockets, no NVLink
  CHECK(c.ConnectionLabel(1, 6) == "SYS");
}

TEST_CASE(
    "GPU0 of node 0 to GPU0 of node 1 on p3 stages through host memory and crosses both "
    "NICs",
    "[topologies]") {
  Cluster c = BuildCluster("p3.16xlarge:2");
  // no GPUDirect: GPU -> PCIe -> host -> NIC -> fabric -> NIC -> host -> PCIe -> GPU
  CHECK(VertexNames(c, 0, 8) == std::vector<std::string>{"n0.gpu0", "n0.pcie0", "n0.cpu0",
                                                         "n0.nic0", "fabric.switch", "n1.nic0",
                                                         "n1.cpu0", "n1.pcie0", "n1.gpu0"});
  // the NIC (3.125 GB/s line rate at the file's efficiency) is the bottleneck
  CHECK(c.RouteBottleneckBytesPerS(0, 8) == Approx(3.125e9 * c.Instance().network.efficiency));
  // the network's one-way latency + six PCIe hops of 1425 ns
  CHECK(c.RouteLatencyNs(0, 8) == c.Instance().network.latency_ns + 6 * 1425);
  // GPU 5 (socket 1) reaches the NIC on socket 0 over QPI
  CHECK(VertexNames(c, 5, 13) == std::vector<std::string>{"n0.gpu5", "n0.pcie2", "n0.cpu1",
                                                          "n0.cpu0", "n0.nic0", "fabric.switch",
                                                          "n1.nic0", "n1.cpu0", "n1.cpu1",
                                                          "n1.pcie2", "n1.gpu5"});
}

TEST_CASE(
    "p4d GPUs reach the NIC on their PCIe switch (GPUDirect) and each other through the "
    "NVSwitch",
    "[topologies]") {
  Cluster c = BuildCluster("p4d.24xlarge:2");
  CHECK(VertexNames(c, 0, 5) == std::vector<std::string>{"n0.gpu0", "n0.nvswitch", "n0.gpu5"});
  // GPUDirect RDMA: no CPU on the path
  CHECK(VertexNames(c, 3, 8 + 6) == std::vector<std::string>{"n0.gpu3", "n0.pcie1", "n0.nic1",
                                                             "fabric.switch", "n1.nic3", "n1.pcie3",
                                                             "n1.gpu6"});
  // two GPUs per 100 Gbps EFA NIC: 4 NICs per node
  CHECK(c.Vertices()[c.NicOf(0)].name == "n0.nic0");
  CHECK(c.Vertices()[c.NicOf(1)].name == "n0.nic0");
  CHECK(c.Vertices()[c.NicOf(7)].name == "n0.nic3");
  // bisection: 4 NICs x 12.5 GB/s of one node
  CHECK(c.BisectionBytesPerS() == Approx(4 * 12.5e9));
}

TEST_CASE("p5 spreads GPUs over the two NICs of their PCIe switch", "[topologies]") {
  Cluster c = BuildCluster("p5.48xlarge:2");
  for (int g = 0; g < 8; ++g) {
    // GPU g uses NIC g: 400 Gbps of EFA each, 3200 Gbps per node
    CHECK(c.Vertices()[c.NicOf(g)].name == "n0.nic" + std::to_string(g));
  }
  CHECK(c.BisectionBytesPerS() == Approx(3200e9 / 8));
}

TEST_CASE("every route is a chain of links from source to destination", "[topologies]") {
  CheckRoutesAreChains(BuildCluster("p3.16xlarge:3"));
  CheckRoutesAreChains(BuildCluster("p3dn.24xlarge:2"));
  CheckRoutesAreChains(BuildCluster("p4d.24xlarge:2"));
  ClusterOptions tree;
  tree.fabric = FabricKind::kFatTree;
  tree.nodes_per_leaf = 2;
  CheckRoutesAreChains(BuildCluster("p5.48xlarge:5", tree));
}

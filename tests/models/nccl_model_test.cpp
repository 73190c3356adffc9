#include <catch2/catch.hpp>

#include <cmath>

#include "models/errors.h"
#include "models/model_card.h"
#include "models/nccl_model.h"

using namespace terasim;

namespace {

std::string NcclJson() { return DataRoot() + "/models/data/nccl/nccl.json"; }

// p3.16xlarge: 6 channels x 20 GB/s NVLink; network 25 Gbps x `efficiency` per node.
NcclSystem P3(int nodes, int gpus_per_node, double net_gbytes = 3.125 * 0.7) {
  return LoadNcclSystem(NcclJson(), "p3.16xlarge", nodes, gpus_per_node, net_gbytes * 1e9, 200.0,
                        false);
}

}  // namespace

TEST_CASE("NCCL ring all-reduce follows the ring closed form", "[models][nccl]") {
  const NcclSystem s = P3(1, 8);
  const NcclConstants& k = s.constants;
  const Bytes n = 256 << 20;
  const int p = 8;
  // Simple protocol inside one node: base + 2 (p - 1) alpha + 2 (p - 1) / p * n / B with
  // alpha the NVLink ring step (3.4 us) and B = channels x channel bandwidth = 120 GB/s.
  const double alpha = k.hw_latency_us[0][1].v[2] * 1e-6;
  const double base = k.base_latency_us[1].v[2] * 1e-6;
  const double bw = 6 * 20e9;
  const double expected = base + 2 * (p - 1) * alpha + 2.0 * (p - 1) / p * n / bw;
  const NcclEstimate e =
      NcclPairTime(s, Collective::kAllReduce, n, NcclAlgorithm::kRing, NcclProtocol::kSimple);
  REQUIRE(e.valid);
  CHECK(e.time_s == Approx(expected).epsilon(1e-9));
  // All-gather and reduce-scatter: base + (p - 1) alpha + (p - 1) / p * n / B.
  const double half = base + (p - 1) * alpha + (p - 1.0) / p * n / bw;
  CHECK(NcclPairTime(s, Collective::kAllGather, n, NcclAlgorithm::kRing, NcclProtocol::kSimple)
            .time_s == Approx(half).epsilon(1e-9));
  CHECK(NcclPairTime(s, Collective::kReduceScatter, n, NcclAlgorithm::kRing, NcclProtocol::kSimple)
            .time_s == Approx(half).epsilon(1e-9));
  // Broadcast: one step's latency, algbw = busbw.
  CHECK(NcclPairTime(s, Collective::kBroadcast, n, NcclAlgorithm::kRing, NcclProtocol::kSimple)
            .time_s == Approx(base + alpha + n / bw).epsilon(1e-9));
}

TEST_CASE("NCCL tree all-reduce follows the tree closed form", "[models][nccl]") {
  const NcclSystem s = P3(4, 8, 12.5);
  const NcclConstants& k = s.constants;
  const Bytes n = int64_t{1} << 32;  // log2(n / 64) = 26: past the size-correction table
  // Channel bandwidth across nodes: min(20 GB/s, 12.5 GB/s / 6); busbw = 6 x that x 0.92,
  // capped at 6 x the per-channel tree cap of Volta on more than 2 nodes (10 GB/s);
  // algbw = busbw / 2.
  const double busbw = std::min(6 * (12.5e9 / 6) * 0.92, 6 * k.tree_cap[2] * 1e9);
  // Latency: base + 2 ((g - 1) alpha_nvlink + log2(N) (alpha_net + 2 x 200 us)) for Simple.
  const double latency =
      (k.base_latency_us[0].v[2] +
       2 * (7 * k.hw_latency_us[0][0].v[2] + 2 * (k.hw_latency_us[2][0].v[2] + 400.0))) *
      1e-6;
  const NcclEstimate e =
      NcclPairTime(s, Collective::kAllReduce, n, NcclAlgorithm::kTree, NcclProtocol::kSimple);
  REQUIRE(e.valid);
  CHECK(e.latency_s == Approx(latency).epsilon(1e-9));
  CHECK(e.time_s == Approx(latency + n / (busbw / 2)).epsilon(1e-9));
  // NCCL's tree runs all-reduce only.
  CHECK_FALSE(
      NcclPairTime(s, Collective::kAllGather, n, NcclAlgorithm::kTree, NcclProtocol::kSimple)
          .valid);
}

TEST_CASE("NCCL picks LL for small messages and Simple for large ones", "[models][nccl]") {
  const NcclSystem s = P3(1, 8);
  CHECK(NcclBestTime(s, Collective::kAllReduce, 8).protocol == NcclProtocol::kLL);
  const NcclEstimate large = NcclBestTime(s, Collective::kAllReduce, int64_t{1} << 30);
  CHECK(large.protocol == NcclProtocol::kSimple);
  // The choice is the minimum over every valid pair.
  for (Bytes n : {Bytes{1024}, Bytes{1} << 20, Bytes{1} << 26}) {
    const NcclEstimate best = NcclBestTime(s, Collective::kAllReduce, n);
    for (NcclAlgorithm a : {NcclAlgorithm::kRing, NcclAlgorithm::kTree}) {
      for (NcclProtocol p : {NcclProtocol::kLL, NcclProtocol::kLL128, NcclProtocol::kSimple}) {
        const NcclEstimate e = NcclPairTime(s, Collective::kAllReduce, n, a, p);
        if (e.valid) CHECK(best.time_s <= e.time_s);
      }
    }
  }
}

TEST_CASE("NCCL bus bandwidth of a large all-reduce approaches the channels' bandwidth",
          "[models][nccl]") {
  // busbw = algbw x 2 (p - 1) / p: for a ring, n / time x 2 (p - 1) / p -> C x B = 120 GB/s.
  const NcclSystem s = P3(1, 8);
  const Bytes n = int64_t{1} << 30;
  const NcclEstimate e = NcclBestTime(s, Collective::kAllReduce, n);
  const double busbw = n / e.time_s * BusBandwidthFactor(Collective::kAllReduce, 8);
  CHECK(busbw == Approx(120e9).epsilon(0.01));
  CHECK(busbw < 120e9);
  // Across nodes the NIC bounds it: 2 nodes of p3.16xlarge at 3.125 GB/s x 0.7.
  const NcclSystem two = P3(2, 8);
  const NcclEstimate e2 = NcclBestTime(two, Collective::kAllReduce, n);
  const double busbw2 = n / e2.time_s * BusBandwidthFactor(Collective::kAllReduce, 16);
  CHECK(busbw2 == Approx(3.125e9 * 0.7).epsilon(0.02));
}

TEST_CASE("NCCL turns LL128 off across nodes without GPUDirect", "[models][nccl]") {
  CHECK(NcclPairTime(P3(1, 8), Collective::kAllReduce, 1 << 20, NcclAlgorithm::kRing,
                     NcclProtocol::kLL128)
            .valid);
  CHECK_FALSE(NcclPairTime(P3(2, 8), Collective::kAllReduce, 1 << 20, NcclAlgorithm::kRing,
                           NcclProtocol::kLL128)
                  .valid);
}

TEST_CASE("hierarchical all-reduce shares the node's NIC among its GPUs", "[models][nccl]") {
  const NcclSystem s = P3(4, 8);
  const Bytes n = int64_t{1} << 30;
  const NcclEstimate h =
      NcclAlgorithmTime(s, Collective::kAllReduce, n, NcclAlgorithm::kHierarchical);
  REQUIRE(h.valid);
  // The cross-node phase moves 2 (N - 1) / N of each GPU's n / g shard over B_net / g: no
  // less than 2 (N - 1) / N x n / B_net, the ring's own bound, plus the two NVLink phases.
  const double net_bound = 2.0 * 3 / 4 * n / (3.125e9 * 0.7);
  const double nvlink = 2 * (7.0 / 8) * n / 120e9;
  CHECK(h.time_s >= net_bound + nvlink);
  CHECK(h.time_s == Approx(net_bound + nvlink).epsilon(0.02));
}

TEST_CASE("NCCL data file errors name the place", "[models][nccl]") {
  CHECK_THROWS_WITH(LoadNcclSystem(NcclJson(), "p9.huge", 1, 8, 1e9, 10, false),
                    Catch::Contains("no entry for 'p9.huge'"));
  CHECK_THROWS_AS(LoadNcclSystem("/nonexistent/nccl.json", "p3.16xlarge", 1, 8, 1e9, 10, false),
                  InputError);
}

TEST_CASE("NCCL's per-channel caps: busbw = min(link x protocol factor, channels x cap)",
          "[models][nccl]") {
  // A p3.16xlarge node whose channels ran at 30 GB/s (above the 20 GB/s LL128 and tree caps
  // NCCL sets per channel for Volta): the caps, not the links, bound the pair.
  NcclSystem s = P3(1, 8);
  const NcclConstants& k = s.constants;
  s.channel_bw_bytes_per_s = 30e9;
  const double link = 6 * 30e9;
  CHECK(NcclLinkBandwidth(s) == Approx(link));
  // Ring LL128: min(0.92 x link, 6 x 20 GB/s) = 120 GB/s; cap factor 120 / (0.92 x 180).
  const double ll128 = std::min(k.ring_ll128_factor * link, 6 * k.ring_ll128_cap[0] * 1e9);
  CHECK(ll128 == Approx(120e9));
  CHECK(NcclBusBandwidth(s, NcclAlgorithm::kRing, NcclProtocol::kLL128) == Approx(ll128));
  CHECK(NcclCapFactor(s, NcclAlgorithm::kRing, NcclProtocol::kLL128) ==
        Approx(ll128 / (k.ring_ll128_factor * link)));
  // Ring LL: min(LL's limit for Volta on one node (39 GB/s), 0.5 x link).
  CHECK(NcclBusBandwidth(s, NcclAlgorithm::kRing, NcclProtocol::kLL) ==
        Approx(std::min(k.ll_max_bw[0] * 1e9, 0.5 * link)));
  // Tree Simple: min(0.92 x link, 6 x 26.5 GB/s) = 159 GB/s (the tree's per-channel cap).
  CHECK(NcclBusBandwidth(s, NcclAlgorithm::kTree, NcclProtocol::kSimple) ==
        Approx(std::min(0.92 * link, 6 * k.tree_cap[0] * 1e9)));
  // Ring Simple has no cap: the links.
  CHECK(NcclBusBandwidth(s, NcclAlgorithm::kRing, NcclProtocol::kSimple) == Approx(link));
  CHECK(NcclCapFactor(s, NcclAlgorithm::kRing, NcclProtocol::kSimple) == 1.0);
  // The pair's time follows the capped bus bandwidth: ring all-reduce algbw = busbw p / 2(p-1).
  const Bytes n = 64 << 20;
  const NcclEstimate e =
      NcclPairTime(s, Collective::kAllReduce, n, NcclAlgorithm::kRing, NcclProtocol::kLL128);
  CHECK(e.algbw_bytes_per_s == Approx(ll128 * 8 / 14));
  // At 20 GB/s per channel (p3.16xlarge as it is) no cap binds LL128 below 0.92 x link.
  CHECK(NcclCapFactor(P3(1, 8), NcclAlgorithm::kRing, NcclProtocol::kLL128) == 1.0);
}

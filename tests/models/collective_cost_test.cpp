#include <cmath>

#include <catch2/catch.hpp>

#include "models/collective_cost.h"

using namespace terasim;

namespace {
constexpr double kAlpha = 8400;    // ns
constexpr double kBw = 20e9;       // bytes/s (an NVLink as NCCL plans it)
constexpr Bytes kN = 256 << 20;    // 256 MiB
constexpr double kNs = 1e9 / kBw;  // ns per byte
}  // namespace

TEST_CASE("send/recv costs alpha + n / B", "[models][collective]") {
  CHECK(SendRecvTimeNs(kN, kAlpha, kBw) == std::llround(kAlpha + kN * kNs));
  CHECK(SendRecvTimeNs(0, kAlpha, kBw) == std::llround(kAlpha));
}

TEST_CASE("ring all-reduce costs 2(p-1) alpha + 2(p-1)/p n/B", "[models][collective]") {
  for (int p : {2, 4, 8, 48}) {
    INFO("p " << p);
    CHECK(RingAllReduceTimeNs(kN, p, kAlpha, kBw) ==
          std::llround(2.0 * (p - 1) * kAlpha + 2.0 * (p - 1) / p * kN * kNs));
  }
  // One rank has nothing to reduce.
  CHECK(RingAllReduceTimeNs(kN, 1, kAlpha, kBw) == 0);
}

TEST_CASE("tree all-reduce costs 2 log2(p) alpha + 2 n/B and wins for small messages",
          "[models][collective]") {
  CHECK(TreeAllReduceTimeNs(kN, 8, kAlpha, kBw) == std::llround(2 * 3 * kAlpha + 2.0 * kN * kNs));
  // ceil(log2 6) = 3.
  CHECK(TreeAllReduceTimeNs(kN, 6, kAlpha, kBw) == std::llround(2 * 3 * kAlpha + 2.0 * kN * kNs));
  // 1 KB over 64 ranks: 12 alpha (tree) < 126 alpha (ring).
  CHECK(TreeAllReduceTimeNs(1024, 64, kAlpha, kBw) < RingAllReduceTimeNs(1024, 64, kAlpha, kBw));
  // 256 MiB over 8 ranks: the ring moves 7/4 n, the tree 2 n.
  CHECK(RingAllReduceTimeNs(kN, 8, kAlpha, kBw) < TreeAllReduceTimeNs(kN, 8, kAlpha, kBw));
}

TEST_CASE("all-gather and reduce-scatter cost (p-1) alpha + (p-1)/p n/B", "[models][collective]") {
  for (int p : {2, 8, 16}) {
    const TimeNs expected = std::llround((p - 1.0) * kAlpha + (p - 1.0) / p * kN * kNs);
    CHECK(AllGatherTimeNs(kN, p, kAlpha, kBw) == expected);
    CHECK(ReduceScatterTimeNs(kN, p, kAlpha, kBw) == expected);
  }
  // An all-reduce is a reduce-scatter plus an all-gather (within rounding).
  CHECK(std::abs(RingAllReduceTimeNs(kN, 8, kAlpha, kBw) -
                 2 * ReduceScatterTimeNs(kN, 8, kAlpha, kBw)) <= 1);
}

TEST_CASE("pipelined chain broadcast costs (p-1) alpha + n/B", "[models][collective]") {
  CHECK(BroadcastTimeNs(kN, 8, kAlpha, kBw) == std::llround(7 * kAlpha + kN * kNs));
  CHECK(CollectiveTimeNs(Collective::kBroadcast, kN, 8, kAlpha, kBw) ==
        BroadcastTimeNs(kN, 8, kAlpha, kBw));
  CHECK(CollectiveTimeNs(Collective::kAllReduce, kN, 8, kAlpha, kBw) ==
        RingAllReduceTimeNs(kN, 8, kAlpha, kBw));
}

TEST_CASE("hierarchical all-reduce: reduce-scatter in node, all-reduce of n/g across, all-gather",
          "[models][collective]") {
  const double inter_alpha = 50000, inter_bw = 1.5e9;
  const int g = 8, nodes = 6;
  const double expected =
      // reduce-scatter of n over the g ranks of a node
      (g - 1.0) * kAlpha +
      (g - 1.0) / g * kN * kNs
      // ring all-reduce of n / g over the nodes
      + 2.0 * (nodes - 1) * inter_alpha +
      2.0 * (nodes - 1) / nodes * (kN / g) / inter_bw * 1e9
      // all-gather of n over the g ranks of a node
      + (g - 1.0) * kAlpha + (g - 1.0) / g * kN * kNs;
  CHECK(static_cast<double>(HierarchicalAllReduceTimeNs(kN, g, nodes, kAlpha, kBw, inter_alpha,
                                                        inter_bw)) == Approx(expected).margin(3));
  // Beats a flat ring over all 48 ranks at the network's speed.
  CHECK(HierarchicalAllReduceTimeNs(kN, g, nodes, kAlpha, kBw, inter_alpha, inter_bw) <
        RingAllReduceTimeNs(kN, g * nodes, inter_alpha, inter_bw));
}

TEST_CASE("NCCL bus bandwidth factors", "[models][collective]") {
  // busbw = algbw x 2(n-1)/n (all-reduce), (n-1)/n (gather/scatter), 1 (broadcast, send/recv).
  CHECK(BusBandwidthFactor(Collective::kAllReduce, 8) == Approx(2.0 * 7 / 8));
  CHECK(BusBandwidthFactor(Collective::kAllGather, 8) == Approx(7.0 / 8));
  CHECK(BusBandwidthFactor(Collective::kReduceScatter, 4) == Approx(3.0 / 4));
  CHECK(BusBandwidthFactor(Collective::kBroadcast, 8) == 1.0);
  CHECK(BusBandwidthFactor(Collective::kSendRecv, 2) == 1.0);
  // A ring all-reduce with alpha = 0 runs at bus bandwidth = link bandwidth.
  const TimeNs t = RingAllReduceTimeNs(kN, 8, 0, kBw);
  CHECK(AlgorithmBandwidth(kN, t) * BusBandwidthFactor(Collective::kAllReduce, 8) ==
        Approx(kBw).epsilon(1e-6));
}

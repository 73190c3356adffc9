// ReplayStats (sim/replay_stats.h): busy spans per device, and link bytes that are the same,
// bit for bit, whether a repeated list is counted (whole byte counts) or added link by link.
#include <catch2/catch.hpp>

#include <cstring>
#include <utility>
#include <vector>

#include "sim/replay_stats.h"

namespace terasim {
namespace {

using List = std::vector<std::pair<int, double>>;

// The bytes of `sequence` (list numbers into `lists`) added link by link, in order.
std::vector<double> Sequential(const std::vector<List>& lists, const std::vector<int>& sequence,
                               int num_links) {
  std::vector<double> bytes(num_links, 0.0);
  for (int k : sequence) {
    for (const auto& [link, b] : lists[k]) bytes[link] += b;
  }
  return bytes;
}

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

TEST_CASE("ReplayStats: compute, exposed communication and idle per device", "[replay_stats]") {
  ReplayStats stats(2, 1);
  // Device 0: compute [0, 10) and [5, 20) overlap: 20 ns of compute; communication [15, 30)
  // is exposed only over [20, 30): 10 ns. Over a 40 ns iteration, 10 ns idle.
  stats.OnComputeStart(0, 0);
  stats.OnComputeStart(0, 5);
  stats.OnOpEnd(0, true, 10);
  stats.OnCommStart(0, 15);
  stats.OnOpEnd(0, true, 20);
  stats.OnOpEnd(0, false, 30);
  const std::vector<ReplayStats::DeviceTimes> times = stats.Devices(40);
  REQUIRE(times.size() == 2);
  CHECK(times[0].compute_ns == 20);
  CHECK(times[0].comm_ns == 10);
  CHECK(times[0].idle_ns == 10);
  CHECK(times[1].compute_ns == 0);
  CHECK(times[1].idle_ns == 40);
}

TEST_CASE("ReplayStats: counted whole lists sum as the adds in order", "[replay_stats]") {
  // Whole byte counts: counted per list, the sums are exact, so equal to the adds in order.
  const std::vector<List> lists = {{{0, 3.0}, {2, 1e12}}, {{2, 7.0}, {1, 5.0}}};
  const std::vector<int> sequence = {0, 1, 0, 0, 1, 0};
  ReplayStats stats(1, 3);
  for (int k : sequence) stats.OnLinkBytesRepeat(k, lists[k]);
  stats.OnLinkBytesList({{1, 4.0}});  // a point-to-point list between them
  std::vector<int> with_p2p = sequence;
  std::vector<List> all = lists;
  all.push_back({{1, 4.0}});
  with_p2p.push_back(2);
  const std::vector<double> expected = Sequential(all, with_p2p, 3);
  CHECK(SameBits(stats.LinkBytes(), expected));
  CHECK(stats.LinkBytes()[0] == 12.0);       // 4 x 3
  CHECK(stats.LinkBytes()[1] == 14.0);       // 2 x 5 + 4
  CHECK(stats.LinkBytes()[2] == 4e12 + 14);  // 4 x 1e12 + 2 x 7
}

TEST_CASE("ReplayStats: a list that is not whole ends counting, the sums as in order",
          "[replay_stats]") {
  // 0.1 is not whole: from its first add on, every list is added link by link; the counted
  // ones before it are added first (exact), so the sums are those of the adds in order, whose
  // rounding depends on the order (0.1 + 0.1 + 0.1 != 0.3).
  const std::vector<List> lists = {{{0, 2.0}, {1, 3.0}}, {{0, 0.1}, {1, 0.7}}};
  const std::vector<int> sequence = {0, 0, 1, 0, 1, 1, 0};
  ReplayStats stats(1, 2);
  for (int k : sequence) stats.OnLinkBytesRepeat(k, lists[k]);
  CHECK(SameBits(stats.LinkBytes(), Sequential(lists, sequence, 2)));
}

TEST_CASE("ReplayStats: lists on links of their own are counted, the sums as in order",
          "[replay_stats]") {
  // Not whole (0.5 first, then 0.1, 1/3): each link's sum depends on the order of its adds.
  // lists[k] is sent as number k + 1. lists[0] holds links 0 and 1 alone until lists[2] (link
  // 1) is first sent: its sends so far are added then, before lists[2]'s. lists[1] (links 2, 3)
  // and lists[3] (links 4, 7, 4: 0.1 then 1/3 on link 4 at each send) are alone to the end: their
  // sends are added when the bytes are read. The unnumbered lists[5] shares link 5 with lists[4].
  // Every sum equals the adds in order, bit for bit.
  const double third = 1.0 / 3;
  const std::vector<List> lists = {{{0, 0.1}, {1, third}},
                                   {{2, 0.7}, {3, 1e9 + third}},
                                   {{1, 0.3}, {6, 0.1}},
                                   {{4, 0.1}, {7, 0.2}, {4, third}},
                                   {{5, 0.1}},
                                   {{5, third}}};  // unnumbered
  const std::vector<int> sequence = {1, 0, 0, 1, 4, 0, 4, 3, 2, 0, 1, 5, 4, 3, 0, 2, 1, 1, 4};
  ReplayStats stats(1, 8);
  stats.OnLinkBytesRepeat(0, {{6, 0.5}});  // not whole from the first send on
  std::vector<List> all = lists;
  all.push_back({{6, 0.5}});
  std::vector<int> in_order = {6};
  for (int k : sequence) {
    if (k == 5) {
      stats.OnLinkBytesList(lists[k]);
    } else {
      stats.OnLinkBytesRepeat(k + 1, lists[k]);
    }
    in_order.push_back(k);
  }
  CHECK(SameBits(stats.LinkBytes(), Sequential(all, in_order, 8)));
  // Sent again after the read: still the adds in order.
  for (int k : {1, 1, 0}) {
    stats.OnLinkBytesRepeat(k + 1, lists[k]);
    in_order.push_back(k);
  }
  CHECK(SameBits(stats.LinkBytes(), Sequential(all, in_order, 8)));
  // 100 sends of lists[1] alone: 0.7 x 100 added one by one is not 70 (70.00000000000013).
  // With them, 7 sends of a list with link 1 three times.
  const std::vector<List> alone_lists = {{{0, 0.5}}, lists[1], {{1, 0.1}, {1, third}, {1, 0.7}}};
  std::vector<int> alone_order = {0};
  for (int k = 0; k < 100; ++k) {
    alone_order.push_back(1);
    if (k % 10 == 3) alone_order.push_back(2);
  }
  ReplayStats alone(1, 4);
  for (int k : alone_order) alone.OnLinkBytesRepeat(2 * k, alone_lists[k]);
  CHECK(SameBits(alone.LinkBytes(), Sequential(alone_lists, alone_order, 4)));
  CHECK(alone.LinkBytes()[2] != 70.0);
}

TEST_CASE("ReplayStats: sums past 2^53 are added in order", "[replay_stats]") {
  // 2^53 + 1 is not a double: adding 1 to 2^53 rounds, so counting would differ from the adds
  // in order; once the bound of all sums reaches 2^53, the lists are added link by link.
  const double big = 9007199254740992.0;  // 2^53
  const std::vector<List> lists = {{{0, 1.0}}, {{0, big - 2}}};
  const std::vector<int> sequence = {0, 1, 0, 0, 0};
  ReplayStats stats(1, 1);
  for (int k : sequence) stats.OnLinkBytesRepeat(k, lists[k]);
  CHECK(SameBits(stats.LinkBytes(), Sequential(lists, sequence, 1)));
}

}  // namespace
}  // namespace terasim

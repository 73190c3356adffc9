#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "sim/event_queue.h"

namespace terasim {
namespace {

// The heap orders by one 128-bit key per event (time above, seq and slot below): the order
// must be (time, seq) over the whole range of TimeNs, negative times and times above 2^32
// included, with ties in push order.
TEST_CASE("EventQueue orders by (time, seq) over the whole range of times") {
  const TimeNs big = std::numeric_limits<TimeNs>::max();
  const TimeNs small = std::numeric_limits<TimeNs>::min();
  const std::vector<TimeNs> times = {
      0, 1, -1, big, small, big - 1, small + 1, int64_t{1} << 32, -(int64_t{1} << 40), 7};
  EventQueue queue;
  std::vector<std::tuple<TimeNs, uint64_t, int64_t>> expected;  // (time, seq, payload)
  std::mt19937 rng(12);
  for (int i = 0; i < 400; ++i) {
    const TimeNs t = times[rng() % times.size()];
    // Times other than the last popped (0 before any pop) go to the heap, 0 to the FIFO.
    const uint64_t seq = queue.Push(Event{t, 0, 0, 0, i, 0});
    expected.emplace_back(t, seq, i);
  }
  std::sort(expected.begin(), expected.end());
  for (const auto& [t, seq, payload] : expected) {
    const Event event = queue.Pop();
    REQUIRE(event.time_ns == t);
    REQUIRE(event.seq == seq);
    REQUIRE(event.a == payload);
  }
  REQUIRE(queue.Empty());
}

TEST_CASE("EventQueue keeps each event's payload through slot reuse") {
  // Events popped free their slots for later pushes; every payload must come back with its own
  // event. Pushes at later times than any popped one keep the FIFO out of it.
  EventQueue queue;
  std::vector<std::pair<TimeNs, int64_t>> left;  // (time, payload); seqs rise with payload
  std::mt19937 rng(3);
  TimeNs now = 0;
  int64_t next = 0;
  for (int round = 0; round < 2000; ++round) {
    const int pushes = static_cast<int>(rng() % 3);
    for (int k = 0; k < pushes; ++k) {
      const TimeNs t = now + 1 + static_cast<TimeNs>(rng() % 20);
      queue.Push(Event{t, 0, 1, 2, next, -next});
      left.emplace_back(t, next++);
    }
    if (!left.empty() && rng() % 2 == 0) {
      const auto first = std::min_element(left.begin(), left.end());
      const Event event = queue.Pop();
      REQUIRE(event.time_ns == first->first);
      REQUIRE(event.a == first->second);
      REQUIRE(event.b == -first->second);
      REQUIRE(event.handler == 1);
      REQUIRE(event.kind == 2);
      now = event.time_ns;
      left.erase(first);
    }
  }
  REQUIRE(next > 1000);  // the loop exercised the queue
}

}  // namespace
}  // namespace terasim

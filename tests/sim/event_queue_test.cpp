#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <set>
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

// A queue pops the smallest (time, seq) left; the reference is a std::set of those pairs.
class ReferenceQueue {
 public:
  void Push(EventQueue& queue, TimeNs t) { left_.emplace(t, queue.Push(Event{t, 0, 0, 0, t, 0})); }
  void PushReserved(EventQueue& queue, TimeNs t, uint64_t seq) {
    queue.PushReserved(Event{t, seq, 0, 0, t, 0});
    left_.emplace(t, seq);
  }
  // Pops one event from `queue` and checks it against the reference; returns its time.
  TimeNs Pop(EventQueue& queue) {
    const Event event = queue.Pop();
    REQUIRE(std::make_pair(event.time_ns, event.seq) == *left_.begin());
    REQUIRE(event.a == event.time_ns);  // the payload came back with its event
    left_.erase(left_.begin());
    return event.time_ns;
  }
  size_t Size() const { return left_.size(); }
  // The k-th smallest time queued (k < Size()).
  TimeNs TimeAt(size_t k) const { return std::next(left_.begin(), static_cast<long>(k))->first; }

 private:
  std::set<std::pair<TimeNs, uint64_t>> left_;
};

// Up to 256 queued events the narrow keys are kept sorted (pop: the first one; push: a binary
// search and a shift of the keys on the nearer side); past 256 they form a heap, and they are
// sorted again once 64 or fewer are left. The pushes here land the way a replay's do: among
// the first few queued times, among the last ones, at a queued time (ties: by seq), at the
// time just popped (the FIFO) and at reserved seqs.
TEST_CASE("EventQueue keeps (time, seq) order with sorted keys, a heap and the switches between") {
  EventQueue queue;
  ReferenceQueue reference;
  std::mt19937 rng(21);
  TimeNs now = 0;
  // A push at a time like a replay's: near the front, near the back, or tied with a queued one.
  auto push_like_replay = [&] {
    const size_t n = reference.Size();
    const int choice = static_cast<int>(rng() % 6);
    TimeNs t = now + 1 + static_cast<TimeNs>(rng() % 1000000);
    if (choice == 0 && n > 8) t = reference.TimeAt(rng() % 8) + static_cast<TimeNs>(rng() % 3);
    if (choice == 1 && n > 8) t = reference.TimeAt(n - 1 - rng() % 8) + 1;
    if (choice == 2 && n > 0) t = reference.TimeAt(rng() % n);  // a tie
    if (choice == 3) t = now;                                   // the FIFO
    reference.Push(queue, t);
  };
  bool was_heap = false;
  bool sorted_again = false;
  for (int round = 0; round < 40000; ++round) {
    // Cycles of three phases: grow to about 500 (past 256: a heap; narrow keys throughout),
    // shrink to 30 (at most 64: sorted again), then hover there.
    const int phase = round % 1500 < 600 ? 0 : round % 1500 < 1000 ? 1 : 2;
    const int pushes = phase == 0 ? static_cast<int>(rng() % 3) : phase == 1 ? 0 : 1;
    for (int k = 0; k < pushes; ++k) push_like_replay();
    if (rng() % 16 == 0) {
      // A reserved place at now, after every seq handed out so far, filled later.
      const uint64_t seq = queue.ReserveSeq();
      push_like_replay();
      reference.PushReserved(queue, now, seq);
    }
    // Pops: one in three rounds, then two a round down to 30, then one a round.
    const int pops = phase == 0 ? rng() % 3 == 0 : phase == 1 ? 2 : 1;
    for (int k = 0; k < pops && reference.Size() > (phase == 1 ? 30u : 0u); ++k) {
      now = reference.Pop(queue);
    }
    REQUIRE_FALSE(queue.WideKeys());
    REQUIRE(queue.Size() == reference.Size());
    if (reference.Size() > 300) {
      // Past 256 events: the keys form a heap.
      REQUIRE_FALSE(queue.SortedKeys());
      was_heap = true;
    }
    if (was_heap && reference.Size() < 60) {
      // Below 64 after a heap: sorted again.
      REQUIRE(queue.SortedKeys());
      sorted_again = true;
    }
  }
  REQUIRE(was_heap);
  REQUIRE(sorted_again);
  while (reference.Size() > 0) reference.Pop(queue);
  REQUIRE(queue.Empty());
}

// Sorted keys are re-keyed in place like a heap's (the same order): times 2^37 ns on (past the
// first bases: re-keyed), a time below the new base (re-keyed again), then a time 2^40 ns on
// (wide keys: the sorted keys become the wide heap), then narrow keys again at the next try
// (every 4096 pushes), a heap until at most 64 events are left, then sorted again.
TEST_CASE("EventQueue keeps (time, seq) order when sorted keys are re-keyed or go wide") {
  EventQueue queue;
  ReferenceQueue reference;
  std::mt19937 rng(5);
  const TimeNs start = TimeNs{1} << 37;
  for (int k = 0; k < 100; ++k) reference.Push(queue, start + static_cast<TimeNs>(rng() % 1000));
  REQUIRE(queue.SortedKeys());
  for (int k = 0; k < 10; ++k) reference.Pop(queue);
  reference.Push(queue, start - 5);  // below every queued time, so below the time base
  REQUIRE(queue.SortedKeys());
  REQUIRE_FALSE(queue.WideKeys());
  const TimeNs far = start + (TimeNs{1} << 40);
  reference.Push(queue, far);
  REQUIRE(queue.WideKeys());
  TimeNs now = 0;
  while (reference.Size() > 0) now = reference.Pop(queue);
  REQUIRE(now == far);
  for (int k = 0; k < 9000; ++k) {
    reference.Push(queue, now + 1 + static_cast<TimeNs>(rng() % 500));
    if (k % 2 == 0) now = reference.Pop(queue);
    // At most 100 queued, then at most 30 (at most 64: sorted again).
    while (reference.Size() > (k < 8500 ? 100u : 30u)) now = reference.Pop(queue);
  }
  REQUIRE_FALSE(queue.WideKeys());
  REQUIRE(queue.SortedKeys());
  while (reference.Size() > 0) reference.Pop(queue);
  REQUIRE(queue.Empty());
}

}  // namespace
}  // namespace terasim

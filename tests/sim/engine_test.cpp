#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "sim/engine.h"
#include "sim/event_queue.h"

namespace terasim {
namespace {

TEST_CASE("EventQueue pops equal-time events in insertion order") {
  EventQueue queue;
  for (int i = 0; i < 10; ++i) queue.Push(Event{100, 0, 0, 0, i, 0});
  queue.Push(Event{50, 0, 0, 0, -1, 0});
  // The earlier time first, then the ten events at t = 100 in the order they were pushed.
  REQUIRE(queue.Pop().a == -1);
  for (int i = 0; i < 10; ++i) REQUIRE(queue.Pop().a == i);
  REQUIRE(queue.Empty());
}

TEST_CASE("EventQueue pops in (time, seq) order when pushes land at the popped time") {
  // Interleaved pushes and pops: many at the time just popped (the queue's FIFO), some later,
  // some earlier (the queue itself allows it). The reference is the smallest (time, seq) left.
  EventQueue queue;
  std::vector<std::pair<TimeNs, uint64_t>> left;  // reference: (time, seq) of queued events
  std::mt19937 rng(7);
  TimeNs now = 0;
  int popped = 0;
  for (int round = 0; round < 3000; ++round) {
    const int pushes = static_cast<int>(rng() % 3);
    for (int k = 0; k < pushes; ++k) {
      const int choice = static_cast<int>(rng() % 4);
      const TimeNs t = choice <= 1 ? now : choice == 2 ? now + 1 + rng() % 50 : now / 2;
      const uint64_t seq = queue.Push(Event{t, 0, 0, 0, 0, 0});
      left.emplace_back(t, seq);
    }
    if (!left.empty() && rng() % 2 == 0) {
      const auto expected = std::min_element(left.begin(), left.end());
      const Event event = queue.Pop();
      REQUIRE(event.time_ns == expected->first);
      REQUIRE(event.seq == expected->second);
      left.erase(expected);
      now = event.time_ns;
      ++popped;
    }
    REQUIRE(queue.Size() == left.size());
  }
  REQUIRE(popped > 1000);  // the loop exercised the queue
}

TEST_CASE("EventQueue keeps (time, seq) order across re-keyed and wide heap keys") {
  // Narrow keys hold times within 2^36 ns and seqs within 2^18 of their bases and 2^10 events;
  // each phase leaves those bounds one way. The reference is the smallest (time, seq) queued.
  EventQueue queue;
  std::set<std::pair<TimeNs, uint64_t>> left;
  auto push = [&](TimeNs t) { left.emplace(t, queue.Push(Event{t, 0, 0, 0, 0, 0})); };
  auto pop = [&] {
    const Event event = queue.Pop();
    REQUIRE(std::make_pair(event.time_ns, event.seq) == *left.begin());
    left.erase(left.begin());
  };
  std::mt19937 rng(11);
  // 2000 events in the heap at once: past 2^10, wide keys.
  for (int k = 0; k < 2000; ++k) push(1 + static_cast<TimeNs>(rng() % 100000));
  REQUIRE(queue.WideKeys());
  while (left.size() > 10) pop();
  // A small heap again: narrow keys at the next try (every 4096 pushes).
  for (int k = 0; k < 5000; ++k) {
    push(200000 + static_cast<TimeNs>(rng() % 1000));
    pop();
  }
  REQUIRE_FALSE(queue.WideKeys());
  // A time earlier than every queued one (below the time base): narrow keys on new bases.
  push(5);
  REQUIRE_FALSE(queue.WideKeys());
  // A time 2^40 ns past the others: wide keys.
  push(TimeNs{1} << 40);
  for (int k = 0; k < 100; ++k) push(300000 + static_cast<TimeNs>(rng() % 1000));
  REQUIRE(queue.WideKeys());
  while (left.size() > 1) pop();  // leaves the event at 2^40
  // It stays while 2^18 + 1000 events pass (their times within 2^36 ns of it): the seqs'
  // span outgrows the narrow keys again.
  const TimeNs far = (TimeNs{1} << 40) - 1000000;
  for (int k = 0; k < (1 << 18) + 1000; ++k) {
    push(far - 500000 + k);
    pop();
  }
  REQUIRE(queue.WideKeys());
  while (!left.empty()) pop();
  REQUIRE(queue.Empty());
}

class Recorder : public EventHandler, public EventObserver {
 public:
  explicit Recorder(Engine& engine) : engine_(engine), id_(engine.AddHandler(this)) {}
  int id() const { return id_; }
  void Handle(const Event& event) override {
    handled.push_back({engine_.Now(), event.a});
    // Event 1 schedules a follow-up at the same instant: it must run after those already queued.
    if (event.a == 1) engine_.Schedule(engine_.Now(), id_, 0, 99);
  }
  void OnEvent(const Event& event) override { observed.push_back(event.a); }

  std::vector<std::pair<TimeNs, int64_t>> handled;
  std::vector<int64_t> observed;

 private:
  Engine& engine_;
  int id_;
};

TEST_CASE("Engine dispatches in time order and notifies observers after each event") {
  Engine engine;
  Recorder recorder(engine);
  engine.AddObserver(&recorder);
  engine.Schedule(20, recorder.id(), 0, 3);
  engine.Schedule(10, recorder.id(), 0, 1);
  engine.Schedule(10, recorder.id(), 0, 2);
  // Four events: three scheduled plus the follow-up of event 1.
  REQUIRE(engine.Run() == 4);
  // Time order; at t = 10 insertion order (1, 2, then 99 that 1 scheduled during the run).
  const std::vector<std::pair<TimeNs, int64_t>> expected = {{10, 1}, {10, 2}, {10, 99}, {20, 3}};
  REQUIRE(recorder.handled == expected);
  REQUIRE(recorder.observed == std::vector<int64_t>{1, 2, 99, 3});
  REQUIRE(engine.Now() == 20);
}

TEST_CASE("Engine refuses an event in the past") {
  Engine engine;
  Recorder recorder(engine);
  engine.Schedule(10, recorder.id(), 0, 0);
  engine.Run();
  // Now is 10; scheduling at 5 breaks causality.
  REQUIRE_THROWS(engine.Schedule(5, recorder.id(), 0, 0));
}

// At t = 10, event 1 keeps a place, then schedules event 2 at the same instant; event 3 was
// queued before event 1 ran. The reserved event fills the place while the dispatch has not
// passed it: it runs after 3 (queued earlier) and before 2 (scheduled after the place was kept).
class Reserver : public EventHandler {
 public:
  explicit Reserver(Engine& engine) : engine_(engine), id_(engine.AddHandler(this)) {}
  int id() const { return id_; }
  void Handle(const Event& event) override {
    handled.push_back(event.a);
    if (event.a == 1) {
      place_ = engine_.Reserve();
      engine_.Schedule(engine_.Now(), id_, 0, 2);
    } else if (event.a == 3) {
      passed_at_3 = engine_.Passed(10, place_);
      engine_.ScheduleReserved(10, place_, id_, 0, 4);
    } else if (event.a == 2) {
      passed_at_2 = engine_.Passed(10, place_);
    }
  }
  std::vector<int64_t> handled;
  bool passed_at_3 = true;
  bool passed_at_2 = false;

 private:
  Engine& engine_;
  int id_;
  uint64_t place_ = 0;
};

TEST_CASE("Engine runs an event at the place Reserve kept, in the order it would have had") {
  Engine engine;
  Reserver reserver(engine);
  engine.Schedule(10, reserver.id(), 0, 1);
  engine.Schedule(10, reserver.id(), 0, 3);
  // Before the run nothing has passed the place of an event at time 10.
  REQUIRE_FALSE(engine.Passed(10, engine.NextSeq()));
  REQUIRE(engine.Run() == 4);
  // 1 keeps a place (seq 2) and schedules 2 (seq 3); 3 (seq 1) fills the place with 4, which
  // runs before 2. At 3 the place is ahead; at 2 (seq 3 > 2) it has been passed.
  REQUIRE(reserver.handled == std::vector<int64_t>{1, 3, 4, 2});
  REQUIRE_FALSE(reserver.passed_at_3);
  REQUIRE(reserver.passed_at_2);
  // A later time has passed every place at time 10.
  REQUIRE(engine.Passed(9, 1000));
}

}  // namespace
}  // namespace terasim

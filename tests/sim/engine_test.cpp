#include <catch2/catch.hpp>

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

}  // namespace
}  // namespace terasim

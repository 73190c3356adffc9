// The end of a collective whose last phase ran in closed form is handled in place when nothing
// else is due at that instant (Engine::TakeNextInPlace, Replay::StartPhase): the same results
// as queueing it (ReplayOptions::queue_collective_ends), one event less per such collective.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/engine.h"
#include "sim/replay.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fold_cases.h"
#include "tests/sim/schedule_builder.h"

namespace terasim {
namespace {

using testing::MakeOp;

TEST_CASE("Engine::TakeNextInPlace only where the event would be dispatched next") {
  // A handler that, on event a = 1 and a = 2 at t = 10, asks to handle an event at now in place.
  class Asker : public EventHandler {
   public:
    explicit Asker(Engine& engine) : engine_(engine), id_(engine.AddHandler(this)) {}
    int id() const { return id_; }
    void Handle(const Event& event) override {
      if (event.a == 0) return;
      taken.push_back(engine_.TakeNextInPlace());
      // The seq a later Schedule gets: one above the taken one (as if it had been queued).
      seqs.push_back(engine_.Schedule(engine_.Now() + 100, id_, 0, 0));
    }
    std::vector<bool> taken;
    std::vector<uint64_t> seqs;

   private:
    Engine& engine_;
    int id_;
  };
  Engine engine;
  Asker asker(engine);
  engine.Schedule(10, asker.id(), 0, 1);  // seq 0: another event (seq 1) is due at 10: no
  engine.Schedule(10, asker.id(), 0, 2);  // seq 1: nothing else due at 10: yes
  engine.Run();
  REQUIRE(asker.taken == std::vector<bool>{false, true});
  // Event 1 scheduled seq 2; event 2 took seq 3 in place and scheduled seq 4.
  REQUIRE(asker.seqs == std::vector<uint64_t>{2, 4});
  REQUIRE(engine.EventsProcessed() == 4);  // the two asked, their two follow-ups

  class Nothing : public EventObserver {
   public:
    void OnEvent(const Event& /*event*/) override {}
  };
  Engine observed;
  Asker asker2(observed);
  Nothing nothing;
  observed.AddObserver(&nothing);
  observed.Schedule(10, asker2.id(), 0, 2);
  observed.Run();
  REQUIRE(asker2.taken == std::vector<bool>{false});  // an observer sees every event: queued
}

Op Collective(const std::string& key, int device, const std::string& group, Bytes bytes) {
  Op op = MakeOp(key, OpKind::kAllReduce, device, "s");
  op.group = group;
  op.tensor = key;
  op.bytes = bytes;
  return op;
}

TEST_CASE("collectives ending at one instant: in place or queued, the same replay") {
  // Two nodes of four GPUs; GPUs 0-1 and 2-3 joined by their own link pairs (fold_cases.h):
  // groups a = {0, 1} and b = {2, 3} own their links, so each all-reduce is one closed-form
  // phase. Every device runs F, A1 (n bytes), G, A2 (a: n bytes, b: n / 2) on one stream. A1 of
  // a and b end at one instant: the first phase end popped sees the other due then and queues
  // its end, the second sees that queued end and queues its own (neither in place). A2 of b ends
  // before A2 of a, each alone at its instant: both in place, two events less.
  const testing::FakeTopology topology = testing::TwoNodes();
  const testing::FakeCost cost(3, 5, 200);
  const Bytes n = 8 << 20;
  Schedule s;
  s.devices = 4;
  s.groups.push_back(Group{"a", {0, 1}, 0});
  s.groups.push_back(Group{"b", {2, 3}, 0});
  for (int d = 0; d < 4; ++d) {
    const std::string dev = ".d" + std::to_string(d);
    const std::string group = d < 2 ? "a" : "b";
    s.ops.push_back(testing::Compute("F" + dev, d, "s", 2, 64));
    s.ops.push_back(Collective("A1" + dev, d, group, n));
    Op g = testing::Compute("G" + dev, d, "s", 2, 64);
    g.microbatch = 1;
    s.ops.push_back(g);
    s.ops.push_back(Collective("A2" + dev, d, group, d < 2 ? n : n / 2));
  }
  auto run = [&](bool queued) {
    ReplayOptions options;
    options.queue_collective_ends = queued;
    auto replay = std::make_unique<Replay>(s, topology, cost, options);
    replay->Run();
    return replay;
  };
  const auto in_place = run(false);
  const auto queued = run(true);
  REQUIRE(in_place->ClosedFormPhases() == 4);
  auto op = [&](const std::string& key) {
    for (size_t i = 0; i < s.ops.size(); ++i) {
      if (s.ops[i].key == key) return static_cast<int>(i);
    }
    FAIL("no op " << key);
    return -1;
  };
  // Several collectives end at one instant (A1), the others alone (A2).
  REQUIRE(queued->EndNs(op("A1.d0")) == queued->EndNs(op("A1.d2")));
  REQUIRE(queued->EndNs(op("A2.d2")) < queued->EndNs(op("A2.d0")));
  REQUIRE(in_place->EndNs() == queued->EndNs());
  for (size_t i = 0; i < s.ops.size(); ++i) {
    INFO(s.ops[i].key);
    const int o = static_cast<int>(i);
    REQUIRE(in_place->StartNs(o) == queued->StartNs(o));
    REQUIRE(in_place->EndNs(o) == queued->EndNs(o));
    REQUIRE(in_place->CriticalPredecessor(o) == queued->CriticalPredecessor(o));
  }
  REQUIRE(in_place->CriticalPath() == queued->CriticalPath());
  REQUIRE(in_place->Events() == queued->Events() - 2);
}

}  // namespace
}  // namespace terasim

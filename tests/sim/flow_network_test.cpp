#include <catch2/catch.hpp>

#include <map>

#include "sim/engine.h"
#include "sim/flow_network.h"

namespace terasim {
namespace {

// Records when each flow (by tag) finished.
class Done : public FlowListener {
 public:
  explicit Done(Engine& engine) : engine_(engine) {}
  void OnFlowDone(int64_t tag) override { finished[tag] = engine_.Now(); }
  std::map<int64_t, TimeNs> finished;

 private:
  Engine& engine_;
};

TEST_CASE("A flow pays its latency, then moves its bytes at the link bandwidth") {
  Engine engine;
  Done done(engine);
  FlowNetwork network(engine, {1e9}, done);  // 1 GB/s = 1 byte/ns
  network.StartFlow({0}, 1000, 500, 7);
  engine.Run();
  // latency + bytes / B = 500 + 1000 ns.
  REQUIRE(done.finished.at(7) == 1500);
}

TEST_CASE("Two flows sharing a link each take twice as long, and speed up when one leaves") {
  Engine engine;
  Done done(engine);
  FlowNetwork network(engine, {1e9}, done);
  network.StartFlow({0}, 1000, 0, 1);
  network.StartFlow({0}, 3000, 0, 2);
  engine.Run();
  // Both at 0.5 B/ns until flow 1 ends at 1000 / 0.5 = 2000 ns; flow 2 has moved 1000 bytes and
  // moves its last 2000 alone at 1 B/ns: ends at 4000 ns.
  REQUIRE(done.finished.at(1) == 2000);
  REQUIRE(done.finished.at(2) == 4000);
  // The link was busy from 0 to 4000 ns.
  REQUIRE(network.BusyNs(0) == 4000);
}

TEST_CASE("Flows on disjoint links do not slow each other") {
  Engine engine;
  Done done(engine);
  FlowNetwork network(engine, {1e9, 2e9}, done);
  network.StartFlow({0}, 1000, 0, 1);
  network.StartFlow({1}, 1000, 0, 2);
  engine.Run();
  // 1000 / 1 and 1000 / 2 ns.
  REQUIRE(done.finished.at(1) == 1000);
  REQUIRE(done.finished.at(2) == 500);
}

}  // namespace
}  // namespace terasim

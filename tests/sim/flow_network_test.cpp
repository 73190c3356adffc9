#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "sim/engine.h"
#include "sim/flow_network.h"
#include "sim/max_min_fair.h"

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

TEST_CASE("The network's incremental rates are the reference max-min rates on random routes") {
  // 40 random flows over 12 channels of random capacity, all starting at 0 without latency: the
  // rate sampler reports each channel's total after the first recomputation, which must be the
  // sum of MaxMinFairRates' rates of the flows crossing it (the incremental solver, restricted
  // to connected components, does the same progressive filling). Summation order may differ,
  // hence the relative margin of 1e-12.
  std::mt19937 rng(12);
  for (int trial = 0; trial < 20; ++trial) {
    const int channels = 12;
    std::vector<double> capacity(channels);
    for (double& c : capacity) c = 1e9 * (1 + rng() % 9);
    std::vector<std::vector<int>> routes(40);
    for (auto& route : routes) {
      const int hops = 1 + static_cast<int>(rng() % 3);
      for (int h = 0; h < hops; ++h) route.push_back(static_cast<int>(rng() % channels));
      std::sort(route.begin(), route.end());
      route.erase(std::unique(route.begin(), route.end()), route.end());
    }
    Engine engine;
    Done done(engine);
    FlowNetwork network(engine, capacity, done);
    std::map<int, double> first_total;  // channel -> total rate at time 0
    network.SetRateSampler([&](TimeNs t, int c, double rate) {
      if (t == 0) first_total[c] = rate;
    });
    for (size_t f = 0; f < routes.size(); ++f) {
      network.StartFlow(routes[f], 1e6 * (1 + rng() % 5), 0, static_cast<int64_t>(f));
    }
    engine.Run();
    const std::vector<double> rates = MaxMinFairRates(capacity, routes);
    std::vector<double> expected(channels, 0.0);
    for (size_t f = 0; f < routes.size(); ++f) {
      for (int c : routes[f]) expected[c] += rates[f];
    }
    for (int c = 0; c < channels; ++c) {
      INFO("trial " << trial << " channel " << c);
      REQUIRE(first_total[c] == Approx(expected[c]).epsilon(1e-12));
    }
    REQUIRE(done.finished.size() == routes.size());
  }
}

TEST_CASE("Flows finishing at the same time are reported in the order they were started") {
  // Four equal flows on four links with the same latency: they activate together (one engine
  // event) and finish together at 100 + 1000 ns; the listener hears them in start order, as it
  // would with one event each.
  Engine engine;
  std::vector<int64_t> order;
  class Recorder : public FlowListener {
   public:
    explicit Recorder(std::vector<int64_t>& order) : order_(order) {}
    void OnFlowDone(int64_t tag) override { order_.push_back(tag); }

   private:
    std::vector<int64_t>& order_;
  } recorder(order);
  FlowNetwork network(engine, {1e9, 1e9, 1e9, 1e9}, recorder);
  for (int f : {3, 1, 0, 2}) network.StartFlow({f}, 1000, 100, 10 + f);
  engine.Run();
  REQUIRE(order == std::vector<int64_t>{13, 11, 10, 12});
  REQUIRE(engine.Now() == 1100);
}

}  // namespace
}  // namespace terasim

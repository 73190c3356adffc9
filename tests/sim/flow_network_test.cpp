#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
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

TEST_CASE("CeilToNs is max(0, ceil(x)) in whole ns") {
  // The reference expression it replaces, on the cases that matter: zero and below, fractions
  // just above and below whole numbers, whole numbers, around 2^53 (above it every double is
  // whole), huge values, infinity, NaN, and random quotients as the finishes compute them.
  auto reference = [](double x) { return static_cast<TimeNs>(std::max(0.0, std::ceil(x))); };
  std::vector<double> xs = {0.0,
                            -0.0,
                            -1e-6,
                            -0.5,
                            -3.0,
                            1e-300,
                            1e-6,
                            0.5,
                            1.0,
                            1.5,
                            2.0,
                            1e9,
                            1e9 + 0.25,
                            4.5e15,
                            9007199254740991.0,
                            9007199254740992.0,
                            9007199254740993.0,
                            1e17 + 3,
                            8.9e18};
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> amount(0, 1e12), rate(1, 1e11);
  for (int k = 0; k < 10000; ++k) xs.push_back(amount(random) / rate(random) * 1e9 - 1e-6);
  for (double x : xs) {
    INFO(x);
    REQUIRE(CeilToNs(x) == reference(x));
    REQUIRE(CeilToNs(std::nextafter(x, 0.0)) == reference(std::nextafter(x, 0.0)));
    REQUIRE(CeilToNs(std::nextafter(x, 1e300)) == reference(std::nextafter(x, 1e300)));
  }
  REQUIRE(CeilToNs(std::numeric_limits<double>::quiet_NaN()) ==
          reference(std::numeric_limits<double>::quiet_NaN()));
}

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

TEST_CASE("A flow leaving a link it had alone costs no rate recomputation event") {
  Engine engine;
  Done done(engine);
  FlowNetwork network(engine, {1e9, 1e9}, done);
  network.StartFlow({0}, 1000, 0, 1);
  network.StartFlow({1}, 3000, 0, 2);
  // Events: one recomputation at 0 (both joins), finishes at 1000 and 3000 ns. Each finish
  // empties its link and leaves nothing to re-solve: no recomputation after it (there were 5
  // events when each finish scheduled one).
  REQUIRE(engine.Run() == 3);
  REQUIRE(done.finished.at(1) == 1000);
  REQUIRE(done.finished.at(2) == 3000);
  REQUIRE(network.BusyNs(0) == 1000);
  REQUIRE(network.BusyNs(1) == 3000);
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

// A from-scratch replay of the same flows: at every instant where a flow arrives or finishes,
// every moving flow is brought to now and MaxMinFairRates re-solves the whole network; a flow
// whose rate changed is due at now + ceil(remaining / rate - 1e-6 ns), as in FlowNetwork.
std::vector<TimeNs> ReferenceFinishes(const std::vector<double>& capacity,
                                      const std::vector<std::vector<int>>& routes,
                                      const std::vector<double>& amount,
                                      const std::vector<TimeNs>& arrival) {
  const int n = static_cast<int>(routes.size());
  const TimeNs kNever = std::numeric_limits<TimeNs>::max();
  std::vector<TimeNs> finish(n, kNever), due(n, kNever), last(n, 0);
  std::vector<double> remaining = amount, rate(n, 0.0);
  std::vector<bool> moving(n, false);
  TimeNs now = *std::min_element(arrival.begin(), arrival.end());
  for (;;) {
    for (int f = 0; f < n; ++f) {
      if (moving[f] && due[f] == now) {
        moving[f] = false;
        finish[f] = now;
      } else if (!moving[f] && finish[f] == kNever && arrival[f] == now) {
        moving[f] = true;
        last[f] = now;
      }
    }
    std::vector<int> active;
    std::vector<std::vector<int>> active_routes;
    for (int f = 0; f < n; ++f) {
      if (!moving[f]) continue;
      remaining[f] = std::max(0.0, remaining[f] - rate[f] * 1e-9 * (now - last[f]));
      last[f] = now;
      active.push_back(f);
      active_routes.push_back(routes[f]);
    }
    const std::vector<double> rates = MaxMinFairRates(capacity, active_routes);
    for (size_t k = 0; k < active.size(); ++k) {
      const int f = active[k];
      if (rates[k] == rate[f]) continue;
      rate[f] = rates[k];
      const double ns = remaining[f] / rate[f] * 1e9;
      due[f] = now + static_cast<TimeNs>(std::max(0.0, std::ceil(ns - 1e-6)));
    }
    TimeNs next = kNever;
    for (int f = 0; f < n; ++f) {
      if (moving[f]) next = std::min(next, due[f]);
      if (!moving[f] && finish[f] == kNever) next = std::min(next, arrival[f]);
    }
    if (next == kNever) return finish;
    now = next;
  }
}

// Runs the flows in a FlowNetwork and requires each to finish when ReferenceFinishes says. With
// `first_total`, records there each channel's total rate at time 0 (the rate sampler's).
void RequireReferenceFinishes(const std::vector<double>& capacity,
                              const std::vector<std::vector<int>>& routes,
                              const std::vector<double>& amount, const std::vector<TimeNs>& arrival,
                              int trial, std::map<int, double>* first_total = nullptr) {
  Engine engine;
  Done done(engine);
  FlowNetwork network(engine, capacity, done);
  if (first_total != nullptr) {
    network.SetRateSampler([first_total](TimeNs t, int c, double rate) {
      if (t == 0) (*first_total)[c] = rate;
    });
  }
  const int n = static_cast<int>(routes.size());
  for (int f = 0; f < n; ++f) network.StartFlow(routes[f], amount[f], arrival[f], f);
  engine.Run();
  const std::vector<TimeNs> expected = ReferenceFinishes(capacity, routes, amount, arrival);
  for (int f = 0; f < n; ++f) {
    INFO("trial " << trial << " flow " << f);
    REQUIRE(done.finished.at(f) == expected[f]);
  }
}

TEST_CASE("Flows arriving and leaving finish when a from-scratch max-min replay says, to the ns") {
  // 60 flows over 10 channels, arriving at random times (their latency) with random amounts,
  // over 1-3 random hops (a repeated hop is a crossing of weight 2 or 3). FlowNetwork re-solves
  // only the components an arrival or a departure touches, each on its own, in closed form for
  // one channel or one flow; the reference re-solves every flow at every change. Max-min rates
  // do not depend on flows outside a flow's component, so every finish must agree.
  std::mt19937 rng(7);
  int weighted = 0;
  for (int trial = 0; trial < 30; ++trial) {
    const int channels = 10;
    const int n = 60;
    std::vector<double> capacity(channels);
    for (double& c : capacity) c = 1e9 * (1 + rng() % 9);
    std::vector<std::vector<int>> routes(n);
    std::vector<double> amount(n);
    std::vector<TimeNs> arrival(n);
    for (int f = 0; f < n; ++f) {
      const int hops = 1 + static_cast<int>(rng() % 3);
      for (int h = 0; h < hops; ++h) routes[f].push_back(static_cast<int>(rng() % channels));
      std::vector<int> distinct = routes[f];
      std::sort(distinct.begin(), distinct.end());
      weighted += std::unique(distinct.begin(), distinct.end()) != distinct.end();
      amount[f] = 1e4 * (1 + rng() % 50);
      arrival[f] = static_cast<TimeNs>(rng() % 200000);
    }
    RequireReferenceFinishes(capacity, routes, amount, arrival, trial);
  }
  REQUIRE(weighted > 0);  // some flows did cross a channel twice
}

TEST_CASE("Flows of several routes meeting at one narrow link finish when the reference says") {
  // Pipeline transfers out of one node: each flow crosses the narrow channel 0 (1 GB/s) and 1-3
  // random wide channels (8-12 GB/s: their share of at most 40 crossings stays above channel
  // 0's), so channel 0 is every component's first bottleneck and carries all its flows: the
  // closed form gives each flow channel 0's share. One flow in five skips channel 0, so that
  // some components have no such bottleneck and take progressive filling. Finishes must equal
  // the from-scratch reference to the ns, and the totals at time 0 MaxMinFairRates'.
  std::mt19937 rng(31);
  int skipped = 0;
  for (int trial = 0; trial < 30; ++trial) {
    const int channels = 9;
    const int n = 40;
    std::vector<double> capacity(channels, 1e9);
    for (int c = 1; c < channels; ++c) capacity[c] = 1e9 * (8 + rng() % 5);
    std::vector<std::vector<int>> routes(n);
    std::vector<double> amount(n);
    std::vector<TimeNs> arrival(n);
    for (int f = 0; f < n; ++f) {
      const bool narrow = rng() % 5 != 0;
      skipped += !narrow;
      if (narrow) routes[f].push_back(0);
      const int hops = 1 + static_cast<int>(rng() % 3);
      for (int h = 0; h < hops; ++h) routes[f].push_back(1 + static_cast<int>(rng() % 8));
      amount[f] = 1e4 * (1 + rng() % 50);
      arrival[f] = trial % 2 == 0 ? 0 : static_cast<TimeNs>(rng() % 100000);
    }
    std::map<int, double> first_total;  // channel -> total rate at time 0
    RequireReferenceFinishes(capacity, routes, amount, arrival, trial, &first_total);
    if (trial % 2 != 0) continue;
    // All start at 0: channel 0 carries the flows crossing it at 1e9 / their crossings each.
    const std::vector<double> rates = MaxMinFairRates(capacity, routes);
    std::vector<double> total(channels, 0.0);
    for (int f = 0; f < n; ++f) {
      for (int c : routes[f]) total[c] += rates[f];
    }
    for (int c = 0; c < channels; ++c) {
      INFO("trial " << trial << " channel " << c);
      REQUIRE(first_total[c] == Approx(total[c]).epsilon(1e-12));
    }
  }
  REQUIRE(skipped > 0);
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

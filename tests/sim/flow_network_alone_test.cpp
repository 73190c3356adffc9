// FlowNetwork's paths without a recomputation event (an activation batch alone on idle
// channels, a finish batch that leaves its channels empty) against the general path. A rate
// sampler turns both off (sim/flow_network.h), so the same run with a no-op sampler is the
// reference: it must give the same finish times and the same order of every event.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "sim/engine.h"
#include "sim/flow_network.h"

namespace terasim {
namespace {

// One log of everything observable, in dispatch order: finishes (by tag) and the test's own
// events (by label), each with its time.
struct Log {
  std::vector<std::pair<TimeNs, int64_t>> entries;
};

class Recorder : public FlowListener {
 public:
  Recorder(Engine& engine, Log& log) : engine_(engine), log_(log) {}
  void OnFlowDone(int64_t tag) override { log_.entries.emplace_back(engine_.Now(), tag); }

 private:
  Engine& engine_;
  Log& log_;
};

// Unrelated events: logged as -label - 1; event.b > 0 schedules one more (label + 1000) that
// much later, so that it lands at the time a flow finishes.
class Unrelated : public EventHandler {
 public:
  Unrelated(Engine& engine, Log& log) : engine_(engine), log_(log), id_(engine.AddHandler(this)) {}
  void Schedule(TimeNs time_ns, int64_t label, TimeNs then_ns = 0) {
    engine_.Schedule(time_ns, id_, 0, label, then_ns);
  }
  void Handle(const Event& event) override {
    log_.entries.emplace_back(event.time_ns, -event.a - 1);
    if (event.b > 0) engine_.Schedule(event.time_ns + event.b, id_, 0, event.a + 1000, 0);
    if (network != nullptr && event.a % 3 == 0) {
      // A flow started at this event's time: latency 0 (joins now) or 10-30 ns.
      const int64_t a = event.a;
      network->StartFlow({static_cast<int>(a % 5), static_cast<int>((a / 3 + 1) % 5)},
                         100.0 * (1 + a % 7), 10 * (a % 4), 100 + a);
    }
  }
  FlowNetwork* network = nullptr;  // when set, every third label starts a flow

 private:
  Engine& engine_;
  Log& log_;
  int id_;
};

struct Run {
  Log log;
  int64_t events = 0;
};

// Runs `setup` on a fresh engine and network of `capacities`, with a no-op rate sampler
// (the general path) or without one.
template <typename Setup>
Run RunWith(bool general, const std::vector<double>& capacities, Setup setup) {
  Run run;
  Engine engine;
  Recorder recorder(engine, run.log);
  Unrelated unrelated(engine, run.log);
  FlowNetwork network(engine, capacities, recorder);
  if (general) network.SetRateSampler([](TimeNs, int, double) {});
  setup(network, unrelated);
  run.events = engine.Run();
  return run;
}

template <typename Setup>
void RequireSameAsGeneral(const std::vector<double>& capacities, Setup setup) {
  const Run fast = RunWith(false, capacities, setup);
  const Run general = RunWith(true, capacities, setup);
  REQUIRE(fast.log.entries == general.log.entries);
  REQUIRE(fast.events <= general.events);
}

TEST_CASE(
    "A flow alone on its channels finishes after latency + amount / rate, in one event less") {
  Engine engine;
  Log log;
  Recorder recorder(engine, log);
  FlowNetwork network(engine, {1e9, 0.5e9}, recorder);  // 1 and 0.5 bytes per ns
  network.StartFlow({0, 1}, 1000, 100, 7);
  // Events: its activation at 100 ns and its finish at 100 + 1000 / 0.5 = 2100 ns (the narrower
  // channel). The recomputation event that used to follow the activation is gone: 2, not 3.
  REQUIRE(engine.Run() == 2);
  REQUIRE(log.entries == std::vector<std::pair<TimeNs, int64_t>>{{2100, 7}});
  REQUIRE(network.BusyNs(0) == 2000);
}

TEST_CASE("Flows finishing together and leaving their channel empty schedule no recomputation") {
  Engine engine;
  Log log;
  Recorder recorder(engine, log);
  FlowNetwork network(engine, {1e9}, recorder);
  network.StartFlow({0}, 1000, 0, 1);
  network.StartFlow({0}, 1000, 0, 2);
  // One recomputation at 0 (both at 0.5 byte/ns) and one finish batch at 2000 ns. The first
  // finish used to schedule a recomputation for the second flow, which the second finish left
  // with nothing to solve: 2 events, not 3.
  REQUIRE(engine.Run() == 2);
  REQUIRE(log.entries == std::vector<std::pair<TimeNs, int64_t>>{{2000, 1}, {2000, 2}});
}

TEST_CASE("An event due when a lone flow finishes keeps its place before or after the finish") {
  // The flow (latency 100 ns, 1000 bytes at 1 byte/ns) finishes at 1100 ns. Unrelated events
  // schedule events at 1100 ns from before the flow starts (before its finish), from t = 100
  // before and after the activation (before its finish: the recomputation that schedules it
  // comes after them), and from the finish's own time (after it).
  const auto setup = [](FlowNetwork& network, Unrelated& unrelated) {
    unrelated.Schedule(0, 1, 1100);    // -> label 1001 at 1100, seq before everything below
    unrelated.Schedule(100, 2, 1000);  // at 100, queued before the activation: 1002 at 1100
    network.StartFlow({0}, 1000, 100, 50);
    unrelated.Schedule(100, 3, 1000);  // at 100, queued after the activation: 1003 at 1100
    unrelated.Schedule(1100, 4);       // at 1100, queued before the flow starts
  };
  const Run fast = RunWith(false, {1e9}, setup);
  const Run general = RunWith(true, {1e9}, setup);
  REQUIRE(fast.log.entries == general.log.entries);
  // At 1100 by seq: label 4 (queued at setup), 1001 (at t = 0), 1002 and 1003 (at t = 100,
  // before the recomputation ran: label 3 was due at 100 after the activation, so the fast
  // path was not taken), then the finish.
  const std::vector<std::pair<TimeNs, int64_t>> at_1100(fast.log.entries.end() - 5,
                                                        fast.log.entries.end());
  REQUIRE(at_1100 ==
          std::vector<std::pair<TimeNs, int64_t>>{
              {1100, -4 - 1}, {1100, -1001 - 1}, {1100, -1002 - 1}, {1100, -1003 - 1}, {1100, 50}});
}

TEST_CASE("A lone activation with nothing else due takes the fast path and keeps the tie order") {
  // Nothing else at t = 100 when the flow joins (the fast path). Events due at 1100 ns that were
  // queued before the activation (at setup, and by an event at t = 0) come before the finish,
  // as the general path orders them, with fewer events.
  const auto setup = [](FlowNetwork& network, Unrelated& unrelated) {
    unrelated.Schedule(0, 1, 1100);  // -> 1001 at 1100
    network.StartFlow({0}, 1000, 100, 50);
    unrelated.Schedule(1100, 2, 0);
  };
  const Run fast = RunWith(false, {1e9}, setup);
  const Run general = RunWith(true, {1e9}, setup);
  REQUIRE(fast.log.entries == general.log.entries);
  REQUIRE(fast.log.entries.back() == std::pair<TimeNs, int64_t>{1100, 50});
  // general: activation, recomputation at 100 and at 1100 (the sampler's drop to 0); fast:
  // neither recomputation.
  REQUIRE(fast.events == general.events - 2);
}

TEST_CASE(
    "Batches of flows on one route, on several routes, or sharing channels match the general "
    "path") {
  // Channels 0-3, 1 byte/ns each but channel 3 (2 bytes/ns). Routes started together with one
  // latency form one activation batch.
  const std::vector<double> capacities = {1e9, 1e9, 1e9, 2e9};
  SECTION("one route, several flows (one component)") {
    RequireSameAsGeneral(capacities, [](FlowNetwork& network, Unrelated&) {
      network.StartFlow({0, 3}, 1000, 10, 1);
      network.StartFlow({0, 3}, 1000, 10, 2);
      network.StartFlow({0, 3}, 3000, 10, 3);
    });
  }
  SECTION("routes interleaved in the batch: finishes by route, then batch order") {
    RequireSameAsGeneral(capacities, [](FlowNetwork& network, Unrelated&) {
      network.StartFlow({0}, 1000, 10, 1);
      network.StartFlow({1, 3}, 500, 10, 2);
      network.StartFlow({0}, 1000, 10, 3);
      network.StartFlow({2, 2}, 250, 10, 4);  // weight 2: 0.5 byte/ns
    });
  }
  SECTION("two routes sharing a channel (progressive filling)") {
    RequireSameAsGeneral(capacities, [](FlowNetwork& network, Unrelated&) {
      network.StartFlow({0, 1}, 1000, 10, 1);
      network.StartFlow({1, 2}, 1000, 10, 2);
    });
  }
  SECTION("a batch joining a busy channel") {
    RequireSameAsGeneral(capacities, [](FlowNetwork& network, Unrelated&) {
      network.StartFlow({0}, 5000, 0, 1);
      network.StartFlow({0}, 1000, 10, 2);
    });
  }
}

TEST_CASE("Lone flows, one per activation, finish as the closed form and the general path say") {
  // Each flow starts when the previous one is done (so it activates alone on idle channels:
  // the one-flow fast path), on up to 4 of 5 channels with repeats (weights). Expected finish:
  // start + latency + ceil(amount / rate x 1e9 - 1e-6) ns, rate = min over its channels of
  // capacity / weight (progressive filling of one flow).
  const std::vector<double> capacities = {1e9, 0.75e9, 2e9, 0.3e9, 1.5e9};
  for (int seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> channel(0, 4), hops(1, 4), latency(0, 50), amount(1, 5000);
    struct Lone {
      std::vector<int> route;
      double amount;
      TimeNs latency_ns;
    };
    std::vector<Lone> flows(12);
    for (Lone& flow : flows) {
      const int n = hops(rng);
      for (int k = 0; k < n; ++k) flow.route.push_back(channel(rng));
      flow.amount = amount(rng);
      flow.latency_ns = latency(rng);
    }
    // The chain: flow f + 1 starts from flow f's finish (the listener starts it).
    std::vector<std::pair<TimeNs, int64_t>> expected;
    TimeNs t = 0;
    for (size_t f = 0; f < flows.size(); ++f) {
      double rate = 0;
      for (int c : flows[f].route) {
        const double share =
            capacities[c] / std::count(flows[f].route.begin(), flows[f].route.end(), c);
        if (rate == 0 || share < rate) rate = share;
      }
      t +=
          flows[f].latency_ns + static_cast<TimeNs>(std::ceil(flows[f].amount / rate * 1e9 - 1e-6));
      expected.emplace_back(t, static_cast<int64_t>(f));
    }
    for (const bool general : {false, true}) {
      Engine engine;
      Log log;
      class Chain : public FlowListener {
       public:
        Chain(Engine& engine, Log& log, const std::vector<Lone>& flows)
            : engine_(engine), log_(log), flows_(flows) {}
        void OnFlowDone(int64_t tag) override {
          log_.entries.emplace_back(engine_.Now(), tag);
          if (tag + 1 < static_cast<int64_t>(flows_.size())) Start(tag + 1);
        }
        void Start(int64_t f) {
          const Lone& flow = flows_[f];
          network->StartFlow(flow.route, flow.amount, flow.latency_ns, f);
        }
        FlowNetwork* network = nullptr;

       private:
        Engine& engine_;
        Log& log_;
        const std::vector<Lone>& flows_;
      } chain(engine, log, flows);
      FlowNetwork network(engine, capacities, chain);
      if (general) network.SetRateSampler([](TimeNs, int, double) {});
      chain.network = &network;
      chain.Start(0);
      engine.Run();
      INFO("seed " << seed << (general ? " general" : " fast"));
      REQUIRE(log.entries == expected);
    }
  }
}

TEST_CASE(
    "Random flows and unrelated events at tied times match the general path, event by event") {
  // Small latencies, amounts and capacities so that activations, finishes and unrelated events
  // often fall on the same ns; flows on up to 3 of 5 channels, some repeated (weights).
  for (int seed = 1; seed <= 40; ++seed) {
    const auto setup = [seed](FlowNetwork& network, Unrelated& unrelated) {
      std::mt19937 rng(seed);
      std::uniform_int_distribution<int> channel(0, 4), hops(1, 3), latency(0, 4), amount(1, 8),
          when(0, 60);
      for (int f = 0; f < 30; ++f) {
        std::vector<int> route;
        const int n = hops(rng);
        for (int k = 0; k < n; ++k) route.push_back(channel(rng));
        network.StartFlow(route, 100.0 * amount(rng), 10 * latency(rng), f);
      }
      for (int u = 0; u < 30; ++u) unrelated.Schedule(10 * when(rng), u, 10 * latency(rng) + 100);
      unrelated.network = &network;
    };
    INFO("seed " << seed);
    RequireSameAsGeneral({1e9, 1e9, 2e9, 0.5e9, 1e9}, setup);
  }
}

}  // namespace
}  // namespace terasim

// Weighted flows (a channel listed k times in a route: a crossing of weight k, as a folded flow
// standing for k identical flows has, sim/symmetry_fold.h): the weighted max-min closed forms,
// and a weight-k flow behaving exactly as k identical flows in MaxMinFairRates and FlowNetwork.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <vector>

#include "sim/engine.h"
#include "sim/flow_network.h"
#include "sim/max_min_fair.h"

namespace terasim {
namespace {

// Writes each flow's finish time (by tag) into `at`.
struct Recorder : FlowListener {
  Recorder(const Engine* e, std::map<int64_t, TimeNs>* a) : engine(e), at(a) {}
  void OnFlowDone(int64_t tag) override { (*at)[tag] = engine->Now(); }
  const Engine* engine;
  std::map<int64_t, TimeNs>* at;
};

// `route` with every channel listed `weight` times.
std::vector<int> Weighted(const std::vector<int>& route, int weight) {
  std::vector<int> out;
  for (int c : route) {
    for (int k = 0; k < weight; ++k) out.push_back(c);
  }
  return out;
}

TEST_CASE("a weight-3 and a weight-1 flow on one link get 3C/4 and C/4") {
  const double c = 8e9;
  const std::vector<double> rates = MaxMinFairRates({c}, {{0, 0, 0}, {0}});
  // Fair share C / (3 + 1) per crossing: each flow's rate C / 4; the weight-3 flow uses 3C / 4.
  REQUIRE(rates[0] == c / 4);
  REQUIRE(rates[1] == c / 4);
  REQUIRE(3 * rates[0] + rates[1] == c);
}

TEST_CASE("a weight on one link only: the weighted flow's bottleneck is where it counts most") {
  // Links A (10 GB/s) and B (6 GB/s). Flow 0 crosses A with weight 4 and B once; flow 1 crosses
  // B alone. A's share 10 / 4 = 2.5 < B's 6 / 2 = 3: flow 0 is fixed at 2.5 by A; B then has
  // 6 - 2.5 = 3.5 for flow 1.
  const std::vector<double> rates = MaxMinFairRates({10e9, 6e9}, {{0, 0, 0, 0, 1}, {1}});
  REQUIRE(rates[0] == Approx(2.5e9));
  REQUIRE(rates[1] == Approx(3.5e9));
}

TEST_CASE("a weight-k flow gets the rate of each of k identical flows") {
  // Random networks: flow f of weight k_f on some of its channels against the same flows with
  // the weighted crossings replaced by k_f identical weight-1 flows (the unfolded replay).
  std::mt19937 rng(12);
  for (int trial = 0; trial < 200; ++trial) {
    const int channels = 2 + static_cast<int>(rng() % 5);
    std::vector<double> capacity;
    for (int c = 0; c < channels; ++c) capacity.push_back(1e9 * (1 + rng() % 9));
    const int flows = 1 + static_cast<int>(rng() % 5);
    std::vector<std::vector<int>> weighted, unfolded;
    std::vector<int> first;  // per weighted flow: its first copy among the unfolded flows
    for (int f = 0; f < flows; ++f) {
      std::vector<int> route;
      for (int c = 0; c < channels; ++c) {
        if (rng() % 2 == 0) route.push_back(c);
      }
      if (route.empty()) route.push_back(0);
      const int k = 1 + static_cast<int>(rng() % 4);
      weighted.push_back(Weighted(route, k));
      first.push_back(static_cast<int>(unfolded.size()));
      for (int copy = 0; copy < k; ++copy) unfolded.push_back(route);
    }
    const std::vector<double> a = MaxMinFairRates(capacity, weighted);
    const std::vector<double> b = MaxMinFairRates(capacity, unfolded);
    for (int f = 0; f < flows; ++f) {
      INFO("trial " << trial << ", flow " << f);
      REQUIRE(a[f] == Approx(b[first[f]]).epsilon(1e-12));
    }
  }
}

TEST_CASE("a weighted flow moves as its k copies would, and leaves its whole weight") {
  Engine engine;
  std::map<int64_t, TimeNs> at;
  Recorder done(&engine, &at);
  FlowNetwork network(engine, {1e9}, done);  // 1 byte/ns
  network.StartFlow({0, 0, 0}, 1000, 0, 1);  // stands for 3 flows of 1000 bytes
  network.StartFlow({0}, 3000, 0, 2);
  engine.Run();
  // 4 crossings: 0.25 byte/ns each until flow 1 has moved its 1000 bytes at 4000 ns; flow 2 has
  // moved 1000 and moves its last 2000 alone at 1 byte/ns: 6000 ns.
  REQUIRE(at.at(1) == 4000);
  REQUIRE(at.at(2) == 6000);
  REQUIRE(network.BusyNs(0) == 6000);
  REQUIRE(network.ActiveFlows() == 0);
}

// Starts flows at given times (kind k: the k-th flow of `starts`).
class Starter : public EventHandler {
 public:
  struct Start {
    TimeNs at_ns;
    std::vector<int> route;
    double amount;
    TimeNs latency_ns;
    int64_t tag;
  };
  Starter(Engine& engine, FlowNetwork& network, std::vector<Start> starts)
      : network_(network), starts_(std::move(starts)) {
    const int id = engine.AddHandler(this);
    for (size_t k = 0; k < starts_.size(); ++k) engine.Schedule(starts_[k].at_ns, id, k);
  }
  void Handle(const Event& event) override {
    const Start& s = starts_[event.kind];
    network_.StartFlow(s.route, s.amount, s.latency_ns, s.tag);
  }

 private:
  FlowNetwork& network_;
  std::vector<Start> starts_;
};

std::map<int64_t, TimeNs> Run(const std::vector<double>& capacity,
                              std::vector<Starter::Start> starts) {
  Engine engine;
  std::map<int64_t, TimeNs> at;
  Recorder done(&engine, &at);
  FlowNetwork network(engine, capacity, done);
  Starter starter(engine, network, std::move(starts));
  engine.Run();
  return at;
}

TEST_CASE("weighted flows in a network finish when their unfolded copies do") {
  // Channel 0: a NIC (3 GB/s) shared by 8 GPUs; channels 1-4: the uplinks of 4 PCIe switches
  // (4 GB/s) each shared by 2 GPUs; channel 5: another GPU's own link to the NIC. Unfolded: the 8
  // GPUs' identical transfers (tags 0-7) at 0 ns, then a transfer from the other GPU (tag 100)
  // at 200 us. Folded: GPU 0's transfer alone, weight 8 on the NIC and 2 on its switch. Tag 0
  // and tag 100 finish at the same ns in both.
  const std::vector<double> capacity = {3e9, 4e9, 4e9, 4e9, 4e9, 1e9};
  std::vector<Starter::Start> unfolded, folded;
  for (int g = 0; g < 8; ++g) unfolded.push_back({0, {1 + g / 2, 0}, 1e6, 1000, g});
  unfolded.push_back({200000, {5, 0}, 5e5, 1000, 100});
  folded.push_back({0, {1, 1, 0, 0, 0, 0, 0, 0, 0, 0}, 1e6, 1000, 0});
  folded.push_back(unfolded.back());
  const std::map<int64_t, TimeNs> a = Run(capacity, unfolded);
  const std::map<int64_t, TimeNs> b = Run(capacity, folded);
  for (int g = 1; g < 8; ++g) REQUIRE(a.at(g) == a.at(0));
  REQUIRE(b.at(0) == a.at(0));
  REQUIRE(b.at(100) == a.at(100));
  // By hand: 8 flows at 3/8 GB/s on the NIC (their switches: 2 x 0.375 < 4 GB/s) from 1 us (the
  // latency) to 201 us, when the other transfer joins: 200 us x 0.375 B/ns = 75000 B moved. Then
  // 9 crossings at 1/3 B/ns each.
  const double moved = 200000 * 0.375;
  const double rest_ns = (1e6 - moved) / (3.0 / 9);
  const double other_ns = 5e5 / (3.0 / 9);
  // The other transfer (5e5 B at 1/3 B/ns: 1.5 ms) ends before them; they then finish alone.
  REQUIRE(other_ns < rest_ns);
  REQUIRE(a.at(100) == Approx(201000 + other_ns).margin(2));
  const double left = 1e6 - moved - other_ns / 3;
  REQUIRE(a.at(0) == Approx(201000 + other_ns + left / 0.375).margin(2));
}

}  // namespace
}  // namespace terasim

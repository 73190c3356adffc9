// GenerateForReplay (schedule/generator.h): Generate's ops with their keys held apart and no
// tensor names (a SEND / RECV pair is named by its Op::tensor_id alone); SimulateGenerated, which
// replays it, gives Simulate's result of the representatives' schedule with its keys (critical path
// and trace rows included).
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "schedule/generator.h"
#include "sim/simulator.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fake_topology.h"
#include "tests/sim/fold_cases.h"

namespace terasim {
namespace {

constexpr auto Options = testing::FoldOptions;

// Options(strategy, 2, 2, 2) with `set` applied.
template <typename Set>
GenerateOptions With(Strategy strategy, Set set) {
  GenerateOptions o = Options(strategy, 2, 2, 2);
  set(o);
  return o;
}

// The generator families and recipes at dp 2 pp 2 tp 2 (the recipes each emit their own
// collectives: sequence parallelism's gathers and scatters, ZeRO's, the flattened barrier, a
// broadcast boundary's BROADCAST).
std::vector<std::pair<std::string, GenerateOptions>> Cases() {
  std::vector<std::pair<std::string, GenerateOptions>> cases;
  for (Strategy s :
       {Strategy::kGpipe, Strategy::kOneFOneB, Strategy::kInterleaved, Strategy::kTeraPipe,
        Strategy::kZbH1, Strategy::kInterleavedZb, Strategy::kZbV, Strategy::kDualPipeV}) {
    cases.emplace_back(StrategyName(s), Options(s, 2, 2, 2));
  }
  cases.emplace_back("sp + full recompute", With(Strategy::kOneFOneB, [](GenerateOptions& o) {
                       o.sequence_parallel = true;
                       o.recompute = Recompute::kFull;
                     }));
  cases.emplace_back("zero-1", With(Strategy::kOneFOneB, [](GenerateOptions& o) { o.zero = 1; }));
  cases.emplace_back("zero-3", With(Strategy::kGpipe, [](GenerateOptions& o) { o.zero = 3; }));
  cases.emplace_back("broadcast boundary", With(Strategy::kGpipe, [](GenerateOptions& o) {
                       o.boundary = Boundary::kBroadcast;
                     }));
  return cases;
}

}  // namespace

TEST_CASE("GenerateForReplay writes Generate's ops with the keys apart and no tensor names") {
  for (const auto& [name, options] : Cases()) {
    INFO(name);
    const Schedule named = Generate(options);
    OpKeys keys;
    const Schedule apart = GenerateForReplay(options, &keys);
    REQUIRE(apart.ops.size() == named.ops.size());
    REQUIRE(keys.Size() == named.ops.size());
    CHECK(apart.after_ops.begin == named.after_ops.begin);
    CHECK(apart.after_ops.op == named.after_ops.op);
    CHECK(apart.devices == named.devices);
    CHECK(apart.groups.size() == named.groups.size());
    int collectives = 0;
    // (sender, receiver, tensor) of Generate's SEND / RECV -> GenerateForReplay's tensor id,
    // and back.
    std::map<std::tuple<int, int, std::string>, int64_t> id_of;
    std::map<std::tuple<int, int, int64_t>, std::string> name_of;
    for (size_t i = 0; i < named.ops.size(); ++i) {
      const Op& a = apart.ops[i];
      const Op& b = named.ops[i];
      INFO("op " << i << " " << b.key);
      // Each key is Generate's, in the buffer; the op's key and `after` references are empty,
      // one per dependency as Generate's.
      REQUIRE(keys[i] == b.key);
      CHECK(a.key.empty());
      REQUIRE(a.after.size() == b.after.size());
      for (const std::string& ref : a.after) CHECK(ref.empty());
      // No op names a tensor; a SEND / RECV pair has its id, paired as the name is (below).
      if (IsCollective(b.kind)) {
        ++collectives;
        CHECK(!b.tensor.empty());
        CHECK(a.tensor.empty());
      } else if (IsPointToPoint(b.kind)) {
        const bool send = b.kind == OpKind::kSend;
        const int from = send ? b.device : b.peer;
        const int to = send ? b.peer : b.device;
        // The same (sender, receiver, tensor) triples pair up: each name maps to one id and
        // back (the ids are Generate's too).
        CHECK(a.tensor.empty());
        CHECK(a.tensor_id == b.tensor_id);
        const auto [named_it, named_new] =
            id_of.emplace(std::tuple(from, to, b.tensor), a.tensor_id);
        CHECK(named_it->second == a.tensor_id);
        const auto [id_it, id_new] = name_of.emplace(std::tuple(from, to, a.tensor_id), b.tensor);
        CHECK(id_it->second == b.tensor);
        CHECK(named_new == id_new);
      } else {
        CHECK(a.tensor == b.tensor);
      }
      CHECK(a.kind == b.kind);
      CHECK(a.device == b.device);
      CHECK(a.stream == b.stream);
      CHECK(a.stage == b.stage);
      CHECK(a.layers == b.layers);
      CHECK(a.part == b.part);
      CHECK(a.microbatch == b.microbatch);
      CHECK(a.rows == b.rows);
      CHECK(a.tokens == b.tokens);
      CHECK(a.group == b.group);
      CHECK(a.stream_id == b.stream_id);
      CHECK(a.group_id == b.group_id);
      CHECK(a.peer == b.peer);
      CHECK(a.bytes == b.bytes);
      CHECK(a.recompute == b.recompute);
      CHECK(a.sequence_parallel == b.sequence_parallel);
      CHECK(a.zero == b.zero);
    }
    CHECK(collectives > 0);  // tp 2, dp 2: the case has collectives to leave unnamed
  }
}

TEST_CASE("SimulateGenerated with the keys apart is Simulate of the representatives' schedule") {
  const testing::FakeTopology topology = testing::TwoNodes();
  const testing::FakeCost cost(3, 5, 200);
  for (const auto& [name, options] : Cases()) {
    for (NetworkMode network : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
      INFO(name << ", " << NetworkModeName(network) << " network");
      SimOptions sim;
      sim.network = network;
      const SimResult generated = SimulateGenerated(options, topology, cost, sim);
      const Schedule reps = GenerateForSimulation(options, topology, cost, sim);
      const SimResult named = Simulate(reps, topology, cost, sim);
      // The broadcast boundary declares only the replica shift; the others fold tp rank 0 of
      // replica 0 (order dp 2 x tp 2 = 4).
      CHECK(reps.symmetry.representatives_only);
      CHECK(generated.fold_order == named.fold_order);
      CHECK(generated.fold_note == named.fold_note);
      CHECK(generated.iteration_time_ns == named.iteration_time_ns);
      CHECK(generated.events == named.events);
      CHECK(generated.flows == named.flows);
      CHECK(generated.ops == named.ops);
      // The keys of the critical path and of the trace rows are the named schedule's.
      REQUIRE(!named.critical_path.empty());
      CHECK(generated.critical_path == named.critical_path);
      REQUIRE(generated.trace.rows.size() == named.trace.rows.size());
      for (size_t k = 0; k < named.trace.rows.size(); ++k) {
        const TraceRow& a = generated.trace.rows[k];
        const TraceRow& b = named.trace.rows[k];
        INFO("row " << k << " " << b.key);
        CHECK(a.key == b.key);
        CHECK(a.stream == b.stream);
        CHECK(a.start_ns == b.start_ns);
        CHECK(a.end_ns == b.end_ns);
        CHECK(a.bytes == b.bytes);
      }
      REQUIRE(generated.devices.size() == named.devices.size());
      for (size_t d = 0; d < named.devices.size(); ++d) {
        CHECK(generated.devices[d].compute_fraction == named.devices[d].compute_fraction);
        CHECK(generated.devices[d].comm_fraction == named.devices[d].comm_fraction);
        CHECK(generated.devices[d].idle_fraction == named.devices[d].idle_fraction);
      }
      REQUIRE(generated.links.size() == named.links.size());
      for (size_t l = 0; l < named.links.size(); ++l) {
        CHECK(generated.links[l].bytes == named.links[l].bytes);
        CHECK(generated.links[l].busy_ns == named.links[l].busy_ns);
      }
    }
  }
}

}  // namespace terasim

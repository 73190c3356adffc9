// Collective phases in closed form (sim/exclusive_links.h): a group whose links carry nothing
// else runs each phase as one timed event, with the results of running it as flows; a group
// whose links are shared (another group, a second stream of its own, a transfer) runs as flows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "schedule/generator.h"
#include "sim/cluster_topology.h"
#include "sim/replay.h"
#include "sim/simulator.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fake_topology.h"
#include "tests/sim/fold_cases.h"
#include "tests/sim/schedule_builder.h"
#include "tests/sim/test_model.h"
#include "topologies/cluster.h"

namespace terasim {
namespace {

using testing::FakeCost;
using testing::MakeOp;
using testing::P2p;

// Closed form on == off: iteration time, every op's start and end, per-device fractions, every
// link's bytes and busy time and the critical path, all exactly. Returns (on, off).
std::pair<SimResult, SimResult> RequireSame(const Schedule& schedule,
                                            const NetworkTopology& topology, SimOptions options) {
  const FakeCost cost(3, 5, 200);
  options.network = NetworkMode::kFlow;
  options.collectives.closed_form = true;
  SimResult on = Simulate(schedule, topology, cost, options);
  options.collectives.closed_form = false;
  SimResult off = Simulate(schedule, topology, cost, options);
  REQUIRE(on.iteration_time_ns == off.iteration_time_ns);
  REQUIRE(on.trace.rows.size() == off.trace.rows.size());
  for (size_t i = 0; i < off.trace.rows.size(); ++i) {
    INFO(off.trace.rows[i].key);
    REQUIRE(on.trace.rows[i].start_ns == off.trace.rows[i].start_ns);
    REQUIRE(on.trace.rows[i].end_ns == off.trace.rows[i].end_ns);
  }
  REQUIRE(on.devices.size() == off.devices.size());
  for (size_t d = 0; d < off.devices.size(); ++d) {
    INFO("device " << d);
    REQUIRE(on.devices[d].compute_fraction == off.devices[d].compute_fraction);
    REQUIRE(on.devices[d].comm_fraction == off.devices[d].comm_fraction);
    REQUIRE(on.devices[d].idle_fraction == off.devices[d].idle_fraction);
  }
  REQUIRE(on.links.size() == off.links.size());
  for (size_t l = 0; l < off.links.size(); ++l) {
    INFO(off.links[l].name);
    REQUIRE(on.links[l].link == off.links[l].link);
    REQUIRE(on.links[l].bytes == off.links[l].bytes);
    REQUIRE(on.links[l].busy_ns == off.links[l].busy_ns);
  }
  REQUIRE(on.critical_path == off.critical_path);
  return {std::move(on), std::move(off)};
}

// The collective phases a flow replay ran in closed form, and its events.
std::pair<int64_t, int64_t> ClosedFormPhases(const Schedule& schedule,
                                             const NetworkTopology& topology, bool fold) {
  const FakeCost cost(3, 5, 200);
  ReplayOptions options;
  options.fold = fold;
  Replay replay(schedule, topology, cost, options);
  replay.Run();
  return {replay.ClosedFormPhases(), replay.Events()};
}

// A gpt3-1b-like layer on the test model's 8 layers: hidden 1024 (16 heads), 128 tokens, so
// that the tp collectives move megabytes (bandwidth-bound, not latency-bound).
GenerateOptions Gpt1bLike(Strategy strategy, int dp, int pp, int tp) {
  GenerateOptions o = testing::FoldOptions(strategy, dp, pp, tp);
  o.model.hidden = 1024;
  o.model.heads = 16;
  o.model.ffn = 4096;
  o.model.sequence = 128;
  o.model.vocab = 1024;
  return o;
}

}  // namespace

TEST_CASE("closed-form collective phases give the flow replay's results on generated schedules") {
  const Cluster p3 = BuildCluster("p3.16xlarge:2");
  const Cluster p4d = BuildCluster("p4d.24xlarge:2");
  const ClusterTopology p3_topology(p3);
  const ClusterTopology p4d_topology(p4d);
  GenerateOptions megatron = Gpt1bLike(Strategy::kOneFOneB, 2, 2, 4);
  megatron.sequence_parallel = true;
  megatron.recompute = Recompute::kFull;
  const std::vector<std::pair<std::string, GenerateOptions>> cases = {
      {"terapipe", Gpt1bLike(Strategy::kTeraPipe, 1, 2, 8)},
      {"1f1b", Gpt1bLike(Strategy::kOneFOneB, 2, 2, 4)},
      {"interleaved", Gpt1bLike(Strategy::kInterleaved, 2, 2, 4)},
      {"megatron dp2", megatron},
  };
  int64_t closed_form_cases = 0;
  for (const auto& [name, options] : cases) {
    const Schedule schedule = Generate(options);
    for (const ClusterTopology* topology : {&p3_topology, &p4d_topology}) {
      for (bool fold : {true, false}) {
        INFO(name << (topology == &p3_topology ? " p3.16xlarge:2" : " p4d.24xlarge:2")
                  << (fold ? " folded" : " not folded"));
        SimOptions sim;
        sim.fold = fold;
        const auto [on, off] = RequireSame(schedule, *topology, sim);
        const auto [phases, events] = ClosedFormPhases(schedule, *topology, fold);
        CHECK(events == on.events);
        if (phases > 0) {
          // Each replaces its flows' activation, finish and recomputation events (some shared
          // with other flows' events at one instant) by one.
          CHECK(on.events < off.events);
          ++closed_form_cases;
        }
      }
    }
  }
  // The tp groups sit inside a node; pipeline transfers cross nodes (TeraPipe pp2 tp8: one stage
  // per node) or, with dp2 pp2 tp4, partly NVLinks of the same node: at least the TeraPipe
  // cases run their tp collectives in closed form, on both clusters, folded or not.
  CHECK(closed_form_cases >= 4);
}

TEST_CASE("TeraPipe tp8 on two nodes: every tp collective phase runs in closed form") {
  // pp2 tp8: stage s on node s, so the activations cross the NICs and the tp rings own their
  // node's NVLinks. The all-reduces on 8 GPUs of one node are one phase each (rings in both
  // directions), so the closed-form phases are the tp all-reduces that run: every one of them.
  const Cluster p3 = BuildCluster("p3.16xlarge:2");
  const ClusterTopology topology(p3);
  const Schedule schedule = Generate(Gpt1bLike(Strategy::kTeraPipe, 1, 2, 8));
  // Per tp instance (its op on the group's first rank): its phases and runs as flows.
  int64_t instances = 0;
  int64_t runs = 0;
  for (const Op& op : schedule.ops) {
    if (!IsCollective(op.kind) || op.group.rfind("tp", 0) != 0) continue;
    const Group& group = schedule.groups[schedule.FindGroup(op.group)];
    if (op.device != group.ranks[0]) continue;
    ++instances;
    const CollectivePlan plan =
        PlanCollective(op.kind, group.ranks, -1, op.bytes, topology, CollectiveOptions{});
    REQUIRE(plan.phases.size() == 1);
    for (const RingRun& run : plan.phases[0].runs) runs += run.steps > 0 ? 1 : 0;
  }
  REQUIRE(instances > 0);
  CHECK(ClosedFormPhases(schedule, topology, false).first == instances);
  SimOptions sim;
  sim.fold = false;
  const auto [on, off] = RequireSame(schedule, topology, sim);
  // Flows: each ran as one aggregate flow per ring run without the closed form.
  CHECK(off.flows - on.flows == runs);
}

TEST_CASE("a hierarchical all-reduce across two nodes runs phase by phase in closed form") {
  // 16 GPUs on two 8-GPU NVLink nodes (collective_test.cpp's cube mesh), two all-reduces over
  // all of them on one stream: reduce-scatter in each node, all-reduces across the NICs,
  // all-gather in each node. Nothing else runs: every phase with runs is closed form.
  const testing::FakeTopology topology = testing::CubeMesh(2, 20e9, 3400, 3.125e9, 50000);
  std::vector<int> all(16);
  for (int g = 0; g < 16; ++g) all[g] = g;
  const Bytes n = 64 << 20;
  Schedule s = testing::CollectiveSchedule(OpKind::kAllReduce, all, n, 16);
  const size_t first = s.ops.size();
  for (size_t k = 0; k < first; ++k) {
    Op again = s.ops[k];
    again.key += ".again";
    s.ops.push_back(again);
  }
  std::stable_sort(s.ops.begin(), s.ops.end(),
                   [](const Op& a, const Op& b) { return a.device < b.device; });
  const CollectivePlan plan =
      PlanCollective(OpKind::kAllReduce, all, -1, n, topology, CollectiveOptions{});
  int64_t phases = 0;
  for (const CollectivePhase& phase : plan.phases) {
    bool runs = false;
    for (const RingRun& run : phase.runs) runs = runs || run.steps > 0;
    phases += runs ? 1 : 0;
  }
  REQUIRE(phases == 3);
  CHECK(ClosedFormPhases(s, topology, false).first == 2 * phases);
  SimOptions sim;
  sim.fold = false;
  const auto [on, off] = RequireSame(s, topology, sim);
  CHECK(on.flows == 0);
  CHECK(on.events < off.events);
}

TEST_CASE("a group whose links something else uses runs as flows") {
  // Two nodes of four GPUs, GPUs 0 and 1 joined by their own link pair (fold_cases.h).
  const testing::FakeTopology topology = testing::TwoNodes();
  const Bytes n = 8 << 20;
  auto collective = [](const std::string& key, int device, const std::string& group,
                       const std::string& stream, Bytes bytes) {
    Op op = MakeOp(key, OpKind::kAllReduce, device, stream);
    op.group = group;
    op.tensor = key;
    op.bytes = bytes;
    return op;
  };
  auto base = [] {
    Schedule s;
    s.devices = 2;
    s.groups.push_back(Group{"a", {0, 1}, 0});
    return s;
  };

  SECTION("alone, two all-reduces on one stream: closed form, same results") {
    Schedule s = base();
    for (int d : {0, 1}) {
      s.ops.push_back(collective("A1.d" + std::to_string(d), d, "a", "tp", n));
      s.ops.push_back(collective("A2.d" + std::to_string(d), d, "a", "tp", n));
    }
    // Two instances of one phase each (a ring of two in both directions).
    CHECK(ClosedFormPhases(s, topology, false).first == 2);
    SimOptions sim;
    sim.fold = false;
    const auto [on, off] = RequireSame(s, topology, sim);
    CHECK(on.events < off.events);
  }
  SECTION("another group on the same GPUs at the same time") {
    Schedule s = base();
    s.groups.push_back(Group{"b", {0, 1}, 0});
    for (int d : {0, 1}) {
      s.ops.push_back(collective("A.d" + std::to_string(d), d, "a", "tp", n));
      s.ops.push_back(collective("B.d" + std::to_string(d), d, "b", "dp", n));
    }
    CHECK(ClosedFormPhases(s, topology, false).first == 0);
    RequireSame(s, topology, {});
  }
  SECTION("two instances of one group on two streams") {
    Schedule s = base();
    for (int d : {0, 1}) {
      s.ops.push_back(collective("A1.d" + std::to_string(d), d, "a", "tp", n));
      s.ops.push_back(collective("A2.d" + std::to_string(d), d, "a", "tp2", n));
    }
    CHECK(ClosedFormPhases(s, topology, false).first == 0);
    RequireSame(s, topology, {});
  }
  SECTION("two instances of one group on two streams, by the generator's integer names") {
    // The graph reads stream_id (op.h) when every op has one. Ids 0 and 1 are two streams, as
    // "tp" and "tp2" are on the string path above: not exclusive. A probe that the ids are what
    // is read: the same names with one id for both (the ids are trusted) are one stream, and
    // the group is exclusive (two instances of one phase each, as in the first section).
    for (const int second : {1, 0}) {
      INFO("second stream_id " << second);
      Schedule s = base();
      for (int d : {0, 1}) {
        s.ops.push_back(collective("A1.d" + std::to_string(d), d, "a", "tp", n));
        s.ops.push_back(collective("A2.d" + std::to_string(d), d, "a", "tp2", n));
        s.ops[s.ops.size() - 2].stream_id = 0;
        s.ops.back().stream_id = second;
      }
      for (Op& op : s.ops) op.group_id = 0;
      CHECK(ClosedFormPhases(s, topology, false).first == (second == 1 ? 0 : 2));
      RequireSame(s, topology, {});
    }
  }
  SECTION("a transfer over the group's link") {
    Schedule s = base();
    for (int d : {0, 1}) s.ops.push_back(collective("A.d" + std::to_string(d), d, "a", "tp", n));
    s.ops.push_back(P2p("S", OpKind::kSend, 0, 1, "t", n));
    s.ops.push_back(P2p("R", OpKind::kRecv, 1, 0, "t", n));
    CHECK(ClosedFormPhases(s, topology, false).first == 0);
    RequireSame(s, topology, {});
  }
}

}  // namespace terasim

#include <catch2/catch.hpp>

#include "schedule/generator.h"
#include "sim/simulator.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fake_topology.h"
#include "tests/sim/schedule_builder.h"
#include "tests/sim/test_model.h"

namespace terasim {
namespace {

using Catch::Matchers::Contains;
using testing::Compute;
using testing::FakeCost;
using testing::FakeTopology;
using testing::FreeTopology;
using testing::P2p;

ModelCard TestModel() { return testing::TestModel8(); }

// Forward 1 ns and backward 2 ns per layer and token: with P = 4 stages of 2 layers and whole
// sequences of 32 tokens, tf = 64 ns and tb = 128 ns per stage.
constexpr TimeNs kTf = 64, kTb = 128;

SimResult Run(const Schedule& schedule) {
  const FakeTopology topology = FreeTopology(schedule.devices);
  const FakeCost cost(1, 2);
  return Simulate(schedule, topology, cost);
}

GenerateOptions Pipeline(Strategy strategy, int p, int m) {
  GenerateOptions options;
  options.model = TestModel();
  options.strategy = strategy;
  options.pp = p;
  options.microbatches = m;
  options.optimizer = false;
  return options;
}

TEST_CASE("GPipe and 1F1B iterations take (m + p - 1)(tf + tb) with free communication") {
  const int p = 4, m = 8;
  for (Strategy strategy : {Strategy::kGpipe, Strategy::kOneFOneB}) {
    INFO(StrategyName(strategy));
    const SimResult result = Run(Generate(Pipeline(strategy, p, m)));
    // (m + p - 1)(tf + tb) = 11 x 192 ns.
    REQUIRE(result.iteration_time_ns == (m + p - 1) * (kTf + kTb));
    // Bubble fraction (p - 1) / (m + p - 1) on every device.
    REQUIRE(result.bubble_fraction == Approx(double(p - 1) / (m + p - 1)));
    for (const DeviceResult& d : result.devices) {
      REQUIRE(d.idle_fraction == Approx(double(p - 1) / (m + p - 1)));
      // No communication time: it is free.
      REQUIRE(d.comm_fraction == Approx(0.0).margin(1e-12));
    }
  }
}

TEST_CASE("Interleaving with v virtual stages divides the bubble by v") {
  const int p = 4, m = 8, v = 2;
  const SimResult plain = Run(Generate(Pipeline(Strategy::kOneFOneB, p, m)));
  GenerateOptions options = Pipeline(Strategy::kInterleaved, p, m);
  options.virtual_stages = v;
  const SimResult interleaved = Run(Generate(options));
  const auto bubble_ns = [](const SimResult& r) {
    return r.devices[0].idle_fraction * static_cast<double>(r.iteration_time_ns);
  };
  // 1F1B bubble: (p - 1)(tf + tb); interleaved: (p - 1)(tf + tb) / v.
  REQUIRE(bubble_ns(plain) == Approx((p - 1) * (kTf + kTb)));
  REQUIRE(bubble_ns(interleaved) == Approx((p - 1) * (kTf + kTb) / double(v)));
  // Iteration: m (tf + tb) + (p - 1)(tf + tb) / v.
  REQUIRE(interleaved.iteration_time_ns == m * (kTf + kTb) + (p - 1) * (kTf + kTb) / v);
}

TEST_CASE("TeraPipe with identical stages: each pass takes sum t_i + (K - 1) max t_j") {
  const int k = 4;
  GenerateOptions options = Pipeline(Strategy::kTeraPipe, k, 1);
  options.slicing = {MicrobatchSlicing{1, {4, 12, 8, 8}, 1}};
  options.order = SliceOrder::kFlush;
  const Schedule schedule = Generate(options);
  const SimResult result = Run(schedule);
  // Slice times on a 2-layer stage: forward 2 l, backward 4 l for l = 4, 12, 8, 8.
  const TimeNs sum_f = 2 * 32, max_f = 2 * 12, sum_b = 4 * 32, max_b = 4 * 12;
  TimeNs forward_end = 0, backward_start = -1;
  for (const TraceRow& row : result.trace.rows) {
    if (row.kind == OpKind::kFwd) forward_end = std::max(forward_end, row.end_ns);
    if (row.kind == OpKind::kBwd && (backward_start < 0 || row.start_ns < backward_start)) {
      backward_start = row.start_ns;
    }
  }
  // Forward pass: sum t_i + (K - 1) max t_j.
  REQUIRE(forward_end == sum_f + (k - 1) * max_f);
  // The last stage starts the backward right after its last forward.
  REQUIRE(backward_start == forward_end);
  // Backward pass likewise: sum t_i + (K - 1) max t_j.
  REQUIRE(result.iteration_time_ns - backward_start == sum_b + (k - 1) * max_b);
}

TEST_CASE("Two compute streams on one GPU share its compute") {
  Schedule schedule;
  schedule.devices = 1;
  schedule.ops = {Compute("A", 0, "s1", 1, 1000), Compute("B", 0, "s2", 1, 1000)};
  const SimResult result = Run(schedule);
  // Each alone takes 1000 ns; together at half speed both end at 2000 ns.
  REQUIRE(result.trace.rows[0].end_ns == 2000);
  REQUIRE(result.trace.rows[1].end_ns == 2000);
  REQUIRE(result.devices[0].compute_fraction == Approx(1.0));
}

TEST_CASE("Communication runs alongside compute and a RECV waits for its SEND") {
  FakeTopology topology(1, 2, 1e9, 300, 1e9, 0);  // host link: 1 byte/ns, 300 ns latency
  Schedule schedule;
  schedule.devices = 2;
  schedule.ops = {Compute("F0", 0, "compute", 1, 500), P2p("S", OpKind::kSend, 0, 1, "act", 2000),
                  P2p("R", OpKind::kRecv, 1, 0, "act", 2000), Compute("F1", 1, "compute", 1, 100)};
  schedule.ops[1].after = {"F0"};
  schedule.ops[3].after = {"R"};
  const FakeCost cost(1, 2);
  const SimResult result = Simulate(schedule, topology, cost);
  // SEND starts when F0 ends (500); latency 300 + 2000 bytes at 1 B/ns; F1 then runs 100 ns.
  REQUIRE(result.trace.rows[2].end_ns == 500 + 300 + 2000);
  REQUIRE(result.iteration_time_ns == 500 + 300 + 2000 + 100);
  // The critical path: F0 -> S -> R -> F1.
  REQUIRE(result.critical_path == std::vector<std::string>{"F0", "S", "R", "F1"});
  // The host link carried the 2000 bytes.
  REQUIRE(result.links.size() == 1);
  REQUIRE(result.links[0].bytes == Approx(2000));
  // Device 1 computed 100 ns and exposed (300 + 2000) ns of communication.
  REQUIRE(result.devices[1].comm_fraction * result.iteration_time_ns == Approx(2300));
}

TEST_CASE("A first transfer of -1 bytes on a route counts no link bytes and leaves the others'") {
  // S0 moves 2000 bytes 0 -> 1; then S1 1 -> 0 declares -1 bytes (a hand-built schedule: .pir
  // refuses it) on a route not used before. Its P2pRoute's list was never built (link_bytes_of
  // starts at -1), so, as before ReplayStats counted lists, it adds nothing: the links carry
  // the 2000 bytes of S0 alone. (ReplayStats::RepeatSlow got list number -1: resize(0) and
  // repeated_[-1].)
  FakeTopology topology(1, 2, 1e9, 300, 1e9, 0);
  Schedule schedule;
  schedule.devices = 2;
  schedule.ops = {P2p("S0", OpKind::kSend, 0, 1, "a", 2000),
                  P2p("R0", OpKind::kRecv, 1, 0, "a", 2000),
                  P2p("S1", OpKind::kSend, 1, 0, "b", -1), P2p("R1", OpKind::kRecv, 0, 1, "b", -1)};
  schedule.ops[2].after = {"R0"};
  const FakeCost cost(1, 2);
  const SimResult result = Simulate(schedule, topology, cost);
  double bytes = 0;
  for (const LinkResult& link : result.links) bytes += link.bytes;
  REQUIRE(bytes == 2000);
}

TEST_CASE("Transfers of different sizes over one route each count their own bytes on its link") {
  // Three transfers 0 -> 1 of 2000, 500 and 2000 bytes, one after another on one stream: the
  // replay keeps a route's per-link figures for its last size, so each size change must redo
  // them. The host link carries 2000 + 500 + 2000 = 4500 bytes.
  FakeTopology topology(1, 2, 1e9, 300, 1e9, 0);
  Schedule schedule;
  schedule.devices = 2;
  const std::vector<Bytes> sizes = {2000, 500, 2000};
  for (size_t k = 0; k < sizes.size(); ++k) {
    const std::string tensor = "t" + std::to_string(k);
    schedule.ops.push_back(P2p("S" + std::to_string(k), OpKind::kSend, 0, 1, tensor, sizes[k]));
    schedule.ops.push_back(P2p("R" + std::to_string(k), OpKind::kRecv, 1, 0, tensor, sizes[k]));
  }
  const FakeCost cost(1, 2);
  const SimResult result = Simulate(schedule, topology, cost);
  REQUIRE(result.links.size() == 1);
  REQUIRE(result.links[0].bytes == 4500);
  // One after another: 3 x 300 ns latency + 4500 bytes at 1 B/ns.
  REQUIRE(result.iteration_time_ns == 3 * 300 + 4500);
}

TEST_CASE("A stalled replay names each blocked device and the op it waits on") {
  Schedule schedule;
  schedule.devices = 2;
  // Each device receives before it sends, on one stream: neither SEND is ever reached.
  schedule.ops = {P2p("R0", OpKind::kRecv, 0, 1, "a", 8), P2p("S0", OpKind::kSend, 0, 1, "b", 8),
                  P2p("R1", OpKind::kRecv, 1, 0, "b", 8), P2p("S1", OpKind::kSend, 1, 0, "a", 8)};
  const FakeTopology topology = FreeTopology(2);
  const FakeCost cost(1, 2);
  REQUIRE_THROWS_WITH(
      Simulate(schedule, topology, cost),
      Contains("dev 0 waits at R0 (RECV with dev 1: dev 1 has not reached S1)") &&
          Contains("dev 1 waits at R1 (RECV with dev 0: dev 0 has not reached S0)"));
}

TEST_CASE("The trace has one row per op and the FLOPs of the model") {
  const Schedule schedule = Generate(Pipeline(Strategy::kOneFOneB, 2, 2));
  const FakeTopology topology = FreeTopology(2);
  const FakeCost cost(1, 2);
  const ModelCard model = TestModel();
  SimOptions options;
  options.model = &model;
  const SimResult result = Simulate(schedule, topology, cost, options);
  REQUIRE(result.trace.rows.size() == schedule.ops.size());
  // Model FLOPs of the iteration: 3 x forward of 8 layers of 32 tokens for 2 micro-batches,
  // forward per layer 24 l h^2 + 4 l^2 h (f = 4h).
  const double h = 64, l = 32;
  const double forward = 8 * (24 * l * h * h + 4 * l * l * h);
  REQUIRE(result.model_flops == Approx(3 * forward * 2));
  // TFLOP/s per GPU: FLOPs / (time x GPUs).
  REQUIRE(result.tflops_per_gpu ==
          Approx(result.model_flops / (result.iteration_time_ns * 1e-9 * 2) / 1e12));
}

}  // namespace
}  // namespace terasim

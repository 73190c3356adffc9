// The simulator's costs of today's recipes in closed form (FACTS.md "Today's recipes"): the
// zero-bubble ZB-H1 bubble against 1F1B's, recomputation's extra forward, ZeRO-3's all-gather
// volume per layer.
#include <catch2/catch.hpp>

#include <map>

#include "models/memory_model.h"
#include "schedule/generator.h"
#include "sim/simulator.h"
#include "tests/sim/fake_topology.h"
#include "tests/sim/test_model.h"

namespace terasim {
namespace {

using testing::FreeTopology;

// Uniform costs: a forward, a backward input and a backward weight half each take
// layers x tokens x rows ns (F = B = W); a whole backward 2 of that; the optimizer nothing.
class UniformCost : public ComputeCostModel {
 public:
  TimeNs Time(const SliceWork& work) const override {
    if (work.pass == Pass::kOptimizer) return 0;
    const TimeNs unit = work.layers * work.tokens * work.rows;
    return work.pass == Pass::kBackward ? 2 * unit : unit;
  }
  std::string Name() const override { return "uniform"; }
};

ModelCard TestModel() { return testing::TestModel8(); }

GenerateOptions Pipeline(Strategy strategy, int p, int m) {
  GenerateOptions options;
  options.model = TestModel();
  options.strategy = strategy;
  options.pp = p;
  options.microbatches = m;
  options.optimizer = false;
  return options;
}

SimResult Run(const Schedule& schedule) {
  const testing::FakeTopology topology = FreeTopology(schedule.devices);
  const UniformCost cost;
  return Simulate(schedule, topology, cost);
}

}  // namespace

TEST_CASE("ZB-H1 cuts 1F1B's bubble to a third with uniform F = B = W") {
  const int p = 4, m = 8;
  // P = 4 stages of 2 layers, 32 tokens: t = 64 ns per forward (and per backward half).
  const TimeNs t = 2 * 32;
  const SimResult one = Run(Generate(Pipeline(Strategy::kOneFOneB, p, m)));
  const SimResult zb = Run(Generate(Pipeline(Strategy::kZbH1, p, m)));
  // 1F1B: (m + p - 1)(F + B + W) = 11 x 3t; bubble (p - 1) 3t.
  CHECK(one.iteration_time_ns == (m + p - 1) * 3 * t);
  // ZB-H1: m (F + B + W) + (p - 1)(F + B - W) = 8 x 3t + 3t; bubble (p - 1) t, a third.
  CHECK(zb.iteration_time_ns == m * 3 * t + (p - 1) * t);
  const TimeNs bubble_1f1b = one.iteration_time_ns - m * 3 * t;
  const TimeNs bubble_zb = zb.iteration_time_ns - m * 3 * t;
  CHECK(bubble_zb * 3 == bubble_1f1b);
  // ZB-H2 is never slower here (its longer warm-up only helps when W < F + B - ...).
  const SimResult h2 = Run(Generate(Pipeline(Strategy::kZbH2, p, m)));
  CHECK(h2.iteration_time_ns <= zb.iteration_time_ns);
}

TEST_CASE("full recomputation adds one forward per backward; selective costs the attention core") {
  const int p = 2, m = 4;
  GenerateOptions o = Pipeline(Strategy::kOneFOneB, p, m);
  const SimResult plain = Run(Generate(o));
  o.recompute = Recompute::kFull;
  const SimResult full = Run(Generate(o));
  // Per device: m RECOMPUTE ops, each exactly as long as that unit's forward (4 layers x 32
  // tokens = 128 ns), so the compute of each device grows by m x 128 ns.
  const TimeNs t = 4 * 32;
  std::map<int, TimeNs> busy_plain, busy_full;
  int recomputes = 0;
  for (const TraceRow& row : plain.trace.rows) {
    if (IsCompute(row.kind)) busy_plain[row.device] += row.end_ns - row.start_ns;
  }
  for (const TraceRow& row : full.trace.rows) {
    if (IsCompute(row.kind)) busy_full[row.device] += row.end_ns - row.start_ns;
    if (row.kind == OpKind::kRecompute) {
      ++recomputes;
      CHECK(row.end_ns - row.start_ns == t);
    }
  }
  CHECK(recomputes == p * m);
  for (const auto& [device, busy] : busy_plain) CHECK(busy_full[device] == busy + m * t);
  // 1F1B with F = t, B = 2t and the recomputation R = t before each backward: the bubble
  // stays (p - 1)(F + B) and each micro-batch costs F + R + B: (m + p - 1) 3t + m t at most.
  CHECK(full.iteration_time_ns > plain.iteration_time_ns);
  CHECK(full.iteration_time_ns <= (m + p - 1) * 3 * t + m * t);
}

TEST_CASE("ZeRO-3 all-gathers each layer's parameters forward and backward: 1.5x ZeRO-1's volume") {
  GenerateOptions o = Pipeline(Strategy::kOneFOneB, 1, 1);
  o.dp = 2;
  o.optimizer = true;
  const int64_t layer_bytes = 2 * o.model.ParamsPerLayer();  // fp16, tp = 1
  auto volume = [&](int zero) {
    o.zero = zero;
    const SimResult r = Run(Generate(o));
    std::map<OpKind, Bytes> bytes;
    std::map<OpKind, int> count;
    for (const TraceRow& row : r.trace.rows) {
      if (row.device != 0 || !IsCollective(row.kind)) continue;
      bytes[row.kind] += row.bytes;
      ++count[row.kind];
    }
    if (zero == 3) {
      // Per layer: one all-gather before the forward, one before the backward, each of one
      // layer's fp16 parameters; one reduce-scatter of its gradients.
      CHECK(count[OpKind::kAllGather] == 2 * 8);
      CHECK(bytes[OpKind::kAllGather] == 2 * 8 * layer_bytes);
      CHECK(bytes[OpKind::kReduceScatter] == 8 * layer_bytes);
    }
    double links = 0;
    for (const LinkResult& link : r.links) links += link.bytes;
    return std::pair<Bytes, double>{
        bytes[OpKind::kAllGather] + bytes[OpKind::kReduceScatter] + bytes[OpKind::kAllReduce],
        links};
  };
  const auto [bytes1, links1] = volume(1);
  const auto [bytes3, links3] = volume(3);
  // ZeRO-1: reduce-scatter + all-gather of the whole model, 2 Psi; ZeRO-3: 3 Psi (FACTS.md).
  CHECK(bytes1 == 2 * 8 * layer_bytes);
  CHECK(bytes3 == 3 * 8 * layer_bytes);
  // On the wire each moves (D - 1) / D of its bytes per rank: the same 1.5 ratio.
  CHECK(links3 == Approx(1.5 * links1));
}

}  // namespace terasim

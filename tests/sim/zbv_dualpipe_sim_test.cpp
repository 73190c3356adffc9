// The simulator on the zero-bubble schedules with several chunks per rank (interleaved zero
// bubble, ZB-V, DualPipeV; schedule/pipeline_order.h) in closed form, with uniform costs and
// free communication: every rank does the same work, and the only idle time left is the last
// rank's wait for the first chunk forwards of the pipeline.
#include <catch2/catch.hpp>

#include "models/json_reader.h"
#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/torch_csv.h"
#include "sim/simulator.h"
#include "tests/sim/fake_topology.h"

namespace terasim {
namespace {

// F, B (input gradient) and W (weight gradient) each layers x tokens x rows ns; a whole
// backward (B and W together) twice that; the optimizer free.
class SplitUniformCost : public ComputeCostModel {
 public:
  TimeNs Time(const SliceWork& work) const override {
    if (work.pass == Pass::kOptimizer) return 0;
    const TimeNs per_part = work.layers * work.tokens * work.rows;
    return (work.pass == Pass::kBackward ? 2 : 1) * per_part;
  }
  std::string Name() const override { return "split-uniform"; }
};

// The tiny model with 8 layers of 32 tokens: one layer's forward on one row takes 32 ns.
ModelCard EightLayers() {
  ModelCard model = LoadModelCard("tiny");
  model.layers = 8;
  return model;
}

GenerateOptions Pipeline(Strategy strategy, int p, int v, int m) {
  GenerateOptions o;
  o.model = EightLayers();
  o.strategy = strategy;
  o.pp = p;
  o.virtual_stages = v;
  o.microbatches = m;
  o.optimizer = false;
  return o;
}

TimeNs Time(const Schedule& s) {
  RequireValidSchedule(s);
  const testing::FakeTopology topology = testing::FreeTopology(s.devices);
  return Simulate(s, topology, SplitUniformCost()).iteration_time_ns;
}

}  // namespace

TEST_CASE("ZB-V and DualPipeV leave a sixth of 1F1B's bubble with uniform F = B = W",
          "[zbv][dualpipe]") {
  for (int p : {2, 4}) {
    const int m = 2 * p;
    INFO("p " << p << " m " << m);
    // 1F1B: stages of 8 / P layers, T = 32 x 8 / P ns per F, B or W: (m + p - 1) 3T.
    const TimeNs T = 32 * 8 / p;
    const TimeNs one = Time(Generate(Pipeline(Strategy::kOneFOneB, p, 1, m)));
    CHECK(one == (m + p - 1) * 3 * T);
    // The V: 2P chunks of half a stage, t = T / 2. Each rank runs 2 chunks x m x (F + B + W)
    // = 6 m t; the last rank waits (P - 1) t for its first input and never again:
    // 6 m t + (P - 1) t; the bubble (P - 1) t against 1F1B's 3 (P - 1) T = 6 (P - 1) t.
    const TimeNs t = T / 2;
    for (Strategy strategy : {Strategy::kZbV, Strategy::kDualPipeV}) {
      INFO(StrategyName(strategy));
      const TimeNs v = Time(Generate(Pipeline(strategy, p, 2, m)));
      CHECK(v == 6 * m * t + (p - 1) * t);
      CHECK((v - 6 * m * t) * 6 == one - m * 3 * T);
    }
    // ZB-V with more micro-batches keeps the same bubble.
    CHECK(Time(Generate(Pipeline(Strategy::kZbV, p, 2, 2 * m))) == 12 * m * t + (p - 1) * t);
  }
}

TEST_CASE("Interleaved zero bubble: ZB-H1's bubble divided by V", "[zbv][dualpipe]") {
  struct Case {
    int p, v, m;
  };
  for (const Case& c : {Case{2, 2, 4}, Case{4, 2, 8}, Case{2, 4, 4}}) {
    INFO("p " << c.p << " v " << c.v << " m " << c.m);
    // Chunks of 8 / (P V) layers: t = 32 x 8 / (P V) ns per F, B or W. Work 3 m V t per rank
    // and the last rank's wait (P - 1) t: ZB-H1's (P - 1) T bubble over V.
    const TimeNs t = 32 * 8 / (c.p * c.v);
    const TimeNs zb = Time(Generate(Pipeline(Strategy::kInterleavedZb, c.p, c.v, c.m)));
    CHECK(zb == 3 * c.m * c.v * t + (c.p - 1) * t);
    const TimeNs h1 = Time(Generate(Pipeline(Strategy::kZbH1, c.p, 1, c.m)));
    CHECK(h1 == 3 * c.m * c.v * t + c.v * (c.p - 1) * t);
  }
}

TEST_CASE("PyTorch's DualPipeV table imports, checks and simulates as the generated one",
          "[zbv][dualpipe]") {
  const std::string name = "dualpipev_p4_m8.csv";
  const std::string csv =
      ReadTextFile(std::string(TERASIM_TEST_DATA) + "/../golden/torch_csv/" + name);
  const GenerateOptions imported =
      ImportedOptions(ParseTorchCsv(csv, name), Pipeline(Strategy::kOneFOneB, 1, 1, 1), name);
  // P = 4, M = 8, t = 32 ns: 6 x 8 x 32 + 3 x 32.
  CHECK(Time(Generate(imported)) == 6 * 8 * 32 + 3 * 32);
  CHECK(Time(Generate(imported)) == Time(Generate(Pipeline(Strategy::kDualPipeV, 4, 2, 8))));
}

}  // namespace terasim

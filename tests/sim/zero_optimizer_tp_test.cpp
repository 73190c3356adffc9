// The tp degree of a ZeRO OPTIMIZER's work: the replay costs it as the cost model does at
// tp x dp (sim/op_work.h WorkTpOf), the share of the model each rank updates.
#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <vector>

#include "models/layer_flops.h"
#include "models/memory_model.h"
#include "models/model_card.h"
#include "schedule/generator.h"
#include "sim/op_work.h"
#include "sim/replay_graph.h"
#include "sim/simulator.h"
#include "tests/sim/fake_topology.h"

namespace terasim {
namespace {

using testing::FakeTopology;
using testing::FreeTopology;

// A cost model whose OPTIMIZER reads its bytes as the roofline does (LayerBytes: 28 bytes per
// parameter of the work's tp shard) at 1 byte per ns; other work takes 1 ns per layer and token.
class ShardBytesCost : public ComputeCostModel {
 public:
  explicit ShardBytesCost(ModelCard model) : model_(std::move(model)) {}
  TimeNs Time(const SliceWork& work) const override {
    if (work.pass == Pass::kOptimizer) return work.layers * LayerBytes(model_, work);
    return work.layers * work.tokens * work.rows;
  }
  std::string Name() const override { return "shard bytes"; }

 private:
  ModelCard model_;
};

TEST_CASE("A ZeRO OPTIMIZER's replayed time is its cost at tp x dp") {
  const ModelCard tiny = LoadModelCard("tiny");  // 4 layers, h 64, f 256
  const ShardBytesCost cost(tiny);
  for (int zero : {0, 1, 3}) {
    GenerateOptions o;
    o.model = tiny;
    std::tie(o.strategy, o.dp, o.pp, o.tp, o.microbatches, o.zero) =
        std::make_tuple(Strategy::kOneFOneB, 2, 2, 2, 2, zero);
    const Schedule s = Generate(o);
    // Each rank updates 1 / (tp x dp) of its stage with ZeRO (a tp shard split over the dp
    // group of 2), 1 / tp without.
    const int tp = zero > 0 ? 4 : 2;
    // Per layer of the tp-4 shard: attention (4h^2 + 3h) / 4 + 3h = 4336, MLP (2hf + f) / 4 + 3h
    // = 8448 parameters; 28 bytes each, 2 layers a stage: 715,904 ns. At tp 2: 8480 + 16704
    // parameters, 1,410,304 ns.
    const TimeNs expected = zero > 0 ? 715904 : 1410304;
    REQUIRE(2 * 28 * LayerShardParams(tiny, tp, Block::kWhole) == expected);

    const std::vector<int> degrees = WorkTpDegrees(s);
    std::vector<int> gpus;
    for (int d = 0; d < s.devices; ++d) gpus.push_back(d);
    const ReplayGraph g = BuildReplayGraph(s, gpus);
    for (size_t i = 0; i < s.ops.size(); ++i) {
      // One definition: the replay's degree of each compute op's work is SliceWorkOf's.
      if (IsCompute(s.ops[i].kind)) REQUIRE(g.work_tp[i] == degrees[i]);
    }

    const FakeTopology topology = FreeTopology(s.devices);
    const SimResult result = Simulate(s, topology, cost);
    int optimizers = 0;
    for (size_t i = 0; i < s.ops.size(); ++i) {
      if (s.ops[i].kind != OpKind::kOptimizer) continue;
      REQUIRE(degrees[i] == tp);
      REQUIRE(cost.Time(SliceWorkOf(s, s.ops[i])) == expected);
    }
    for (const TraceRow& row : result.trace.rows) {
      if (row.kind != OpKind::kOptimizer) continue;
      ++optimizers;
      REQUIRE(row.end_ns - row.start_ns == expected);
    }
    REQUIRE(optimizers == 8);  // one per device: 2 stages x 2 tp ranks x 2 replicas
  }
}

}  // namespace
}  // namespace terasim

// Tests of the generator's emission machinery (schedule/generator.cpp): the op list is sized
// once, and names with many-digit fields are written whole.
#include <catch2/catch.hpp>

#include <string>
#include <tuple>

#include "models/model_card.h"
#include "schedule/generator.h"

using namespace terasim;

namespace {

GenerateOptions Options(const char* model, Strategy strategy, int dp, int pp, int tp,
                        int microbatches) {
  GenerateOptions o;
  o.model = LoadModelCard(model);
  o.strategy = strategy;
  std::tie(o.dp, o.pp, o.tp, o.microbatches) = std::tie(dp, pp, tp, microbatches);
  o.virtual_stages = strategy == Strategy::kInterleaved || strategy == Strategy::kZbV ? 2 : 1;
  return o;
}

// Devices whose ops the schedule holds.
int PresentDevices(const Schedule& s) {
  int n = 0;
  for (int d = 0; d < s.devices; ++d) n += s.symmetry.Present(d) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("Generate reserves its ops once, within four per model chunk and device") {
  // The bound (DeviceEmitter::MaxOps) is exact for the ops of each unit and allows four ops per
  // chunk for the sequence-parallel gradients, the dp step, the optimizer and ZeRO's gather;
  // a list grown by doubling would hold up to twice its ops.
  std::vector<GenerateOptions> cases;
  cases.push_back(Options("gpt3-1b", Strategy::kOneFOneB, 2, 4, 2, 8));
  cases.push_back(Options("gpt3-1b", Strategy::kInterleaved, 1, 4, 2, 8));
  cases.push_back(Options("gpt3-1b", Strategy::kZbV, 1, 4, 1, 8));
  GenerateOptions zero = Options("gpt3-1b", Strategy::kZbH1, 2, 2, 2, 4);
  zero.zero = 3;
  zero.recompute = Recompute::kFull;
  zero.sequence_parallel = true;
  cases.push_back(zero);
  GenerateOptions broadcast = Options("gpt3-1b", Strategy::kGpipe, 1, 4, 4, 4);
  broadcast.boundary = Boundary::kBroadcast;
  cases.push_back(broadcast);
  GenerateOptions slices = Options("gpt3-1b", Strategy::kTeraPipe, 1, 4, 2, 2);
  slices.uniform_slices = 5;
  cases.push_back(slices);
  GenerateOptions reps = Options("gpt3-1b", Strategy::kOneFOneB, 3, 4, 4, 8);
  reps.representatives_only = true;
  reps.representative_tp_ranks = 2;
  cases.push_back(reps);
  for (const GenerateOptions& o : cases) {
    const Schedule s = Generate(o);
    INFO(StrategyName(o.strategy) << " dp" << o.dp << " pp" << o.pp << " tp" << o.tp);
    CHECK(s.ops.capacity() >= s.ops.size());
    CHECK(s.ops.capacity() - s.ops.size() <=
          static_cast<size_t>(4 * o.virtual_stages * PresentDevices(s)));
  }
}

TEST_CASE("Generated names keep every field of a long key") {
  // 16 tp ranks, 2 token slices: the forward all-reduce of the last layer's MLP on tp rank 15
  // of pipeline rank 1 is "ARF.s1.m3.t1024-2048.l23.mlp.r15" (gpt3-1b: 24 layers, 12 a stage,
  // sequence 2048), its tensor "tpf.l23.mlp.m3.t1024-2048" (no rank suffix: the ranks of the
  // group issue one identity).
  GenerateOptions o = Options("gpt3-1b", Strategy::kTeraPipe, 1, 2, 16, 4);
  o.uniform_slices = 2;
  const Schedule s = Generate(o);
  const Op* found = nullptr;
  for (const Op& op : s.ops) {
    if (op.key == "ARF.s1.m3.t1024-2048.l23.mlp.r15") found = &op;
  }
  REQUIRE(found != nullptr);
  CHECK(found->tensor == "tpf.l23.mlp.m3.t1024-2048");
  CHECK(found->group == "tp.d0.s1");
  CHECK(found->device == 1 * 16 + 15);  // pipeline rank 1, tp rank 15
  CHECK(found->tokens == Range{1024, 2048});
  CHECK(found->layers == Range{23, 24});
}

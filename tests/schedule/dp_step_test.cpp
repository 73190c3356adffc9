// The data-parallel step (GenerateOptions::dp_step): TeraPipe's flattened all-reduce after the
// replica's whole backward, DDP / Megatron-LM's buckets overlapped with the backward, and the
// per-stage step; the family defaults; a replay where the buckets hide all but the last one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "sim/simulator.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fake_topology.h"

using namespace terasim;

namespace {

GenerateOptions Options(Strategy strategy, DpStep step, int dp, int pp, int tp) {
  GenerateOptions o;
  o.model = LoadModelCard("gpt3-1b");  // 24 layers
  o.strategy = strategy;
  o.dp = dp;
  o.pp = pp;
  o.tp = tp;
  o.microbatches = 2 * pp;
  o.dp_step = step;
  return o;
}

// fp16 weight gradients of `layers` layers' tp shard.
int64_t GradientBytes(const ModelCard& m, int layers, int tp) {
  return 2 * static_cast<int64_t>(layers) * m.ParamsPerLayer() / tp;
}

std::map<std::string, const Op*> ByKey(const Schedule& s) {
  std::map<std::string, const Op*> out;
  for (const Op& op : s.ops) out[op.key] = &op;
  return out;
}

bool IsBackward(const Op& op) {
  return op.kind == OpKind::kBwd || op.kind == OpKind::kBwdInput || op.kind == OpKind::kBwdWeight;
}

// The dp gradient all-reduces (their tensors wgrad.s...).
std::vector<const Op*> DpAllReduces(const Schedule& s) {
  std::vector<const Op*> out;
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::kAllReduce && op.tensor.rfind("wgrad.s", 0) == 0) out.push_back(&op);
  }
  return out;
}

std::string Diagnostics(const Schedule& s) {
  std::string out;
  for (const Diagnostic& d : CheckSchedule(s)) out += FormatDiagnostic(s, d) + "\n";
  return out;
}

}  // namespace

TEST_CASE("dp step names, parsing and the family defaults") {
  for (DpStep step : {DpStep::kAuto, DpStep::kPerStage, DpStep::kFlattened, DpStep::kBucketed}) {
    CHECK(ParseDpStep(DpStepName(step)) == step);
  }
  CHECK_THROWS_AS(ParseDpStep("ddp"), InputError);
  // TeraPipe's code (and Table 1's GPipe baseline, the same code unsliced): flattened.
  CHECK(DefaultDpStep(Strategy::kTeraPipe) == DpStep::kFlattened);
  CHECK(DefaultDpStep(Strategy::kGpipe) == DpStep::kFlattened);
  // Megatron-LM and the PyTorch schedules: DDP-style buckets.
  for (Strategy s : {Strategy::kOneFOneB, Strategy::kInterleaved, Strategy::kZbH1, Strategy::kZbV,
                     Strategy::kDualPipeV, Strategy::kLoopedBfs}) {
    CHECK(DefaultDpStep(s) == DpStep::kBucketed);
  }
  GenerateOptions o = Options(Strategy::kOneFOneB, DpStep::kAuto, 2, 2, 1);
  CHECK(ResolvedDpStep(o) == DpStep::kBucketed);
  o.dp_step = DpStep::kPerStage;
  CHECK(ResolvedDpStep(o) == DpStep::kPerStage);
  o.dp_bucket_bytes = 0;
  CHECK_THROWS_AS(Generate(o), InputError);
}

TEST_CASE("flattened: one all-reduce per stage, after every backward of its replica") {
  const int dp = 2, pp = 3, tp = 2;
  const GenerateOptions o = Options(Strategy::kTeraPipe, DpStep::kAuto, dp, pp, tp);
  const Schedule s = Generate(o);
  INFO(Diagnostics(s));
  CHECK(CheckSchedule(s).empty());
  const auto ops = ByKey(s);
  const std::vector<const Op*> dps = DpAllReduces(s);
  REQUIRE(dps.size() == static_cast<size_t>(dp * pp * tp));  // one per device (one stage each)
  const std::vector<Range> layers = StageLayers(o.model.layers, pp, 1);
  for (const Op* op : dps) {
    // The stage's whole fp16 gradient: 24 / 3 = 8 layers of a tp-2 shard.
    CHECK(op->bytes == GradientBytes(o.model, layers[op->stage].Length(), tp));
    const int replica = op->device / (pp * tp);
    // It waits for the barrier of its replica ...
    const std::string barrier = fmt::format("BAR.p{}.d{}.r{}", (op->device / tp) % pp, replica,
                                            op->device % tp);  // the device's own barrier op
    CHECK(std::find(op->after.begin(), op->after.end(), barrier) != op->after.end());
    const Op& bar = *ops.at(barrier);
    CHECK(bar.device == op->device);
    CHECK(bar.kind == OpKind::kAllReduce);
    const int g = s.FindGroup(bar.group);
    REQUIRE(g >= 0);
    // ... a collective of every device of the replica (P x T = 6 of them) ...
    std::vector<int> expected;
    for (int i = 0; i < pp * tp; ++i) expected.push_back(replica * pp * tp + i);
    CHECK(s.groups[g].ranks == expected);
  }
  // ... each of whose members joins it only after its own last backward: its dependency is on
  // the compute stream, behind every backward op of that device.
  for (const Op& bar : s.ops) {
    if (bar.key.rfind("BAR.", 0) != 0) continue;
    REQUIRE(bar.after.size() == 1);
    const Op& dep = *ops.at(bar.after[0]);
    CHECK(dep.device == bar.device);
    CHECK(dep.stream == "compute");
    const auto dep_at = &dep - s.ops.data();
    for (const Op& b : s.ops) {
      if (b.device == bar.device && IsBackward(b)) CHECK(&b - s.ops.data() <= dep_at);
    }
  }
}

TEST_CASE("bucketed: ceil(gradient / bucket) buckets of whole layers, each after its layers") {
  const int dp = 2, pp = 3, tp = 2;
  GenerateOptions o = Options(Strategy::kOneFOneB, DpStep::kAuto, dp, pp, tp);
  const int64_t layer_bytes = GradientBytes(o.model, 1, tp);
  const std::vector<Range> layers = StageLayers(o.model.layers, pp, 1);
  const auto check = [&](int64_t cap, int expected_per_stage) {
    o.dp_bucket_bytes = cap;
    const Schedule s = Generate(o);
    INFO(Diagnostics(s));
    CHECK(CheckSchedule(s).empty());
    const auto ops = ByKey(s);
    std::map<int, std::vector<const Op*>> per_device;
    for (const Op* op : DpAllReduces(s)) per_device[op->device].push_back(op);
    REQUIRE(per_device.size() == static_cast<size_t>(dp * pp * tp));
    for (const auto& [device, buckets] : per_device) {
      CHECK(static_cast<int>(buckets.size()) == expected_per_stage);
      const Range stage = layers[buckets.front()->stage];
      int top = stage.end;  // buckets from the last layer down, contiguous
      int64_t total = 0;
      for (const Op* b : buckets) {
        CHECK(b->layers.end == top);
        top = b->layers.begin;
        CHECK(b->bytes == GradientBytes(o.model, b->layers.Length(), tp));
        total += b->bytes;
        // Depends on one op: the latest backward of its lowest layer (with tp the block's tp
        // collective), nothing of the layers below it.
        REQUIRE(b->after.size() == 1);
        const Op& dep = *ops.at(b->after[0]);
        CHECK(dep.device == device);
        CHECK(dep.layers.begin == b->layers.begin);
        CHECK(dep.layers.end == b->layers.begin + 1);
        // 1F1B's last backward is of the replica's last micro-batch.
        CHECK(dep.microbatch == (device / (pp * tp) + 1) * o.microbatches - 1);
      }
      CHECK(top == stage.begin);
      CHECK(total == GradientBytes(o.model, stage.Length(), tp));
    }
  };
  // A stage holds 8 layers. A cap of 3 layers: ceil(8 L / 3 L) = 3 buckets (3, 3, 2 layers).
  SECTION("cap of three layers") { check(3 * layer_bytes, 3); }
  // A cap of 2 layers: ceil(8 / 2) = 4.
  SECTION("cap of two layers") { check(2 * layer_bytes, 4); }
  // A cap below one layer: a bucket is one layer (layers are not split): 8.
  SECTION("cap below a layer") { check(layer_bytes / 3, 8); }
  // PyTorch DDP's 25 MiB: gpt3-1b's tp-2 layer is 2 x 50.3 M / 2 = 50.3 MB > 25 MiB: 8 buckets.
  SECTION("DDP's 25 MiB") {
    REQUIRE(layer_bytes > kDdpBucketBytes);
    check(kDdpBucketBytes, 8);
  }
}

TEST_CASE("dp steps with sequence parallelism, ZeRO and split backwards pass the checker") {
  for (DpStep step : {DpStep::kPerStage, DpStep::kFlattened, DpStep::kBucketed}) {
    for (Strategy strategy : {Strategy::kOneFOneB, Strategy::kZbH1, Strategy::kInterleaved}) {
      GenerateOptions o = Options(strategy, step, 2, 2, 2);
      if (strategy == Strategy::kInterleaved) o.virtual_stages = 2;
      for (int variant = 0; variant < 4; ++variant) {
        o.sequence_parallel = variant == 1;
        o.zero = variant == 2 ? 1 : variant == 3 ? 3 : 0;
        INFO(DpStepName(step) << " " << StrategyName(strategy) << " variant " << variant);
        const Schedule s = Generate(o);
        INFO(Diagnostics(s));
        CHECK(CheckSchedule(s).empty());
      }
    }
  }
}

TEST_CASE("bucketed overlaps all but its last bucket with the backward; flattened none") {
  // One device per replica (dp 2, pp 1, tp 1), each replica on its own node: the all-reduces
  // cross the NIC alone. 24 layers of one micro-batch; a backward takes b = 32 tokens x 40 ns
  // per layer, the forward 1 ns per layer and token; one bucket per layer (cap 1 byte).
  GenerateOptions o;
  o.model = LoadModelCard("tiny");
  o.model.layers = 24;
  o.strategy = Strategy::kOneFOneB;
  o.dp = 2;
  o.microbatches = 1;
  o.optimizer = false;
  o.dp_bucket_bytes = 1;
  const testing::FakeTopology topology(2, 1, 1e12, 0, 1e12, 0);
  const testing::FakeCost cost(1, 40);
  o.dp_step = DpStep::kBucketed;
  const SimResult bucketed = Simulate(Generate(o), topology, cost);
  o.dp_step = DpStep::kFlattened;
  const SimResult flattened = Simulate(Generate(o), topology, cost);
  o.dp_step = DpStep::kPerStage;
  const SimResult per_stage = Simulate(Generate(o), topology, cost);
  // a: one layer's all-reduce, as the replay timed a bucket (every bucket alike).
  std::vector<TimeNs> bucket_ns, whole_ns;
  for (const TraceRow& row : bucketed.trace.rows) {
    if (row.key.rfind("DP.", 0) == 0 && row.device == 0)
      bucket_ns.push_back(row.end_ns - row.start_ns);
  }
  for (const TraceRow& row : flattened.trace.rows) {
    if (row.key.rfind("DP.", 0) == 0 && row.device == 0)
      whole_ns.push_back(row.end_ns - row.start_ns);
  }
  REQUIRE(bucket_ns.size() == 24);
  REQUIRE(whole_ns.size() == 1);
  const TimeNs a = bucket_ns.front();
  const TimeNs b = 32 * 40;  // one layer's backward
  REQUIRE(a > 0);
  REQUIRE(a < b);  // each bucket ends before the next layer's backward does
  for (TimeNs t : bucket_ns) CHECK(t == a);
  // The whole gradient's all-reduce takes about 24 a (bandwidth-bound, no latency here).
  CHECK(whole_ns.front() == Approx(24.0 * a).epsilon(1e-3));
  // Flattened: F + 24 b + 24 a; bucketed: F + 24 b + a (23 buckets hidden behind the backward).
  CHECK(flattened.iteration_time_ns - bucketed.iteration_time_ns ==
        Approx(static_cast<double>(whole_ns.front() - a)).margin(2));
  // With one device per replica there is no barrier: flattened is the per-stage step.
  CHECK(per_stage.iteration_time_ns == flattened.iteration_time_ns);
}

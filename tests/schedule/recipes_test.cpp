// Tests of today's recipes in the generator, the checker and the memory estimate: activation
// recomputation, sequence parallelism, ZeRO 1-3, zero-bubble, looped BFS and GPipe with
// backwards in forward order (DESIGN.md section 8, FACTS.md "Today's recipes").
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/device_spec.h"
#include "models/errors.h"
#include "models/memory_model.h"
#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/memory_estimate.h"
#include "schedule/pipeline_order.h"
#include "schedule/pir_format.h"

using namespace terasim;

namespace {

GenerateOptions Tiny(Strategy strategy, int dp, int pp, int tp, int microbatches) {
  GenerateOptions o;
  o.model = LoadModelCard("tiny");
  o.strategy = strategy;
  o.dp = dp;
  o.pp = pp;
  o.tp = tp;
  o.microbatches = microbatches;
  return o;
}

int Count(const Schedule& s, OpKind kind) {
  int n = 0;
  for (const Op& op : s.ops) n += op.kind == kind ? 1 : 0;
  return n;
}

std::string Diagnostics(const Schedule& s) {
  std::string out;
  for (const Diagnostic& d : CheckSchedule(s)) out += FormatDiagnostic(s, d) + "\n";
  return out;
}

std::string ErrorOf(const GenerateOptions& o) {
  try {
    Generate(o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// "F0", "I1", "W2", "B3" labels of a step list.
std::vector<std::string> Labels(const std::vector<PipelineStep>& steps) {
  std::vector<std::string> out;
  for (const PipelineStep& s : steps) {
    const char* kind = s.forward                         ? "F"
                       : s.part == BackwardPart::kInput  ? "I"
                       : s.part == BackwardPart::kWeight ? "W"
                                                         : "B";
    out.push_back(fmt::format("{}{}", kind, s.microbatch));
  }
  return out;
}

// Generates, checks and round-trips through .pir text.
void RequireValid(const GenerateOptions& o) {
  Schedule s = Generate(o);
  REQUIRE(Diagnostics(s) == "");
  const std::string text = WritePir(s);
  CHECK(WritePir(ReadPir(text, "x.pir")) == text);
}

}  // namespace

TEST_CASE("every recipe combination generates a schedule the checker accepts", "[recipes]") {
  for (Strategy strategy : {Strategy::kGpipe, Strategy::kOneFOneB, Strategy::kZbH1, Strategy::kZbH2,
                            Strategy::kInterleaved, Strategy::kLoopedBfs}) {
    for (int tp : {1, 2}) {
      for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        for (int zero : {0, 1, 2, 3}) {
          GenerateOptions o = Tiny(strategy, 2, 2, tp, 4);
          o.recompute = recompute;
          o.sequence_parallel = tp > 1;
          o.zero = zero;
          if (strategy == Strategy::kInterleaved || strategy == Strategy::kLoopedBfs) {
            o.virtual_stages = 2;
          }
          INFO(StrategyName(strategy)
               << " tp " << tp << " recompute " << RecomputeName(recompute) << " zero " << zero);
          RequireValid(o);
        }
      }
    }
  }
  GenerateOptions o = Tiny(Strategy::kGpipe, 1, 4, 1, 3);
  o.backward_in_forward_order = true;
  RequireValid(o);
}

TEST_CASE("full recomputation puts one RECOMPUTE before each backward, not counted as forward",
          "[recipes]") {
  // tp = 1: one RECOMPUTE per backward unit over the stage's layers: P x M = 2 x 4 of them.
  GenerateOptions o = Tiny(Strategy::kOneFOneB, 1, 2, 1, 4);
  o.recompute = Recompute::kFull;
  Schedule s = Generate(o);
  CHECK(Count(s, OpKind::kRecompute) == 8);
  CHECK(Count(s, OpKind::kFwd) == 8);
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (s.ops[i].kind != OpKind::kRecompute) continue;
    // The next compute op on the device is the backward of the same unit.
    size_t j = i + 1;
    while (s.ops[j].kind != OpKind::kBwd) ++j;
    CHECK(s.ops[j].microbatch == s.ops[i].microbatch);
    CHECK(s.ops[j].layers == s.ops[i].layers);
    CHECK(s.ops[i].recompute == Recompute::kFull);
  }
  // tp = 2: per layer and part, each recomputed just before that layer's backward: 2 parts x
  // 4 layers x 4 micro-batches x 2 tp ranks.
  o.tp = 2;
  s = Generate(o);
  CHECK(Count(s, OpKind::kRecompute) == 2 * 4 * 4 * 2);
  CHECK(Diagnostics(s) == "");
  // A RECOMPUTE that would count as the forward: drop the FWD of micro-batch 0 on device 0 and
  // the checker finds the forward missing, though the RECOMPUTE covers the same layers.
  o.tp = 1;
  s = Generate(o);
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (s.ops[i].kind == OpKind::kFwd && s.ops[i].microbatch == 0 && s.ops[i].device == 0) {
      s.ops[i].kind = OpKind::kRecompute;
      break;
    }
  }
  CHECK_THAT(Diagnostics(s), Catch::Contains("forward not covered"));
}

TEST_CASE("sequence parallelism turns each tp all-reduce into an all-gather and a reduce-scatter",
          "[recipes]") {
  GenerateOptions o = Tiny(Strategy::kOneFOneB, 1, 2, 2, 2);
  const Schedule plain = Generate(o);
  o.sequence_parallel = true;
  const Schedule sp = Generate(o);
  // Every ALLREDUCE of the plain schedule (tp only: D = 1) is an ALLGATHER + REDUCE_SCATTER
  // pair of the same bytes: the same ring volume 2 (t - 1) / t n.
  const int all_reduces = Count(plain, OpKind::kAllReduce);
  CHECK(all_reduces > 0);
  // What remains is one tp all-reduce per stage and rank (2 x 2), after the stage's last
  // backward: the sum of the LayerNorm and bias gradients each rank took from its own rows.
  CHECK(Count(sp, OpKind::kAllReduce) == 4);
  for (const Op& op : sp.ops) {
    if (op.kind == OpKind::kAllReduce) CHECK(op.tensor.rfind("spgrad.s", 0) == 0);
  }
  CHECK(Count(sp, OpKind::kAllGather) == all_reduces);
  CHECK(Count(sp, OpKind::kReduceScatter) == all_reduces);
  // Boundary tensors are 1 / t per rank: rows x tokens x h x 2 / 2 = 32 x 64.
  for (const Op& op : sp.ops) {
    if (op.kind == OpKind::kSend) CHECK(op.bytes == 32 * 64 * 2 / 2);
    if (IsLayerCompute(op.kind)) CHECK(op.sequence_parallel);
  }
  // It needs tp >= 2 and the p2p boundary.
  o.tp = 1;
  CHECK_THAT(ErrorOf(o), Catch::StartsWith("--sequence-parallel needs --tp >= 2"));
  o.tp = 2;
  o.boundary = Boundary::kBroadcast;
  CHECK_THAT(ErrorOf(o), Catch::StartsWith("--sequence-parallel needs --boundary p2p"));
}

TEST_CASE("ZeRO stages emit sharded gradient and parameter collectives", "[recipes]") {
  const ModelCard tiny = LoadModelCard("tiny");
  GenerateOptions o = Tiny(Strategy::kOneFOneB, 2, 2, 1, 2);
  o.zero = 1;
  Schedule s = Generate(o);
  // Stages 1-2: per device one REDUCE_SCATTER of the stage's gradients instead of the
  // ALLREDUCE, the OPTIMIZER on the shard, one ALLGATHER of the parameters after it.
  CHECK(Count(s, OpKind::kAllReduce) == 0);
  CHECK(Count(s, OpKind::kReduceScatter) == 4);
  CHECK(Count(s, OpKind::kAllGather) == 4);
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::kOptimizer) CHECK(op.zero == 1);
  }
  // Stage 3: per unit and layer one ALLGATHER forward and one backward, one REDUCE_SCATTER
  // after the backward: 2 stages x 2 layers, 2 micro-batches, 2 replicas.
  o.zero = 3;
  s = Generate(o);
  CHECK(Count(s, OpKind::kAllGather) == 2 * 2 * 2 * 2 * 2);
  CHECK(Count(s, OpKind::kReduceScatter) == 2 * 2 * 2 * 2);
  // Each all-gather moves one layer's fp16 parameters: 2 (12 h^2 + 13 h) bytes.
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::kAllGather) CHECK(op.bytes == 2 * tiny.ParamsPerLayer());
  }
  CHECK(Diagnostics(s) == "");
  o.dp = 1;
  CHECK_THAT(ErrorOf(o), Catch::StartsWith("--zero 3 needs --dp >= 2"));
}

TEST_CASE("ZB-H1 keeps P in flight, lags W by the rank; ZB-H2 doubles the warm-up", "[recipes]") {
  // P = 4, M = 6, rank 1: warm-up P - r - 1 = 2 forwards; each W runs r = 1 backward late.
  CHECK(Labels(ZeroBubbleOrder(ZeroBubble::kH1, 4, 1, 6)) ==
        std::vector<std::string>{"F0", "F1", "F2", "I0", "F3", "I1", "W0", "F4", "I2", "W1", "F5",
                                 "I3", "W2", "I4", "W3", "I5", "W4", "W5"});
  // The last rank has no lag... the first rank lags 0 and is 1F1B with split backward.
  CHECK(Labels(ZeroBubbleOrder(ZeroBubble::kH1, 2, 0, 2)) ==
        std::vector<std::string>{"F0", "F1", "I0", "W0", "I1", "W1"});
  for (ZeroBubble variant : {ZeroBubble::kH1, ZeroBubble::kH2}) {
    for (int rank = 0; rank < 4; ++rank) {
      // In flight: forwards whose W has not run. ZB-H1: at most P = 4 (1F1B's first rank);
      // ZB-H2: at most 2 P - 1 = 7 (warm-up 2 (P - r - 1) plus lag 2 r plus the steady F).
      int live = 0, peak = 0;
      for (const PipelineStep& s : ZeroBubbleOrder(variant, 4, rank, 16)) {
        if (s.forward) ++live;
        if (s.part == BackwardPart::kWeight) --live;
        peak = std::max(peak, live);
      }
      CHECK(peak == (variant == ZeroBubble::kH1 ? 4 : 7));
    }
  }
}

TEST_CASE("looped BFS and GPipe-forward-order follow PyTorch's orders", "[recipes]") {
  // Looped BFS, V = 2, M = 3: F m0..m2 on chunk 0, then chunk 1; backwards chunk 1 with
  // micro-batches descending, then chunk 0.
  const std::vector<PipelineStep> bfs = LoopedBfsOrder(2, 3);
  const std::vector<PipelineStep> expected = {
      {true, 0, 0, 0},  {true, 1, 0, 0},  {true, 2, 0, 0},  {true, 0, 0, 1},
      {true, 1, 0, 1},  {true, 2, 0, 1},  {false, 2, 0, 1}, {false, 1, 0, 1},
      {false, 0, 0, 1}, {false, 2, 0, 0}, {false, 1, 0, 0}, {false, 0, 0, 0},
  };
  CHECK(bfs == expected);
  // GPipe with backwards in forward order: B0 B1 B2 (reverse order: B2 B1 B0).
  CHECK(Labels(FlushOrder({1, 1, 1}, true)) ==
        std::vector<std::string>{"F0", "F1", "F2", "B0", "B1", "B2"});
  CHECK(Labels(FlushOrder({1, 1, 1})) ==
        std::vector<std::string>{"F0", "F1", "F2", "B2", "B1", "B0"});
  GenerateOptions o = Tiny(Strategy::kOneFOneB, 1, 2, 1, 2);
  o.backward_in_forward_order = true;
  CHECK_THAT(ErrorOf(o),
             Catch::StartsWith("--backward-order forward is only for --strategy gpipe"));
}

TEST_CASE("memory: recomputation and sequence parallelism follow Korthikanti per layer",
          "[recipes][memory]") {
  const ModelCard tiny = LoadModelCard("tiny");
  const DeviceSpec a100 = LoadDeviceSpec("a100-40gb");
  const int64_t s = 32, b = 1, h = 64, a = 4, t = 2;
  // GPipe, P = 1, T = 2, M = 2: the peak holds both micro-batches' 4 layers.
  GenerateOptions o = Tiny(Strategy::kGpipe, 1, 1, 2, 2);
  auto activations = [&](const GenerateOptions& opts) {
    return EstimateMemory(Generate(opts), tiny, a100).devices[0].activations;
  };
  // No recomputation: s b h (10 + 24/t + 5 a s / (h t)) per layer.
  const Bytes none = 10 * s * b * h + 24 * s * b * h / t + 5 * a * s * s * b / t;
  CHECK(activations(o) == 2 * 4 * none);
  // Sequence parallelism: s b h / t (34 + 5 a s / h).
  o.sequence_parallel = true;
  const Bytes sp = (34 * s * b * h + 5 * a * s * s * b) / t;
  CHECK(activations(o) == 2 * 4 * sp);
  // Selective + sequence parallelism: 34 s b h / t.
  o.recompute = Recompute::kSelective;
  CHECK(activations(o) == 2 * 4 * (34 * s * b * h / t));
  // Full + sequence parallelism: 2 s b h / t per layer kept; at the peak (the first
  // recomputation, after every forward) one layer's full activations are live again.
  o.recompute = Recompute::kFull;
  CHECK(activations(o) == 2 * 4 * (2 * s * b * h / t) + sp);
}

TEST_CASE("memory: ZeRO shards the training state and counts gathered layers",
          "[recipes][memory]") {
  const ModelCard tiny = LoadModelCard("tiny");
  const DeviceSpec a100 = LoadDeviceSpec("a100-40gb");
  const int64_t psi = 4 * tiny.ParamsPerLayer();  // P = 1: every layer on every device
  GenerateOptions o = Tiny(Strategy::kOneFOneB, 4, 1, 1, 2);
  const int64_t shard = (psi + 3) / 4;
  for (int zero : {0, 1, 2, 3}) {
    o.zero = zero;
    const DeviceMemory m = EstimateMemory(Generate(o), tiny, a100).devices[0];
    INFO("zero " << zero);
    CHECK(m.zero_stage == zero);
    // FACTS.md: 16 Psi; 4 Psi + 12 Psi / N; 2 Psi + 14 Psi / N; 16 Psi / N (N = 4).
    const Bytes expected = zero == 0   ? 16 * psi
                           : zero == 1 ? 4 * psi + 12 * shard
                           : zero == 2 ? 2 * psi + 14 * shard
                                       : 16 * shard;
    CHECK(m.state.Total() == expected);
    // Stage 3 holds two gathered layers (one in use, one prefetched): 2 x 2 (12 h^2 + 13 h).
    CHECK(m.gathered == (zero == 3 ? 2 * 2 * tiny.ParamsPerLayer() : 0));
  }
}

TEST_CASE("memory: the interleaved first rank holds 1 + (p - 1) / (p v) times 1F1B's",
          "[recipes][memory]") {
  ModelCard model = LoadModelCard("tiny");
  model.layers = 16;
  const DeviceSpec a100 = LoadDeviceSpec("a100-40gb");
  const Bytes layer = LayerActivationBytes(model, 1, 32, 0, 1, Block::kWhole);
  for (int v : {2, 4}) {
    GenerateOptions o = Tiny(Strategy::kInterleaved, 1, 4, 1, 8);
    o.model = model;
    o.virtual_stages = v;
    const Bytes peak = EstimateMemory(Generate(o), model, a100).devices[0].activations;
    // 1F1B: p micro-batches of L / p layers = L layers' activations; interleaved: that times
    // 1 + (p - 1) / (p v), i.e. (p v + p - 1) chunks of L / (p v) layers.
    const double expected = 16 * InterleavedInFlightFactor(4, v) * static_cast<double>(layer);
    CHECK(static_cast<double>(peak) == Approx(expected));
  }
  GenerateOptions o = Tiny(Strategy::kOneFOneB, 1, 4, 1, 8);
  o.model = model;
  CHECK(EstimateMemory(Generate(o), model, a100).devices[0].activations == 16 * layer);
}

TEST_CASE("memory: a verdict that does not fit names its largest term", "[recipes][memory]") {
  const ModelCard m175 = LoadModelCard("gpt3-175b");
  const DeviceSpec a100 = LoadDeviceSpec("a100-40gb");
  GenerateOptions o;
  o.model = m175;
  o.strategy = Strategy::kOneFOneB;
  o.pp = 8;
  o.tp = 8;
  o.microbatches = 8;
  // 12 layers of 175B per device: (12 h^2) x 12 / 8 x 16 bytes = 40 GiB of state, and 8
  // micro-batches of activations in flight on the first stage.
  const MemoryEstimate e = EstimateMemory(Generate(o), m175, a100);
  CHECK_FALSE(e.fits);
  const DeviceMemory& d = e.devices[e.peak_device];
  const auto [term, bytes] = d.LargestTerm();
  CHECK(term == "activations");
  CHECK_THAT(e.reason, Catch::EndsWith("; largest term: activations " + FormatGiB(bytes)));
}

TEST_CASE("zero-bubble and PyTorch-order interleaved schedules check deadlock-free at P = 4",
          "[recipes]") {
  ModelCard model = LoadModelCard("tiny");
  model.layers = 16;
  for (Strategy strategy : {Strategy::kZbH1, Strategy::kZbH2}) {
    for (int m : {2, 4, 8}) {
      GenerateOptions o = Tiny(strategy, 1, 4, 1, m);
      o.model = model;
      INFO(StrategyName(strategy) << " M " << m);
      RequireValid(o);
    }
  }
  // Interleaved for M = P (PyTorch's warm-up, not all forwards first), M = 6 (one round of 6),
  // M = 10 (two rounds of 5), M = 3 < P (one group, all forwards first).
  for (int m : {4, 6, 10, 3}) {
    for (int v : {2, 4}) {
      GenerateOptions o = Tiny(Strategy::kInterleaved, 1, 4, 1, m);
      o.model = model;
      o.virtual_stages = v;
      INFO("interleaved M " << m << " V " << v);
      RequireValid(o);
    }
  }
}

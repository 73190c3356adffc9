#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "models/device_spec.h"
#include "models/errors.h"
#include "models/json_reader.h"
#include "models/layer_flops.h"
#include "models/layer_operators.h"
#include "models/memory_model.h"
#include "models/operator_cost.h"
#include "models/operator_params.h"
#include "models/roofline_cost.h"

using namespace terasim;

namespace {

SliceWork Work(int64_t tokens, int64_t context = 0, int tp = 1, int rows = 1,
               Block block = Block::kWhole) {
  SliceWork w;
  w.rows = rows;
  w.tokens = tokens;
  w.context = context;
  w.tp = tp;
  w.block = block;
  return w;
}

Flops SumFlops(const std::vector<LayerOperator>& ops) {
  Flops total = 0;
  for (const LayerOperator& op : ops) total += op.flops;
  return total;
}

Bytes ScoreSizedBytes(const std::vector<LayerOperator>& ops) {
  // The operators whose tensors are l x (c + l) per head.
  Bytes total = 0;
  for (const LayerOperator& op : ops) {
    for (const char* name : {"scale", "mask", "softmax", "scale_mask_softmax", "attn_dropout"}) {
      if (std::strcmp(op.name, name) == 0) total += op.bytes;
    }
  }
  return total;
}

const LayerOperator& Find(const std::vector<LayerOperator>& ops, const char* name) {
  for (const LayerOperator& op : ops) {
    if (std::strcmp(op.name, name) == 0) return op;
  }
  FAIL("no operator " << name);
  return ops.front();
}

DeviceSpec V100(bool fused = false) {
  DeviceSpec d = LoadDeviceSpec("v100-sxm2-16gb");
  REQUIRE(d.operator_model.has_value());
  d.operator_model->fused = fused;
  return d;
}

// The V100 with its host running ahead of the GPU across ops or not (host_runs_ahead).
DeviceSpec V100HostAhead(bool ahead) {
  DeviceSpec d = V100();
  d.operator_model->host_runs_ahead = ahead;
  return d;
}

// A minimal "operator_model" object with `extra` members appended.
OperatorModelParams ParseWith(const std::string& extra) {
  const std::string text = R"({"gemm_efficiency": 0.8, "tile_m": 128, "tile_n": 128,
      "kernel_overhead_ns": 1000, "memory_efficiency": 0.7, "fused": false, "note": "t")" +
                           extra + "}";
  return ParseOperatorModelParams(JsonReader(ParseJson(text, "t.json"), "t.json"));
}

}  // namespace

TEST_CASE("operator FLOPs sum to the layer formulas", "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-13b");  // h 5120, f 4h, 40 heads
  const double h = m.hidden;
  for (bool fused : {false, true}) {
    for (int tp : {1, 8}) {
      for (auto [l, c] :
           {std::pair<int64_t, int64_t>{2048, 0}, {296, 1752}, {1, 100}, {120, 1928}, {704, 0}}) {
        for (int b : {1, 4}) {
          INFO("fused " << fused << " tp " << tp << " l " << l << " c " << c << " b " << b);
          const SliceWork w = Work(l, c, tp, b);
          const LayerOperatorOptions options{fused, false, 1};
          // FACTS.md: forward 24 b l h^2 + 4 b l (c + l) h per layer, split t ways.
          const double forward = (24.0 * b * l * h * h + 4.0 * b * l * (c + l) * h) / tp;
          CHECK(SumFlops(LayerOperators(m, w, OperatorPass::kForward, options)) ==
                Approx(forward).epsilon(1e-12));
          // Full recomputation repeats the forward.
          CHECK(SumFlops(LayerOperators(m, w, OperatorPass::kRecompute, options)) ==
                Approx(forward).epsilon(1e-12));
          // Selective recomputation: the attention core, 4 b l (c + l) h / t.
          CHECK(SumFlops(LayerOperators(m, w, OperatorPass::kRecomputeSelective, options)) ==
                Approx(4.0 * b * l * (c + l) * h / tp).epsilon(1e-12));
          // Backward = input + weight = 2 x forward; each equals layer_flops.h's split.
          const Flops input = SumFlops(LayerOperators(m, w, OperatorPass::kBackwardInput, options));
          const Flops weight =
              SumFlops(LayerOperators(m, w, OperatorPass::kBackwardWeight, options));
          CHECK(input + weight == Approx(2 * forward).epsilon(1e-12));
          SliceWork p = w;
          p.pass = Pass::kBackwardInput;
          CHECK(input == Approx(LayerPassFlops(m, p)).epsilon(1e-12));
          p.pass = Pass::kBackwardWeight;
          CHECK(weight == Approx(LayerPassFlops(m, p)).epsilon(1e-12));
        }
      }
    }
  }
}

TEST_CASE("attention and MLP blocks partition the layer's operators", "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-1b");
  const LayerOperatorOptions options;
  for (OperatorPass pass :
       {OperatorPass::kForward, OperatorPass::kBackwardInput, OperatorPass::kBackwardWeight}) {
    const auto whole = LayerOperators(m, Work(512, 512, 2), pass, options);
    const auto attn = LayerOperators(m, Work(512, 512, 2, 1, Block::kAttention), pass, options);
    const auto mlp = LayerOperators(m, Work(512, 512, 2, 1, Block::kMlp), pass, options);
    CHECK(whole.size() == attn.size() + mlp.size());
    CHECK(SumFlops(whole) == Approx(SumFlops(attn) + SumFlops(mlp)));
  }
}

TEST_CASE("score-sized tensors grow linearly with the context", "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-44b");  // 48 heads
  for (bool fused : {false, true}) {
    const LayerOperatorOptions options{fused, false, 1};
    const int64_t l = 296;
    // Score elements b (a / t) l (c + l): each score-sized operator moves a fixed number of
    // bytes per element, so the bytes are an affine function of c with slope
    // bytes(c=0) / l.
    const Bytes at0 =
        ScoreSizedBytes(LayerOperators(m, Work(l, 0, 8), OperatorPass::kForward, options));
    REQUIRE(at0 > 0);
    CHECK(ScoreElements(m, Work(l, 0, 8)) == 1 * (48 / 8) * l * l);
    for (int64_t c : {8, 296, 1000, 1752}) {
      INFO("fused " << fused << " context " << c);
      const Bytes at_c =
          ScoreSizedBytes(LayerOperators(m, Work(l, c, 8), OperatorPass::kForward, options));
      // bytes(c) = bytes(0) (c + l) / l.
      CHECK(at_c * l == at0 * (c + l));
    }
  }
}

TEST_CASE("tensor parallelism divides heads and FFN columns", "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-175b");  // h 12288, 96 heads, f 4h
  const LayerOperatorOptions options;
  const auto ops = LayerOperators(m, Work(120, 0, 4), OperatorPass::kForward, options);
  // QKV: 120 x 3h/4 x h; scores: 96/4 heads of 120 x 120 x 128; fc1: 120 x f/4 x h.
  CHECK(Find(ops, "qkv").n == 3 * 12288 / 4);
  CHECK(Find(ops, "qkv").k == 12288);
  CHECK(Find(ops, "scores").batch == 96 / 4);
  CHECK(Find(ops, "scores").k == 128);
  CHECK(Find(ops, "fc1").n == 4 * 12288 / 4);
  CHECK(Find(ops, "fc2").k == 4 * 12288 / 4);
  CHECK(Find(ops, "proj").k == 12288 / 4);
}

TEST_CASE("sequence parallelism splits LayerNorm and dropout tensors", "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-1b");
  const auto plain = LayerOperators(m, Work(2048, 0, 8), OperatorPass::kForward, {true, false, 1});
  const auto sp = LayerOperators(m, Work(2048, 0, 8), OperatorPass::kForward, {true, true, 1});
  // ln1 reads and writes b s h fp16 values: 4 b s h bytes, 4 b s h / t with sequence parallel.
  CHECK(Find(plain, "ln1").bytes == 4 * 2048 * 2048);
  CHECK(Find(sp, "ln1").bytes == 4 * 2048 * 2048 / 8);
  CHECK(SumFlops(plain) == SumFlops(sp));
}

TEST_CASE("GEMM time has tile and wave quantization", "[models][operators]") {
  // One tile shape, fed at the full per-SM rate (the tile choice has its own test).
  DeviceSpec v100 = V100();
  v100.operator_model->tiles.clear();
  v100.operator_model->l2_bw_bytes_per_s = 0;
  const OperatorCostModel model(LoadModelCard("gpt3-1b"), v100);
  const OperatorModelParams& p = *v100.operator_model;
  const double sm_rate = v100.PeakFlops() / v100.sm_count * p.gemm_efficiency;
  // fc1 of 1b at l tokens: l x 8192 x 2048. With 128 x 128 tiles: ceil(l/128) x 64 tiles.
  // l = 128: 64 tiles, one wave; l = 256: 128 tiles on 80 SMs, two waves; l = 129 as 256.
  auto fc1 = [&](int64_t l) {
    for (const OperatorTiming& t : model.Breakdown(Work(l), OperatorPass::kForward)) {
      if (std::strcmp(t.op.name, "fc1") == 0) return t;
    }
    FAIL("no fc1");
    return OperatorTiming{};
  };
  // A tile of depth k takes k + tile_k_overhead steps (its prologue and epilogue).
  const double wave_s = 2.0 * 128 * 128 * (2048 + p.tile_k_overhead) / sm_rate;
  CHECK(fc1(128).waves == 1);
  CHECK(fc1(128).compute_s == Approx(wave_s));
  CHECK(fc1(129).waves == 2);
  CHECK(fc1(129).compute_s == Approx(fc1(256).compute_s));
  // A one-token GEMM pays for whole tiles: as much compute time as 128 tokens.
  CHECK(fc1(1).compute_s == Approx(fc1(128).compute_s));
  // ... but is memory-bound when its 2048 x 8192 fp16 weights (33.5 MB) stream at half of
  // 900 GB/s (75 us), longer than one wave of 128 x 128 tiles of depth 2048 (54 us at the
  // fitted tile fraction, 0.79).
  DeviceSpec slow = v100;
  slow.operator_model->gemm_memory_efficiency = 0.5;
  const OperatorCostModel slow_model(LoadModelCard("gpt3-1b"), slow);
  for (const OperatorTiming& t : slow_model.Breakdown(Work(1), OperatorPass::kForward)) {
    if (std::strcmp(t.op.name, "fc1") != 0) continue;
    CHECK(t.memory_s == Approx(2.0 * (2048 + 2048 * 8192 + 8192) / (900e9 * 0.5)));
    CHECK(t.memory_s > t.compute_s);
    CHECK(std::string(t.bound) != "compute");
  }
}

TEST_CASE("operator model: the host queue makes small slices flat and adds up large ones",
          "[models][operators]") {
  DeviceSpec v100 = V100();
  const OperatorCostModel model(LoadModelCard("gpt3-1b"), v100);
  const double overhead_s = NsToSeconds(v100.operator_model->kernel_overhead_ns);
  int kernels = 0;
  double gpu_s = 0;
  for (const OperatorTiming& t : model.Breakdown(Work(1), OperatorPass::kForward)) {
    kernels += t.op.kernels;
    gpu_s += t.gpu_s;
  }
  SliceWork w = Work(1);
  w.pass = Pass::kForward;
  // The queue ends no earlier than the host's issue time and no earlier than the GPU's work,
  // and no later than both added.
  const double time_s = NsToSeconds(model.Time(w));
  CHECK(time_s >= kernels * overhead_s - 1e-9);
  CHECK(time_s >= gpu_s - 1e-9);
  CHECK(time_s <= kernels * overhead_s + gpu_s + 1e-9);
  // Two layers in one queue: at most twice one layer.
  w.layers = 2;
  CHECK(NsToSeconds(model.Time(w)) <= 2 * time_s + 1e-9);
  // A whole backward: backward-input and backward-weight in one queue (autograd order): no
  // more than the two apart.
  SliceWork b = Work(512, 512);
  b.pass = Pass::kBackward;
  SliceWork bi = b;
  bi.pass = Pass::kBackwardInput;
  SliceWork bw = b;
  bw.pass = Pass::kBackwardWeight;
  CHECK(model.Time(b) <= model.Time(bi) + model.Time(bw));
  CHECK(model.Time(b) >= std::max(model.Time(bi), model.Time(bw)));
}

TEST_CASE("operator GPU time grows with the context, faster in the unfused variant",
          "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-44b");
  const SliceWork w0 = Work(296, 0, 8);
  const SliceWork w1 = Work(296, 1752, 8);
  auto gpu_seconds = [](const OperatorCostModel& model, const SliceWork& w) {
    double total = 0;
    for (const OperatorTiming& t : model.Breakdown(w, OperatorPass::kForward)) total += t.gpu_s;
    return total;
  };
  double growth[2];
  for (bool fused : {false, true}) {
    const OperatorCostModel model(m, V100(fused));
    growth[fused] = gpu_seconds(model, w1) / gpu_seconds(model, w0);
    CHECK(growth[fused] > 1.0);
    // The queue's time never falls with more context (it may not rise while launch-bound).
    SliceWork f0 = w0;
    SliceWork f1 = w1;
    CHECK(model.Time(f1) >= model.Time(f0));
  }
  // The unfused variant also copies the context's keys and values once per slice.
  CHECK(growth[0] > growth[1]);
}

TEST_CASE("roofline answers with the operator model when the spec makes it the default",
          "[models][operators]") {
  DeviceSpec v100 = V100();
  v100.operator_model->is_default = true;
  const ModelCard m = LoadModelCard("gpt3-1b");
  const RooflineCostModel roofline(m, v100);
  const OperatorCostModel operators(m, v100);
  SliceWork w = Work(700, 300);
  w.pass = Pass::kBackward;
  CHECK(roofline.Time(w) == operators.Time(w));
  CHECK(roofline.Name() == operators.Name());
}

TEST_CASE("operator model without parameters is an input error", "[models][operators]") {
  DeviceSpec cpu = LoadDeviceSpec("local-cpu");
  REQUIRE_FALSE(cpu.operator_model.has_value());
  CHECK_THROWS_WITH(OperatorCostModel(LoadModelCard("gpt3-1b"), cpu),
                    Catch::Contains("no operator_model"));
}

TEST_CASE("per-kernel GPU time and the tile's fixed steps add to the roofline",
          "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-1b");
  DeviceSpec base = V100();
  base.operator_model->kernel_gpu_ns = 0;
  base.operator_model->tile_k_overhead = 0;
  DeviceSpec extra = base;
  extra.operator_model->kernel_gpu_ns = 5000;
  extra.operator_model->tile_k_overhead = 256;
  const OperatorCostModel a(m, base);
  const OperatorCostModel b(m, extra);
  const std::vector<OperatorTiming> ta = a.Breakdown(Work(1024), OperatorPass::kForward);
  const std::vector<OperatorTiming> tb = b.Breakdown(Work(1024), OperatorPass::kForward);
  REQUIRE(ta.size() == tb.size());
  for (size_t i = 0; i < ta.size(); ++i) {
    // GEMMs: every tile runs k + min(k, 256) steps instead of k (same waves, same split):
    // the projections and MLP (k >= 1024) by (k + 256) / k, the scores (k = d = 128) by 2.
    if (ta[i].op.kind == OperatorKind::kGemm) {
      CHECK(tb[i].waves == ta[i].waves);
      const int64_t k = ta[i].op.k;  // 1024-token GEMMs fill the SMs: no split-K
      CHECK(tb[i].compute_s ==
            Approx(ta[i].compute_s * static_cast<double>(k + std::min<int64_t>(k, 256)) / k));
    } else {
      CHECK(tb[i].compute_s == 0);
    }
    // Every kernel adds 5 us of GPU time to max(compute, memory).
    CHECK(tb[i].gpu_s ==
          Approx(std::max(tb[i].compute_s, tb[i].memory_s) + 5e-6 * tb[i].op.kernels));
  }
}

TEST_CASE("operator_model: kernel_gpu_ns, tile_k_overhead, host times optional, bounded",
          "[models][operators]") {
  const auto parse = ParseWith;
  // Absent: 0, i.e. the plain roofline of each operator.
  CHECK(parse("").kernel_gpu_ns == 0);
  CHECK(parse("").tile_k_overhead == 0);
  const OperatorModelParams p = parse(R"(, "kernel_gpu_ns": 4000, "tile_k_overhead": 96)");
  CHECK(p.kernel_gpu_ns == 4000);
  CHECK(p.tile_k_overhead == 96);
  CHECK_THROWS_WITH(parse(R"(, "kernel_gpu_ns": -1)"), Catch::Contains("t.json: kernel_gpu_ns"));
  CHECK_THROWS_WITH(parse(R"(, "kernel_gpu_ns": 2000000)"),
                    Catch::Contains("kernel_gpu_ns: 2000000 is more than 1 ms per kernel"));
  CHECK_THROWS_WITH(parse(R"(, "tile_k_overhead": 100000)"),
                    Catch::Contains("tile_k_overhead: 100000 is more than 65536"));
  // backward_kernel_overhead_ns absent: the forward's host time per kernel (1000 ns here).
  CHECK(parse("").backward_kernel_overhead_ns == 1000);
  CHECK(parse(R"(, "backward_kernel_overhead_ns": 2500)").backward_kernel_overhead_ns == 2500);
  // collective_host_ns absent: 0, no collective calls listed.
  CHECK(parse("").collective_host_ns == 0);
  CHECK(parse(R"(, "collective_host_ns": 80000)").collective_host_ns == 80000);
  for (const std::string key : {"backward_kernel_overhead_ns", "collective_host_ns"}) {
    CHECK_THROWS_WITH(parse(", \"" + key + "\": -1"), Catch::Contains("t.json: " + key));
    CHECK_THROWS_WITH(parse(", \"" + key + "\": 20000000"),
                      Catch::Contains(key + ": 20000000 is more than 10 ms"));
  }
}

TEST_CASE("each GEMM runs on the tile that finishes it first", "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-175b");  // h 12288, tp 4: fc1 is l x 12288 x 12288
  DeviceSpec v100 = V100();
  OperatorModelParams& p = *v100.operator_model;
  p.tile_m = 128;
  p.tile_n = 128;
  p.tiles = {{64, 128}, {256, 128}};
  p.l2_bw_bytes_per_s = 2.155e12;
  p.tile_k_overhead = 0;
  const OperatorCostModel model(m, v100);
  auto fc1 = [&](int64_t l) {
    for (const OperatorTiming& t : model.Breakdown(Work(l, 0, 4), OperatorPass::kForward)) {
      if (std::strcmp(t.op.name, "fc1") == 0) return t;
    }
    FAIL("no fc1");
    return OperatorTiming{};
  };
  const double peak_sm = v100.PeakFlops() / v100.sm_count * p.gemm_efficiency;  // per SM
  // fc1 at l tokens on tm x tn tiles: ceil(l / tm) x 12288 / tn tiles (>= 96, so 80 busy
  // SMs, no split-K) in waves of 80; each tile is fed 2.155e12 / 80 bytes/s at
  // tm tn / (rows + tn) FLOP per byte, rows = l / ceil(l / tm) (the rows inside the matrix
  // that a tile loads, on average), and computes 2 tm tn 12288 FLOPs.
  auto time = [&](int64_t l, double tm, double tn) {
    const double tiles = std::ceil(l / tm) * (12288 / tn);
    const double rows = l / std::ceil(l / tm);
    const double rate = std::min(peak_sm, 2.155e12 / 80 * tm * tn / (rows + tn));
    return std::ceil(tiles / 80) * 2 * tm * tn * 12288 / rate;
  };
  // 64 tokens: 64 x 128 (96 tiles, 2 waves at 1.15e12 FLOP/s per SM: 0.35 ms) beats
  // 128 x 128 (96 tiles of which half is padding, 2 waves at the SM's peak: 0.57 ms) and
  // 256 x 128 (1.15 ms).
  CHECK(time(64, 64, 128) < time(64, 128, 128));
  CHECK(fc1(64).tile_m == 64);
  CHECK(fc1(64).tile_n == 128);
  CHECK(fc1(64).compute_s == Approx(time(64, 64, 128)));
  // 128 tokens: 96 full 128 x 128 tiles take 2 waves (the second 16 / 80 busy); 192 tiles of
  // 64 x 128 take 3 waves of 0.175 ms, 0.525 ms against 0.64 ms: wave quantization picks the
  // narrower tile even for a whole one.
  CHECK(fc1(128).tile_m == 64);
  CHECK(fc1(128).compute_s == Approx(time(128, 64, 128)));
  // In general the least of the three.
  for (int64_t l : {64, 100, 128, 200, 700, 2048}) {
    INFO("l " << l);
    CHECK(fc1(l).compute_s ==
          Approx(std::min({time(l, 128, 128), time(l, 64, 128), time(l, 256, 128)})));
  }
  // The choice never loses to the single 128 x 128 tile, for any operator of the layer.
  DeviceSpec single = v100;
  single.operator_model->tiles.clear();
  const OperatorCostModel one(m, single);
  for (int64_t l : {1, 64, 100, 120, 128, 200, 700, 2048}) {
    const auto many = model.Breakdown(Work(l, 0, 4), OperatorPass::kForward);
    const auto just = one.Breakdown(Work(l, 0, 4), OperatorPass::kForward);
    REQUIRE(many.size() == just.size());
    for (size_t i = 0; i < many.size(); ++i) {
      CHECK(many[i].compute_s <= just[i].compute_s * (1 + 1e-12));
    }
  }
}

TEST_CASE("a slice's cost grows with its context", "[models][operators]") {
  // gpt3-175b at tp 4, 120-token slices (setting 9): score tensors are 24 x 120 x (c + 120),
  // so every score-sized operator's bytes and the attention GEMMs' FLOPs grow with c.
  const OperatorCostModel model(LoadModelCard("gpt3-175b"), V100());
  auto gpu_seconds = [&](const SliceWork& w, OperatorPass pass) {
    double total = 0;
    for (const OperatorTiming& t : model.Breakdown(w, pass)) total += t.gpu_s;
    return total;
  };
  double gpu_previous[2] = {0, 0};
  TimeNs previous[2] = {0, 0};
  for (int64_t c : {0, 480, 960, 1440, 1928}) {
    for (int i : {0, 1}) {
      INFO("context " << c << (i ? " backward" : " forward"));
      SliceWork w = Work(120, c, 4);
      w.pass = i ? Pass::kBackward : Pass::kForward;
      // The GPU's work grows strictly; the queue's time never falls (a launch-bound forward
      // stays flat while the host's issue time hides the growth).
      const double gpu = gpu_seconds(w, i ? OperatorPass::kBackwardInput : OperatorPass::kForward);
      CHECK(gpu > gpu_previous[i]);
      gpu_previous[i] = gpu;
      const TimeNs t = model.Time(w);
      CHECK(t >= previous[i]);
      previous[i] = t;
    }
  }
  // From context 0 to 1928 the GPU-bound backward grows.
  SliceWork b0 = Work(120, 0, 4);
  b0.pass = Pass::kBackward;
  SliceWork b1 = Work(120, 1928, 4);
  b1.pass = Pass::kBackward;
  CHECK(model.Time(b1) > model.Time(b0));
}

TEST_CASE("operator_model: tiles, L2 bandwidth and GEMM streaming are optional and checked",
          "[models][operators]") {
  const auto parse = ParseWith;
  CHECK(parse("").tiles.empty());
  CHECK(parse("").l2_bw_bytes_per_s == 0);
  CHECK(parse("").gemm_memory_efficiency == 0.7);  // memory_efficiency when absent
  const OperatorModelParams p =
      parse(R"(, "tiles": [[64, 128]], "l2_bw_bytes_per_s": 2e12, "gemm_memory_efficiency": 0.9)");
  REQUIRE(p.tiles.size() == 1);
  CHECK(p.tiles[0].m == 64);
  CHECK(p.tiles[0].n == 128);
  CHECK(p.l2_bw_bytes_per_s == 2e12);
  CHECK(p.gemm_memory_efficiency == 0.9);
  CHECK_THROWS_WITH(parse(R"(, "tiles": [[64]])"), Catch::Contains("t.json: tiles[0]"));
  CHECK_THROWS_WITH(parse(R"(, "tiles": [[0, 64]])"), Catch::Contains("t.json: tiles[0]"));
  CHECK_THROWS_WITH(parse(R"(, "gemm_memory_efficiency": 1.5)"),
                    Catch::Contains("gemm_memory_efficiency"));
}

TEST_CASE(
    "the eager variant runs TeraPipe's layer: fp32 softmax, no dropout, a sequence-long "
    "key/value gradient, per-tensor accumulation",
    "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-175b");  // h 12288, 96 heads, sequence 2048
  const LayerOperatorOptions eager{false, false, 2};
  const LayerOperatorOptions fused{true, false, 2};
  const SliceWork w = Work(120, 1000, 4);
  const auto forward = LayerOperators(m, w, OperatorPass::kForward, eager);
  for (const LayerOperator& op : forward) {
    INFO(op.name);
    CHECK(std::strstr(op.name, "dropout") == nullptr);
  }
  // Score elements 24 x 120 x 1120; softmax reads fp16 and writes fp32, the cast the reverse.
  const int64_t score = 24 * 120 * 1120;
  CHECK(Find(forward, "softmax").bytes == 6 * score);
  CHECK(Find(forward, "softmax_cast").bytes == 6 * score);
  // Keys and values (h / t = 3072 columns, 2 bytes), each (terapipe commit bd366b5,
  // backward_step): zero-fill the 2048-row cache gradient, copy c + l rows in; sum the later
  // slices' gradient of the l new rows (read two, write one) unless the slice ends the
  // sequence; add the first c rows into the earlier slices' gradient unless c = 0.
  auto cache = [&](int64_t l, int64_t c) {
    return Find(LayerOperators(m, Work(l, c, 4), OperatorPass::kBackwardInput, eager),
                "kv_cache.bwd");
  };
  // A middle slice: 2048 + 2 x 1120 + 3 x 120 + 3 x 1000 = 7648 rows, four kernels each.
  CHECK(cache(120, 1000).bytes == 2 * 2 * 3072 * 7648);
  CHECK(cache(120, 1000).kernels == 8);
  // The first: 2048 + 240 + 360 = 2648 rows; the last (c + l = 2048): 2048 + 4096 + 5760 =
  // 11904; three kernels each. One slice of the whole sequence: 2048 + 4096, two each.
  CHECK(cache(120, 0).bytes == 2 * 2 * 3072 * 2648);
  CHECK(cache(120, 0).kernels == 6);
  CHECK(cache(128, 1920).bytes == 2 * 2 * 3072 * 11904);
  CHECK(cache(128, 1920).kernels == 6);
  CHECK(cache(2048, 0).bytes == 2 * 2 * 3072 * 6144);
  CHECK(cache(2048, 0).kernels == 4);
  // At the same length the traffic grows with the context: 3 bytes-rows per row of c more.
  CHECK(cache(120, 1500).bytes - cache(120, 1000).bytes == 2 * 2 * 3072 * 5 * 500);
  // w.grad += grad_w: three times the fused accumulation's bytes, one kernel per tensor.
  const auto eager_weight = LayerOperators(m, w, OperatorPass::kBackwardWeight, eager);
  const auto fused_weight = LayerOperators(m, w, OperatorPass::kBackwardWeight, fused);
  for (const char* name : {"mlp_grad_accumulate", "attn_grad_accumulate"}) {
    INFO(name);
    CHECK(Find(eager_weight, name).bytes == 3 * Find(fused_weight, name).bytes);
    CHECK(Find(eager_weight, name).kernels == 6);
  }
  // Forward kernels (transformer_models.py): attention 20 (LayerNorm 2, qkv and its bias 2,
  // q scaling 1, mask 4, cache writes 2, scores, mask add, softmax, cast, attn_v, layout 6,
  // proj and its bias 2, residual 1), MLP 8. The first slice (c = 0) builds its mask from an
  // empty new_zeros(l, 0), which launches nothing: 27.
  auto forward_kernels = [&](int64_t l, int64_t c) {
    int kernels = 0;
    for (const LayerOperator& op : LayerOperators(m, Work(l, c, 4), OperatorPass::kForward, eager))
      kernels += op.kernels;
    return kernels;
  };
  CHECK(forward_kernels(120, 1000) == 28);
  CHECK(forward_kernels(120, 0) == 27);
  CHECK(Find(LayerOperators(m, Work(120, 0, 4), OperatorPass::kForward, eager), "causal_mask")
            .kernels == 3);
  // Without the cache (full_cache=None, as TeraPipe's latency script runs a layer): the mask
  // in two kernels (new_full, triu_), no cache writes: 24; no sequence-long cache gradient.
  LayerOperatorOptions no_cache = eager;
  no_cache.kv_cache = false;
  int plain = 0;
  for (const LayerOperator& op :
       LayerOperators(m, Work(120, 0, 4), OperatorPass::kForward, no_cache))
    plain += op.kernels;
  CHECK(plain == 24);
  for (const LayerOperator& op :
       LayerOperators(m, Work(120, 0, 4), OperatorPass::kBackwardInput, no_cache)) {
    CHECK(std::strstr(op.name, "kv_cache") == nullptr);
  }
  // One pass of the gradient (weight_gradient_passes 1): nothing to accumulate.
  for (const LayerOperator& op :
       LayerOperators(m, w, OperatorPass::kBackwardWeight, {false, false, 1})) {
    CHECK(std::strstr(op.name, "accumulate") == nullptr);
  }
}

TEST_CASE("a partial GEMM tile loads only its rows inside the matrix", "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-175b");  // tp 4: fc1 is l x 12288 x 12288
  DeviceSpec v100 = V100();
  OperatorModelParams& p = *v100.operator_model;
  p.tile_m = 128;
  p.tile_n = 64;
  p.tiles.clear();
  p.l2_bw_bytes_per_s = 2.155e12;
  p.tile_k_overhead = 0;
  const OperatorCostModel model(m, v100);
  auto fc1 = [&](int64_t l) {
    for (const OperatorTiming& t : model.Breakdown(Work(l, 0, 4), OperatorPass::kForward)) {
      if (std::strcmp(t.op.name, "fc1") == 0) return t.compute_s;
    }
    FAIL("no fc1");
    return 0.0;
  };
  const double peak_sm = v100.PeakFlops() / v100.sm_count * p.gemm_efficiency;
  // Up to 128 tokens: 12288 / 64 = 192 tiles of 128 x 64, 3 waves of 80. Each tile's MMAs run
  // on all 128 rows, but per step of k it loads only the l rows inside the matrix and its 64
  // columns, 2 (l + 64) bytes from the L2's 2.155e12 / 80 bytes/s share: the rate is the
  // lesser of the SM's peak and that share times 128 x 64 / (l + 64) FLOP per byte.
  auto expected = [&](double l) {
    const double rate = std::min(peak_sm, 2.155e12 / 80 * 128 * 64 / (l + 64));
    return 3 * 2.0 * 128 * 64 * 12288 / rate;
  };
  for (int64_t l : {72, 88, 96, 104, 112, 120, 128}) {
    INFO("l " << l);
    CHECK(fc1(l) == Approx(expected(l)));
  }
  // 72 and 88 rows: fed faster than the SM computes (the plateau of tile quantization);
  // above about 93 rows the L2 feed limits, and the time grows with the rows, 176 : 192 from
  // 112 to 128, where a whole tile's loads would make it flat.
  CHECK(fc1(72) == Approx(fc1(88)));
  CHECK(fc1(128) / fc1(112) == Approx(192.0 / 176.0));
  CHECK(fc1(104) < fc1(112));
  CHECK(fc1(112) < fc1(120));
}

TEST_CASE("operator model: backward kernels pay the backward host time, forward ones not",
          "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-1b");
  DeviceSpec v100 = V100();
  // Host-bound on purpose: 1 ms per backward kernel dwarfs every kernel's GPU time at 1 token.
  v100.operator_model->backward_kernel_overhead_ns = 1000000;
  const OperatorCostModel model(m, v100);
  const OperatorCostModel same(m, V100());
  for (OperatorPass pass : {OperatorPass::kForward, OperatorPass::kRecompute}) {
    for (const OperatorTiming& t : model.Breakdown(Work(1), pass)) {
      CHECK(t.overhead_s ==
            Approx(NsToSeconds(v100.operator_model->kernel_overhead_ns) * t.op.kernels));
    }
  }
  int kernels = 0;
  double last_gpu_s = 0;
  for (const LayerOperator& op : LayerBackwardOperators(m, Work(1), {false, false, 2})) {
    kernels += op.kernels;
  }
  for (const OperatorTiming& t : model.Breakdown(Work(1), OperatorPass::kBackwardWeight)) {
    CHECK(t.overhead_s == Approx(1e-3 * t.op.kernels));
    last_gpu_s = t.gpu_s;  // the accumulation runs last in a whole backward
  }
  // Launch-bound queue: the host issues every kernel 1 ms apart. From empty the GPU runs the
  // last one after its issue: time = kernels x 1 ms + the last operator's GPU time; with the
  // V100's host running ahead (a run of such ops) the op takes its host time.
  SliceWork b = Work(1);
  b.pass = Pass::kBackward;
  REQUIRE(v100.operator_model->host_runs_ahead);
  CHECK(NsToSeconds(model.Time(b)) == Approx(kernels * 1e-3).epsilon(1e-6));
  DeviceSpec from_empty = v100;
  from_empty.operator_model->host_runs_ahead = false;
  CHECK(NsToSeconds(OperatorCostModel(m, from_empty).Time(b)) ==
        Approx(kernels * 1e-3 + last_gpu_s).epsilon(1e-6));
  // The forward does not change.
  SliceWork f = Work(1);
  f.pass = Pass::kForward;
  CHECK(model.Time(f) == same.Time(f));
}

TEST_CASE("whole backward: the same operators, eager in autograd's order", "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-13b");
  for (bool fused : {false, true}) {
    const LayerOperatorOptions options{fused, false, 2};
    const SliceWork w = Work(704, 1344, 8);
    std::vector<LayerOperator> apart = LayerOperators(m, w, OperatorPass::kBackwardInput, options);
    for (const LayerOperator& op : LayerOperators(m, w, OperatorPass::kBackwardWeight, options)) {
      apart.push_back(op);
    }
    const std::vector<LayerOperator> whole = LayerBackwardOperators(m, w, options);
    REQUIRE(whole.size() == apart.size());
    // Reordered, nothing added or lost: the same FLOPs, bytes and kernels.
    int64_t bytes[2] = {0, 0};
    int kernels[2] = {0, 0};
    for (size_t i = 0; i < whole.size(); ++i) {
      bytes[0] += whole[i].bytes;
      bytes[1] += apart[i].bytes;
      kernels[0] += whole[i].kernels;
      kernels[1] += apart[i].kernels;
    }
    CHECK(SumFlops(whole) == SumFlops(apart));
    CHECK(bytes[0] == bytes[1]);
    CHECK(kernels[0] == kernels[1]);
    if (fused) {
      for (size_t i = 0; i < whole.size(); ++i)
        CHECK(std::strcmp(whole[i].name, apart[i].name) == 0);
      continue;
    }
    // Eager: each linear's weight gradient right after its input gradient, the bias
    // gradients first in their block, `w.grad += grad_w` last.
    for (const char* linear : {"fc2", "fc1", "proj", "qkv"}) {
      const std::string dx = std::string(linear) + ".dX";
      const std::string dw = std::string(linear) + ".dW";
      for (size_t i = 0; i + 1 < whole.size(); ++i) {
        if (dx == whole[i].name) CHECK(dw == whole[i + 1].name);
      }
    }
    CHECK(std::strcmp(whole[0].name, "mlp_bias_grads") == 0);
    CHECK(std::strcmp(whole[whole.size() - 2].name, "mlp_grad_accumulate") == 0);
    CHECK(std::strcmp(whole.back().name, "attn_grad_accumulate") == 0);
  }
}

TEST_CASE("operator_model: layout_memory_efficiency is optional and checked",
          "[models][operators]") {
  CHECK(ParseWith("").layout_memory_efficiency == 0.7);  // memory_efficiency when absent
  CHECK(ParseWith(R"(, "layout_memory_efficiency": 0.4)").layout_memory_efficiency == 0.4);
  CHECK_THROWS_WITH(ParseWith(R"(, "layout_memory_efficiency": 0)"),
                    Catch::Contains("t.json: layout_memory_efficiency"));
  CHECK_THROWS_WITH(ParseWith(R"(, "layout_memory_efficiency": 1.2)"),
                    Catch::Contains("layout_memory_efficiency"));
}

TEST_CASE("row reductions, broadcasts and permuting copies run at the layout bandwidth",
          "[models][operators]") {
  // Eager (TeraPipe) forward at 1024 tokens: LayerNorm, the mask broadcast, softmax and the
  // layout copies are layout operators; bias adds, residual adds, ReLU and the cast stream.
  const ModelCard m = LoadModelCard("gpt3-1b");
  LayerOperatorOptions eager;
  const auto fwd = LayerOperators(m, Work(1024), OperatorPass::kForward, eager);
  for (const char* name : {"ln1", "ln2", "mask", "softmax", "context_layout", "causal_mask",
                           "q_scale", "kv_cache_write"}) {
    CHECK(Find(fwd, name).layout);
  }
  for (const char* name : {"qkv", "qkv_bias", "softmax_cast", "residual1", "relu", "fc2_bias"}) {
    CHECK_FALSE(Find(fwd, name).layout);
  }
  eager.weight_gradient_passes = 2;  // the accumulation is there from the second pass on
  const auto bwd = LayerOperators(m, Work(1024), OperatorPass::kBackwardWeight, eager);
  CHECK(Find(bwd, "mlp_bias_grads").layout);             // column sums: a reduction
  CHECK_FALSE(Find(bwd, "mlp_grad_accumulate").layout);  // w.grad += grad_w streams

  // A layout operator's time is bytes / (bandwidth x layout_memory_efficiency); a streaming
  // one's bytes / (bandwidth x memory_efficiency). Halving the layout efficiency doubles
  // softmax's GPU time and leaves softmax_cast's unchanged.
  DeviceSpec fast = V100();
  fast.operator_model->kernel_gpu_ns = 0;
  fast.operator_model->layout_memory_efficiency = 0.8;
  DeviceSpec slow = fast;
  slow.operator_model->layout_memory_efficiency = 0.4;
  const OperatorCostModel a(m, fast), b(m, slow);
  auto gpu = [](const std::vector<OperatorTiming>& ts, const char* name) {
    for (const OperatorTiming& t : ts) {
      if (std::strcmp(t.op.name, name) == 0) return t.gpu_s;
    }
    FAIL("no operator " << name);
    return 0.0;
  };
  const auto ta = a.Breakdown(Work(1024), OperatorPass::kForward);
  const auto tb = b.Breakdown(Work(1024), OperatorPass::kForward);
  const Bytes softmax_bytes = Find(fwd, "softmax").bytes;  // (2 + 4) x 16 x 1024 x 1024
  CHECK(softmax_bytes == 6 * 16 * 1024 * 1024);
  CHECK(gpu(ta, "softmax") == Approx(softmax_bytes / (fast.memory_bw_bytes_per_s * 0.8)));
  CHECK(gpu(tb, "softmax") == Approx(2 * gpu(ta, "softmax")));
  CHECK(gpu(tb, "softmax_cast") == Approx(gpu(ta, "softmax_cast")));
  CHECK(gpu(ta, "softmax_cast") ==
        Approx(Find(fwd, "softmax_cast").bytes /
               (fast.memory_bw_bytes_per_s * fast.operator_model->memory_efficiency)));
}

TEST_CASE("tensor-parallel collective calls: two per forward and backward, host time only",
          "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-13b");
  for (bool fused : {false, true}) {
    LayerOperatorOptions options;
    options.fused = fused;
    options.tp_collectives = true;
    auto names = [&](const std::vector<LayerOperator>& ops) {
      std::vector<std::string> out;
      for (const LayerOperator& op : ops) {
        if (op.kind == OperatorKind::kCollective) {
          // A call: no kernel on the compute stream, no FLOPs, no bytes.
          CHECK(op.kernels == 0);
          CHECK(op.flops == 0);
          CHECK(op.bytes == 0);
          out.push_back(op.name);
        }
      }
      return out;
    };
    // Megatron-LM's layers: the row-parallel reduce after proj and fc2, the column-parallel
    // input gradient's after fc1.dX and qkv.dX; nothing in backward-weight.
    const auto fwd = LayerOperators(m, Work(704, 0, 8), OperatorPass::kForward, options);
    CHECK(names(fwd) == std::vector<std::string>{"proj.allreduce", "fc2.allreduce"});
    for (size_t i = 0; i + 1 < fwd.size(); ++i) {
      if (std::strcmp(fwd[i].name, "proj") == 0)
        CHECK(std::strcmp(fwd[i + 1].name, "proj.allreduce") == 0);
    }
    CHECK(names(LayerOperators(m, Work(704, 0, 8), OperatorPass::kBackwardInput, options)) ==
          std::vector<std::string>{"fc1.dX.allreduce", "qkv.dX.allreduce"});
    CHECK(
        names(LayerOperators(m, Work(704, 0, 8), OperatorPass::kBackwardWeight, options)).empty());
    // Selective recomputation redoes the attention core only: no collective.
    CHECK(names(LayerOperators(m, Work(704, 0, 8), OperatorPass::kRecomputeSelective, options))
              .empty());
    // tp 1 has no collective, nor does a device without collective_host_ns.
    CHECK(names(LayerOperators(m, Work(704, 0, 1), OperatorPass::kForward, options)).empty());
    options.tp_collectives = false;
    CHECK(names(LayerOperators(m, Work(704, 0, 8), OperatorPass::kForward, options)).empty());
  }
  // Eager whole backward (autograd's order): the input gradient's all-reduce after the
  // linear's node, i.e. after its dW.
  LayerOperatorOptions eager;
  eager.tp_collectives = true;
  const auto whole = LayerBackwardOperators(m, Work(704, 0, 8), eager);
  for (size_t i = 0; i + 2 < whole.size(); ++i) {
    if (std::strcmp(whole[i].name, "qkv.dX") == 0) {
      CHECK(std::strcmp(whole[i + 1].name, "qkv.dW") == 0);
      CHECK(std::strcmp(whole[i + 2].name, "qkv.dX.allreduce") == 0);
    }
  }

  // Launch-bound (1 token at tp 8: every kernel's GPU time is under the 55 us of host time
  // per kernel): each call adds its host time to the pass, 2 x 1 ms per forward and per
  // backward; at tp 1 nothing changes.
  DeviceSpec with = V100();
  with.operator_model->collective_host_ns = 1000000;
  DeviceSpec without = V100();
  without.operator_model->collective_host_ns = 0;
  const OperatorCostModel a(m, with), b(m, without);
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    SliceWork w = Work(1, 0, 8);
    w.pass = pass;
    CHECK(NsToSeconds(a.Time(w)) == Approx(NsToSeconds(b.Time(w)) + 2e-3).epsilon(1e-6));
    w.tp = 1;
    CHECK(a.Time(w) == b.Time(w));
  }
  for (const OperatorTiming& t : a.Breakdown(Work(1, 0, 8), OperatorPass::kForward)) {
    if (t.op.kind != OperatorKind::kCollective) continue;
    CHECK(t.overhead_s == Approx(1e-3));
    CHECK(t.gpu_s == 0);
    CHECK(std::strcmp(t.bound, "host") == 0);
    CHECK(std::strcmp(OperatorKindName(t.op.kind), "collective") == 0);
  }
}

TEST_CASE("eager accumulation moves 6 bytes per stage parameter per slice whatever its tokens",
          "[models][operators]") {
  // `w.grad += grad_w` (TeraPipe, after every slice's autograd.grad): reads both fp16
  // gradients and writes one, 3 x 2 bytes per parameter of the rank's shard, so a short slice
  // pays as much as a long one (a gpt3-175b layer at tp 4: 12 h^2 / 4 + biases, 2.72 GB).
  const ModelCard m = LoadModelCard("gpt3-175b");
  const LayerOperatorOptions eager{false, false, 2};
  for (const auto& [tokens, context] : {std::pair<int64_t, int64_t>{120, 1200}, {2048, 0}}) {
    const auto ops =
        LayerOperators(m, Work(tokens, context, 4), OperatorPass::kBackwardWeight, eager);
    const Bytes mlp = Find(ops, "mlp_grad_accumulate").bytes;
    const Bytes attn = Find(ops, "attn_grad_accumulate").bytes;
    CHECK(mlp == 6 * LayerShardParams(m, 4, Block::kMlp));
    CHECK(attn == 6 * LayerShardParams(m, 4, Block::kAttention));
    // 12 h^2 / t weights of the whole layer (h 12288, t 4): at least 2.71e9 bytes.
    CHECK(mlp + attn >= 6 * 12 * 12288LL * 12288 / 4);
    CHECK(mlp + attn < 6 * 12 * 12288LL * 12288 / 4 + 6 * 13 * 12288);
  }
  // The eager whole backward issues it last, after every GEMM of the layer.
  const auto whole = LayerBackwardOperators(m, Work(120, 1200, 4), eager);
  CHECK(std::strstr(whole.back().name, "grad_accumulate") != nullptr);
}

TEST_CASE("host_runs_ahead: an op takes the longer of its GPU work and its host work",
          "[models][operators]") {
  const auto parse = ParseWith;
  CHECK_FALSE(parse("").host_runs_ahead);
  CHECK(parse(R"(, "host_runs_ahead": true)").host_runs_ahead);
  CHECK_THROWS_WITH(parse(R"(, "host_runs_ahead": 1)"), Catch::Contains("t.json"));

  const ModelCard m = LoadModelCard("gpt3-175b");
  const DeviceSpec ahead = V100HostAhead(true);
  const DeviceSpec empty = V100HostAhead(false);
  const OperatorCostModel a(m, ahead), e(m, empty);
  // Seconds of GPU and host work of one layer's `passes` (the host's: every kernel's issue time
  // and the tensor-parallel collective calls).
  auto sums = [](const OperatorCostModel& model, const SliceWork& w,
                 std::initializer_list<OperatorPass> passes) {
    std::pair<double, double> gpu_host{0, 0};
    for (OperatorPass pass : passes) {
      for (const OperatorTiming& t : model.Breakdown(w, pass)) {
        gpu_host.first += t.gpu_s;
        gpu_host.second += t.overhead_s;
      }
    }
    return gpu_host;
  };
  // In a run of such ops the host issues the next op's kernels while the GPU runs this one's,
  // so an op takes layers x max(GPU, host) (the run's period). GPU-bound: one gpt3-175b layer
  // at tp 4 and 2048 tokens queues about 24 ms of GPU work forward (45 ms backward) behind
  // about 3 ms of host issue time, so a pass takes its GPU work exactly, for one layer or two;
  // from empty the first kernels wait for their issue, so it takes longer.
  for (int layers : {1, 2}) {
    SliceWork f = Work(2048, 0, 4);
    f.layers = layers;
    f.pass = Pass::kForward;
    const auto [fwd_gpu, fwd_host] = sums(a, f, {OperatorPass::kForward});
    CHECK(fwd_gpu > fwd_host);
    CHECK(NsToSeconds(a.Time(f)) == Approx(layers * fwd_gpu).epsilon(1e-6));
    CHECK(e.Time(f) > a.Time(f));
    SliceWork b = f;
    b.pass = Pass::kBackward;
    const auto [bwd_gpu, bwd_host] =
        sums(a, b, {OperatorPass::kBackwardInput, OperatorPass::kBackwardWeight});
    CHECK(bwd_gpu > bwd_host);
    CHECK(NsToSeconds(a.Time(b)) == Approx(layers * bwd_gpu).epsilon(1e-6));
    CHECK(e.Time(b) > a.Time(b));
  }
  // Launch-bound: a 1-token slice of gpt3-1b issues 27 kernels forward (1.4 ms of host time)
  // for a few microseconds of GPU work each, and its backward's accumulation (0.3 GB) is short
  // of its host time too: the op takes its host time, and from empty the last kernel's GPU
  // time more. (A 175b layer's backward is GPU-bound even at 1 token: its accumulation moves
  // 2.7 GB.)
  const ModelCard small = LoadModelCard("gpt3-1b");
  const OperatorCostModel a1(small, ahead), e1(small, empty);
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    SliceWork w = Work(1);
    w.pass = pass;
    const auto [gpu, host] =
        pass == Pass::kForward
            ? sums(a1, w, {OperatorPass::kForward})
            : sums(a1, w, {OperatorPass::kBackwardInput, OperatorPass::kBackwardWeight});
    CHECK(host > gpu);
    CHECK(NsToSeconds(a1.Time(w)) == Approx(host).epsilon(1e-6));
    CHECK(e1.Time(w) > a1.Time(w));
  }
  // Either way never slower than from empty, and never faster than the GPU work (to the
  // nanosecond).
  for (int64_t tokens : {64, 120, 256, 512, 1024}) {
    SliceWork w = Work(tokens, 1000, 4);
    w.pass = Pass::kForward;
    const auto [gpu, host] = sums(a, w, {OperatorPass::kForward});
    CHECK(a.Time(w) == std::max<TimeNs>(1, std::llround(std::max(gpu, host) * 1e9)));
    CHECK(a.Time(w) <= e.Time(w));
  }
}

TEST_CASE("host_runs_ahead: a block's cost never falls as its context or its tokens grow",
          "[models][operators]") {
  // The slicing planner needs a unit's cost non-decreasing in tokens and context
  // (schedule/slicing_planner.h). The period max(GPU, host) is: GPU work grows with both
  // (score-sized kernels, l x (c + l)), host work does not fall. (The host lead of session 12,
  // GPU minus host time at the op's start, made a gpt3-175b block at tp 4 and 120 tokens
  // cheaper with more context: its extra GPU work hid host time it had counted already.)
  const ModelCard m = LoadModelCard("gpt3-175b");
  const OperatorCostModel a(m, V100HostAhead(true));
  for (Block block : {Block::kAttention, Block::kMlp}) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      for (int64_t tokens : {64, 104, 120, 128}) {
        TimeNs last = 0;
        // Up to the sequence's last slice, whose key/value gradient has no later slices' rows
        // to add (KvCacheBackward), which makes it cheaper than the one before.
        for (int64_t context = 0; context + tokens < 2048; context += 64) {
          SliceWork w = Work(tokens, context, 4, 1, block);
          w.pass = pass;
          INFO("block " << static_cast<int>(block) << " pass " << static_cast<int>(pass)
                        << " tokens " << tokens << " context " << context);
          CHECK(a.Time(w) >= last);
          last = a.Time(w);
        }
      }
      TimeNs last = 0;
      for (int64_t tokens = 8; tokens <= 256; tokens += 8) {
        SliceWork w = Work(tokens, 512, 4, 1, block);
        w.pass = pass;
        INFO("tokens " << tokens);
        CHECK(a.Time(w) >= last);
        last = a.Time(w);
      }
    }
  }
}

TEST_CASE("synchronized: an op timed from a synchronized start queues from empty",
          "[models][operators]") {
  const ModelCard m = LoadModelCard("gpt3-175b");
  const DeviceSpec ahead = V100HostAhead(true);
  const DeviceSpec empty = V100HostAhead(false);
  const OperatorCostModel a(m, ahead), e(m, empty);
  // On a device whose host runs ahead, `synchronized` drops the host's lead: the model is the
  // one of the same device without host_runs_ahead, to the nanosecond. A GPU-bound op (a 175b
  // layer at tp 4 and 2048 tokens: about 24 ms of GPU work forward behind about 2 ms of host
  // time) then waits for its first kernels' issue, so it takes longer than with the lead.
  const OperatorCostModel as(m, ahead, false, true, /*synchronized=*/true);
  CHECK_FALSE(as.params().host_runs_ahead);
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (int layers : {1, 2}) {
      SliceWork w = Work(2048, 0, 4);
      w.layers = layers;
      w.pass = pass;
      CHECK(as.Time(w) == e.Time(w));
      CHECK(as.Time(w) > a.Time(w));
    }
  }
  // On a device without host_runs_ahead every queue already starts empty: unchanged.
  const OperatorCostModel es(m, empty, false, true, /*synchronized=*/true);
  for (int64_t tokens : {1, 256, 2048}) {
    SliceWork w = Work(tokens, 0, 4);
    w.pass = Pass::kForward;
    CHECK(es.Time(w) == e.Time(w));
    w.pass = Pass::kBackward;
    CHECK(es.Time(w) == e.Time(w));
  }
}

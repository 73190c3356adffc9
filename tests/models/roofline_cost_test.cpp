#include <catch2/catch.hpp>

#include <cmath>

#include "models/device_spec.h"
#include "models/layer_flops.h"
#include "models/layer_operators.h"
#include "models/memory_model.h"
#include "models/roofline_cost.h"

using namespace terasim;

namespace {

SliceWork Work(Pass pass, int64_t tokens, int64_t context = 0, int tp = 1,
               Block block = Block::kWhole, int rows = 1) {
  SliceWork w;
  w.pass = pass;
  w.rows = rows;
  w.tokens = tokens;
  w.context = context;
  w.tp = tp;
  w.block = block;
  return w;
}

double Ms(TimeNs t) { return static_cast<double>(t) / 1e6; }

RooflineCostModel V100Gpt1b() {
  return RooflineCostModel(LoadModelCard("gpt3-1b"), LoadDeviceSpec("v100-sxm2-16gb"));
}

// The V100 spec with negligible compute (efficiency 1, saturation 1 FLOP), so that every pass
// is memory-bound: time = overhead + bytes / (bandwidth x memory efficiency).
DeviceSpec MemoryBoundV100() {
  DeviceSpec device = LoadDeviceSpec("v100-sxm2-16gb");
  device.compute.efficiency_max = 1.0;
  device.compute.saturation_flops = 1.0;
  return device;
}

}  // namespace

TEST_CASE("roofline reproduces the V100 gpt3-1b calibration points", "[models][roofline]") {
  RooflineCostModel model = V100Gpt1b();
  // FACTS.md: one gpt3-1b layer forward on one V100 takes about 1.45 ms, flat from 1 to 256
  // tokens (within 10%).
  for (int64_t tokens : {1, 2, 4, 16, 32, 64, 128, 200, 256}) {
    INFO("tokens " << tokens);
    CHECK(Ms(model.Time(Work(Pass::kForward, tokens))) == Approx(1.45).epsilon(0.10));
  }
  // ... and about 2.7 ms at 1024 tokens (within 10%).
  CHECK(Ms(model.Time(Work(Pass::kForward, 1024))) == Approx(2.7).epsilon(0.10));
}

TEST_CASE("roofline time grows monotonically with tokens and context", "[models][roofline]") {
  RooflineCostModel model = V100Gpt1b();
  TimeNs previous = 0;
  for (int64_t tokens = 1; tokens <= 2048; ++tokens) {
    const TimeNs t = model.Time(Work(Pass::kForward, tokens));
    INFO("tokens " << tokens);
    REQUIRE(t >= previous);
    previous = t;
  }
  // Past the floor it rises: 2048 tokens take about twice 1024 (linear regime).
  CHECK(model.Time(Work(Pass::kForward, 2048)) > model.Time(Work(Pass::kForward, 1024)));
  previous = 0;
  for (int64_t context = 0; context <= 2048 - 64; context += 16) {
    const TimeNs t = model.Time(Work(Pass::kForward, 64, context));
    INFO("context " << context);
    REQUIRE(t >= previous);
    previous = t;
  }
  CHECK(model.Time(Work(Pass::kForward, 512, 1536)) > model.Time(Work(Pass::kForward, 512, 0)));
  // More rows cost more once past the floor.
  CHECK(model.Time(Work(Pass::kForward, 512, 0, 1, Block::kWhole, 4)) >
        model.Time(Work(Pass::kForward, 512)));
}

TEST_CASE("roofline backward is about twice the forward", "[models][roofline]") {
  RooflineCostModel model = V100Gpt1b();
  for (int64_t tokens : {1, 64, 256, 1024, 2048}) {
    INFO("tokens " << tokens);
    const double fwd = static_cast<double>(model.Time(Work(Pass::kForward, tokens)));
    const double bwd = static_cast<double>(model.Time(Work(Pass::kBackward, tokens)));
    // Serial score kernels: the forward and the backward-input pass each add the score
    // traffic S = bytes per element x a l^2 / bandwidth once; the backward-weight pass none.
    const ComputeModelParams& p = model.device().compute;
    const double score_ns =
        p.score_kernels_serial
            ? p.score_bytes_per_element *
                  static_cast<double>(ScoreElements(model.model(), Work(Pass::kForward, tokens))) /
                  (model.device().memory_bw_bytes_per_s * p.memory_efficiency) * 1e9
            : 0.0;
    // backward + S ~ 2 x forward (FLOPs 2x; input and weight halves each pay the floor).
    CHECK((bwd + score_ns) / fwd == Approx(2.0).epsilon(0.05));
    // backward = backward input + backward weight (within rounding).
    const TimeNs input = model.Time(Work(Pass::kBackwardInput, tokens));
    const TimeNs weight = model.Time(Work(Pass::kBackwardWeight, tokens));
    CHECK(std::abs(model.Time(Work(Pass::kBackward, tokens)) - (input + weight)) <= 1);
  }
}

TEST_CASE("roofline splits a layer into blocks and layers add up", "[models][roofline]") {
  RooflineCostModel model = V100Gpt1b();
  for (int64_t tokens : {16, 1024}) {
    const double whole = static_cast<double>(model.Time(Work(Pass::kForward, tokens)));
    const double halves =
        static_cast<double>(model.Time(Work(Pass::kForward, tokens, 0, 1, Block::kAttention)) +
                            model.Time(Work(Pass::kForward, tokens, 0, 1, Block::kMlp)));
    // The attn and mlp blocks share the layer's floor and overhead: together about one layer.
    CHECK(halves / whole == Approx(1.0).epsilon(0.05));
  }
  SliceWork four = Work(Pass::kForward, 300);
  four.layers = 4;
  // 4 layers cost 4 x one layer (within rounding).
  CHECK(std::abs(model.Time(four) - 4 * model.Time(Work(Pass::kForward, 300))) <= 4);
  // Tensor parallelism cuts the large-slice time.
  CHECK(model.Time(Work(Pass::kForward, 2048, 0, 8)) < model.Time(Work(Pass::kForward, 2048)) / 2);
}

TEST_CASE("roofline optimizer time is the Adam state bytes over memory bandwidth",
          "[models][roofline]") {
  RooflineCostModel model = V100Gpt1b();
  const DeviceSpec& v100 = model.device();
  SliceWork opt = Work(Pass::kOptimizer, 0);
  opt.layers = 24;
  // 24 layers x 28 bytes per parameter / (900 GB/s x memory efficiency).
  const double expected_s = 24.0 * 28 * model.model().ParamsPerLayer() /
                            (v100.memory_bw_bytes_per_s * v100.compute.memory_efficiency);
  CHECK(static_cast<double>(model.Time(opt)) == Approx(expected_s * 1e9).margin(1));
  CHECK(model.Name() == "roofline v100-sxm2-16gb gpt3-1b");
}

TEST_CASE("faster devices are faster on large slices", "[models][roofline]") {
  ModelCard m = LoadModelCard("gpt3-13b");
  RooflineCostModel v100(m, LoadDeviceSpec("v100-sxm2-16gb"));
  RooflineCostModel a100(m, LoadDeviceSpec("a100-40gb"));
  RooflineCostModel h100(m, LoadDeviceSpec("h100-80gb"));
  const SliceWork w = Work(Pass::kForward, 2048);
  CHECK(a100.Time(w) < v100.Time(w));
  CHECK(h100.Time(w) < a100.Time(w));
}

TEST_CASE("weight-gradient accumulation adds weight-sized traffic to the backward-weight pass",
          "[models][roofline]") {
  ModelCard m = LoadModelCard("gpt3-175b");
  DeviceSpec device = MemoryBoundV100();
  device.compute.weight_gradient_passes = 1;
  RooflineCostModel once(m, device);
  device.compute.weight_gradient_passes = 4;
  RooflineCostModel accumulated(m, device);
  const SliceWork weight = Work(Pass::kBackwardWeight, 16, 0, 4, Block::kMlp);
  // Three more fp16 copies of the tp-4 MLP shard's weights over the memory bandwidth:
  // 3 x 2 bytes x params / (900 GB/s x memory efficiency).
  const double extra_ns = 3 * 2.0 * static_cast<double>(LayerShardParams(m, 4, Block::kMlp)) /
                          (device.memory_bw_bytes_per_s * device.compute.memory_efficiency) * 1e9;
  CHECK(static_cast<double>(accumulated.Time(weight) - once.Time(weight)) ==
        Approx(extra_ns).margin(2));
  // The forward and the backward-input pass move no gradient: unchanged.
  for (Pass pass : {Pass::kForward, Pass::kBackwardInput}) {
    const SliceWork w = Work(pass, 16, 0, 4, Block::kMlp);
    CHECK(accumulated.Time(w) == once.Time(w));
  }
}

TEST_CASE("host overlap: a pass costs the smooth maximum of host and GPU time",
          "[models][roofline]") {
  ModelCard m = LoadModelCard("gpt3-1b");
  DeviceSpec device = LoadDeviceSpec("v100-sxm2-16gb");
  // The data file's form is the additive one unless it opts in.
  REQUIRE(device.compute.host_overlap_sharpness == 0);
  // Memory so fast that the GPU time is the compute alone: G = C.
  device.memory_bw_bytes_per_s = 1e30;
  device.compute.kernel_overhead_ns_per_layer = 0;
  const double gpu_ns =
      static_cast<double>(RooflineCostModel(m, device).Time(Work(Pass::kForward, 1024)));
  for (TimeNs host_ns : {TimeNs{500'000}, TimeNs{1'450'000}, TimeNs{5'000'000}}) {
    INFO("host " << host_ns << " ns, gpu " << gpu_ns << " ns");
    const double h = static_cast<double>(host_ns);
    device.compute.kernel_overhead_ns_per_layer = host_ns;
    device.compute.host_overlap_sharpness = 0;
    // Off: overhead + max(compute, memory) = H + G.
    CHECK(static_cast<double>(RooflineCostModel(m, device).Time(Work(Pass::kForward, 1024))) ==
          Approx(h + gpu_ns).margin(2));
    // q = 1: the sum again, H + G.
    device.compute.host_overlap_sharpness = 1;
    CHECK(static_cast<double>(RooflineCostModel(m, device).Time(Work(Pass::kForward, 1024))) ==
          Approx(h + gpu_ns).margin(2));
    // q = 4 (power of two, the fast path) and q = 3 (pow): (H^q + G^q)^(1/q).
    for (double q : {3.0, 4.0}) {
      device.compute.host_overlap_sharpness = q;
      const double expected = std::pow(std::pow(h, q) + std::pow(gpu_ns, q), 1.0 / q);
      CHECK(static_cast<double>(RooflineCostModel(m, device).Time(Work(Pass::kForward, 1024))) ==
            Approx(expected).margin(2));
    }
    // q = 64: within 2^(1/64) - 1 = 1.1% of max(H, G), never below it.
    device.compute.host_overlap_sharpness = 64;
    const double t =
        static_cast<double>(RooflineCostModel(m, device).Time(Work(Pass::kForward, 1024)));
    CHECK(t >= std::max(h, gpu_ns) - 1);
    CHECK(t <= std::max(h, gpu_ns) * 1.011);
  }
}

TEST_CASE("score bytes per element add traffic growing with the context", "[models][roofline]") {
  ModelCard m = LoadModelCard("gpt3-175b");
  DeviceSpec device = MemoryBoundV100();
  // The V100 file sets its own fitted figure; "plain" is the model without score traffic.
  device.compute.score_bytes_per_element = 0;
  RooflineCostModel plain(m, device);
  device.compute.score_bytes_per_element = 16;
  RooflineCostModel eager(m, device);
  const double bw = device.memory_bw_bytes_per_s * device.compute.memory_efficiency;
  for (int64_t context : {0, 512, 1928}) {
    INFO("context " << context);
    const SliceWork fwd = Work(Pass::kForward, 120, context, 4);
    // 16 bytes x b (a / t) l (c + l) = 16 x 1 x 24 x 120 x (c + 120) over the bandwidth.
    const double extra_ns = 16.0 * 24 * 120 * static_cast<double>(context + 120) / bw * 1e9;
    CHECK(static_cast<double>(eager.Time(fwd) - plain.Time(fwd)) == Approx(extra_ns).margin(2));
    const SliceWork input = Work(Pass::kBackwardInput, 120, context, 4);
    CHECK(static_cast<double>(eager.Time(input) - plain.Time(input)) == Approx(extra_ns).margin(2));
    // The weight-gradient pass and the MLP half touch no scores.
    const SliceWork weight = Work(Pass::kBackwardWeight, 120, context, 4);
    CHECK(eager.Time(weight) == plain.Time(weight));
    const SliceWork mlp = Work(Pass::kForward, 120, context, 4, Block::kMlp);
    CHECK(eager.Time(mlp) == plain.Time(mlp));
  }
}

TEST_CASE("serial score kernels add their traffic even to a compute-bound pass",
          "[models][roofline]") {
  ModelCard m = LoadModelCard("gpt3-175b");
  DeviceSpec device = LoadDeviceSpec("v100-sxm2-16gb");
  // 1% of the peak: every pass below is compute-bound by far, so memory hides under compute.
  device.compute.efficiency_max = 0.01;
  device.compute.score_bytes_per_element = 0;
  device.compute.score_kernels_serial = false;
  RooflineCostModel plain(m, device);
  device.compute.score_bytes_per_element = 16;
  RooflineCostModel hidden(m, device);
  device.compute.score_kernels_serial = true;
  RooflineCostModel serial(m, device);
  const double bw = device.memory_bw_bytes_per_s * device.compute.memory_efficiency;
  for (int64_t context : {0, 512, 1928}) {
    INFO("context " << context);
    for (Pass pass : {Pass::kForward, Pass::kBackwardInput}) {
      const SliceWork w = Work(pass, 120, context, 4);
      // Overlapped: the traffic joins max(compute, memory) and compute is the larger.
      CHECK(hidden.Time(w) == plain.Time(w));
      // Serial: 16 bytes x b (a / t) l (c + l) = 16 x 24 x 120 x (c + 120) over the bandwidth.
      const double extra_ns = 16.0 * 24 * 120 * static_cast<double>(context + 120) / bw * 1e9;
      CHECK(static_cast<double>(serial.Time(w) - plain.Time(w)) == Approx(extra_ns).margin(2));
    }
    // The weight-gradient pass touches no scores.
    const SliceWork weight = Work(Pass::kBackwardWeight, 120, context, 4);
    CHECK(serial.Time(weight) == plain.Time(weight));
  }
}

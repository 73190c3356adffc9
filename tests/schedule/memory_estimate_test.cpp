#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "models/device_spec.h"
#include "models/memory_model.h"
#include "models/model_card.h"
#include "schedule/generator.h"
#include "schedule/memory_estimate.h"

using namespace terasim;

namespace {

// A compute op of the tiny model on device 0, stage 0, all its layers.
Op Compute(OpKind kind, int microbatch, int t0, int t1, const std::string& key) {
  Op op;
  op.key = key;
  op.kind = kind;
  op.device = 0;
  op.stream = "compute";
  op.stage = 0;
  op.layers = {0, 4};
  op.microbatch = microbatch;
  op.rows = 1;
  op.tokens = {t0, t1};
  return op;
}

Schedule OneDevice(std::vector<Op> ops) {
  Schedule s;
  s.model = "tiny";
  s.layers = 4;
  s.sequence = 32;
  s.devices = 1;
  s.batch = 2;
  s.ops = std::move(ops);
  return s;
}

}  // namespace

TEST_CASE("activations live from forward to backward: flush holds all, 1F1B holds one",
          "[schedule][memory]") {
  const ModelCard tiny = LoadModelCard("tiny");
  const DeviceSpec v100 = LoadDeviceSpec("v100-sxm2-16gb");
  const Bytes one = 4 * LayerActivationBytes(tiny, 1, 32, 0, 1, Block::kWhole);
  // 16 bytes per parameter of the 4 layers held.
  const Bytes state = 16 * 4 * tiny.ParamsPerLayer();

  MemoryEstimate flush = EstimateMemory(
      OneDevice({Compute(OpKind::kFwd, 0, 0, 32, "F0"), Compute(OpKind::kFwd, 1, 0, 32, "F1"),
                 Compute(OpKind::kBwd, 1, 0, 32, "B1"), Compute(OpKind::kBwd, 0, 0, 32, "B0")}),
      tiny, v100);
  REQUIRE(flush.devices.size() == 1);
  // Both micro-batches' activations at once, no key/value cache (sequences not cut).
  CHECK(flush.devices[0].activations == 2 * one);
  CHECK(flush.devices[0].kv_cache == 0);
  CHECK(flush.devices[0].state.Total() == state);
  CHECK(flush.devices[0].peak == state + 2 * one);
  CHECK(flush.devices[0].peak_key == "F1");
  CHECK(flush.fits);

  MemoryEstimate interleaved = EstimateMemory(
      OneDevice({Compute(OpKind::kFwd, 0, 0, 32, "F0"), Compute(OpKind::kBwd, 0, 0, 32, "B0"),
                 Compute(OpKind::kFwd, 1, 0, 32, "F1"), Compute(OpKind::kBwd, 1, 0, 32, "B1")}),
      tiny, v100);
  // One micro-batch at a time.
  CHECK(interleaved.devices[0].activations == one);
}

TEST_CASE("token slices keep their activations and key/value cache until their backward",
          "[schedule][memory]") {
  const ModelCard tiny = LoadModelCard("tiny");
  const DeviceSpec v100 = LoadDeviceSpec("v100-sxm2-16gb");
  MemoryEstimate e = EstimateMemory(
      OneDevice({Compute(OpKind::kFwd, 0, 0, 16, "Fa"), Compute(OpKind::kFwd, 0, 16, 32, "Fb"),
                 Compute(OpKind::kBwd, 0, 16, 32, "Bb"), Compute(OpKind::kBwd, 0, 0, 16, "Ba")}),
      tiny, v100);
  // Peak after the second slice: 4 layers x (slice [0,16) + slice [16,32) after 16 of context).
  CHECK(e.devices[0].activations == 4 * (LayerActivationBytes(tiny, 1, 16, 0, 1, Block::kWhole) +
                                         LayerActivationBytes(tiny, 1, 16, 16, 1, Block::kWhole)));
  // Key/value cache: 4 layers x 2 slices x 2 x 16 tokens x 64 hidden x 2 bytes.
  CHECK(e.devices[0].kv_cache == 4 * 2 * (2 * 16 * 64 * 2));
  CHECK(e.devices[0].peak_key == "Fb");
}

TEST_CASE("a split backward frees activations at its weight half", "[schedule][memory]") {
  const ModelCard tiny = LoadModelCard("tiny");
  const DeviceSpec v100 = LoadDeviceSpec("v100-sxm2-16gb");
  const Bytes one = 4 * LayerActivationBytes(tiny, 1, 32, 0, 1, Block::kWhole);
  MemoryEstimate e = EstimateMemory(
      OneDevice({Compute(OpKind::kFwd, 0, 0, 32, "F0"), Compute(OpKind::kBwdInput, 0, 0, 32, "I0"),
                 Compute(OpKind::kFwd, 1, 0, 32, "F1"), Compute(OpKind::kBwdWeight, 0, 0, 32, "W0"),
                 Compute(OpKind::kBwdInput, 1, 0, 32, "I1"),
                 Compute(OpKind::kBwdWeight, 1, 0, 32, "W1")}),
      tiny, v100);
  // F1 runs before W0 frees micro-batch 0: two micro-batches live.
  CHECK(e.devices[0].activations == 2 * one);
}

TEST_CASE("boundary buffers and tp shards count per device", "[schedule][memory]") {
  const ModelCard tiny = LoadModelCard("tiny");
  const DeviceSpec v100 = LoadDeviceSpec("v100-sxm2-16gb");
  Schedule s = OneDevice({});
  s.devices = 2;
  s.groups.push_back(Group{"tp.d0.s0", {0, 1}, 0});
  for (int d = 0; d < 2; ++d) {
    for (LayerPart part : {LayerPart::kAttention, LayerPart::kMlp}) {
      Op op = Compute(OpKind::kFwd, 0, 0, 32,
                      "F.l0." + std::to_string(d) + std::string(LayerPartName(part)));
      op.device = d;
      op.layers = {0, 1};
      op.part = part;
      op.group = "tp.d0.s0";
      s.ops.push_back(op);
    }
  }
  Op send;
  send.key = "SF";
  send.kind = OpKind::kSend;
  send.device = 1;
  send.stream = "send";
  send.peer = 0;
  send.bytes = 4096;
  s.ops.push_back(send);
  MemoryEstimate e = EstimateMemory(s, tiny, v100);
  REQUIRE(e.devices.size() == 2);
  // One layer sharded two ways: (4 h^2 + 2 h f + 3 h + f) / 2 + 6 h parameters.
  CHECK(e.devices[0].params == LayerShardParams(tiny, 2, Block::kWhole));
  CHECK(e.devices[0].activations == LayerActivationBytes(tiny, 1, 32, 0, 2, Block::kWhole));
  // One inbound and one outbound buffer of the largest boundary tensor.
  CHECK(e.devices[0].boundary == 0);
  CHECK(e.devices[1].boundary == 2 * 4096);
  CHECK(e.peak_device == 1);
}

TEST_CASE("gpt3-175b with 2 sequences fits 16 GB V100s at 1 x 48 x 8 but not at 1 x 4 x 8",
          "[schedule][memory]") {
  const ModelCard m = LoadModelCard("gpt3-175b");
  const DeviceSpec v100 = LoadDeviceSpec("v100-sxm2-16gb");
  GenerateOptions g;
  g.model = m;
  g.strategy = Strategy::kGpipe;
  g.dp = 1;
  g.tp = 8;
  g.microbatches = 2;  // one micro-batch per sequence
  g.microbatch_size = 1;

  SECTION("1 x 48 x 8 (Table 1 setting 10)") {
    g.pp = 48;
    const MemoryEstimate e = EstimateMemory(Generate(g), m, v100);
    // Per-stage formula for every device: 2 layers of the tp-8 shard at 16 bytes per
    // parameter, activations of 2 micro-batches x 2 layers (s b h (10 + 24/t + 5 a s / (h t))
    // each), and 2 boundary tensors of s h 2 bytes.
    const Bytes state = 16 * 2 * LayerShardParams(m, 8, Block::kWhole);
    const Bytes activations = 2 * 2 * LayerActivationBytes(m, 1, 2048, 0, 8, Block::kWhole);
    const Bytes boundary = 2 * BoundaryTensorBytes(m, 1, 2048);
    const DeviceMemory& middle = e.devices[8 * 20 + 3];  // stage 20, tp rank 3
    CHECK(middle.state.Total() == state);
    CHECK(middle.activations == activations);
    CHECK(middle.boundary == boundary);
    CHECK(middle.peak == state + activations + boundary);
    // About 9.0 GiB of the 14 GiB capacity.
    CHECK(e.peak_bytes == state + activations + boundary);
    CHECK(e.capacity_bytes == 14LL << 30);
    CHECK(e.fits);
    CHECK_THAT(e.reason, Catch::StartsWith("fits: largest device "));
    CHECK_THAT(e.reason, Catch::Contains("peak 9.00 GiB = state 6.75 GiB"));
    CHECK_THAT(e.reason, Catch::Contains("<= capacity 14.00 GiB (16.00 GiB less 2.00 GiB reserve, "
                                         "v100-sxm2-16gb)"));
  }
  SECTION("1 x 4 x 8") {
    g.pp = 4;
    const MemoryEstimate e = EstimateMemory(Generate(g), m, v100);
    // 24 layers per stage: 16 x 24 x 226.6 M parameters = 81 GiB of state alone.
    CHECK(e.devices[0].state.Total() == 16 * 24 * LayerShardParams(m, 8, Block::kWhole));
    CHECK(!e.fits);
    CHECK_THAT(e.reason, Catch::StartsWith("does not fit: largest device "));
    CHECK_THAT(e.reason, Catch::Contains("state 81.03 GiB"));
    CHECK_THAT(e.reason, Catch::Contains("> capacity 14.00 GiB"));
  }
}

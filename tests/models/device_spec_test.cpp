#include <catch2/catch.hpp>

#include "models/device_spec.h"
#include "models/errors.h"

using namespace terasim;

namespace {

// A valid spec; tests replace one piece of it.
const char* kGoodSpec = R"({
  "name": "test-gpu", "product": "Test GPU",
  "peak_fp16_tensor_flops": 100e12, "peak_bf16_tensor_flops": 0, "peak_fp32_flops": 10e12,
  "memory_bytes": 1000, "memory_reserve_bytes": 100, "memory_bw_bytes_per_s": 1e12,
  "sm_count": 10,
  "compute_model": {"precision": "fp16", "efficiency_max": 0.5, "saturation_flops": 1e9,
                    "sharpness": 4, "kernel_overhead_ns_per_layer": 1000,
                    "memory_efficiency": 0.8, "note": "test"},
  "source": "test"
})";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

std::string ErrorOf(const std::string& text) {
  try {
    ParseDeviceSpec(text, "bad.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("every device spec loads with its datasheet numbers", "[models][device]") {
  std::vector<DeviceSpec> specs = ListDeviceSpecs();
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  // The six devices of the brief and the cpu core of the `local` topology, sorted by name.
  CHECK(names == std::vector<std::string>{"a100-40gb", "a100-80gb", "h100-80gb", "h200",
                                          "local-cpu", "v100-sxm2-16gb", "v100-sxm2-32gb"});
  for (const auto& s : specs) {
    CHECK(!s.source.empty());
    CHECK(!s.compute.note.empty());
    // GPUs: the tensor-core peak is above fp32; the cpu core computes in fp32.
    if (s.compute.precision != Precision::kFp32) CHECK(s.PeakFlops() > s.peak_fp32_flops);
  }

  DeviceSpec v100 = LoadDeviceSpec("v100-sxm2-16gb");
  // FACTS.md: 125 TFLOP/s fp16 tensor, 15.7 fp32, about 900 GB/s, 16 GB.
  CHECK(v100.peak_fp16_tensor_flops == 125e12);
  CHECK(v100.peak_fp32_flops == 15.7e12);
  CHECK(v100.memory_bw_bytes_per_s == 900e9);
  CHECK(v100.memory_bytes == 16LL << 30);
  // FACTS.md: a configuration is skipped above 14 GB of the 16 GB.
  CHECK(v100.CapacityBytes() == 14LL << 30);
  CHECK(v100.compute.precision == Precision::kFp16);

  DeviceSpec a100 = LoadDeviceSpec("a100-40gb");
  // A100 datasheet: 312 TFLOP/s bf16, 19.5 fp32, 1.555 TB/s.
  CHECK(a100.PeakFlops() == 312e12);
  CHECK(a100.peak_fp32_flops == 19.5e12);
  CHECK(a100.memory_bw_bytes_per_s == 1.555e12);
  CHECK(LoadDeviceSpec("a100-80gb").memory_bw_bytes_per_s == 2.039e12);
  // H100 SXM: 989 TFLOP/s bf16 dense, 67 fp32, 3.35 TB/s; H200: same chip, 4.8 TB/s.
  DeviceSpec h100 = LoadDeviceSpec("h100-80gb");
  CHECK(h100.PeakFlops() == 989e12);
  CHECK(h100.peak_fp32_flops == 67e12);
  CHECK(h100.memory_bw_bytes_per_s == 3.35e12);
  DeviceSpec h200 = LoadDeviceSpec("h200");
  CHECK(h200.PeakFlops() == 989e12);
  CHECK(h200.memory_bw_bytes_per_s == 4.8e12);
  CHECK(h200.memory_bytes == 141LL << 30);
}

TEST_CASE("malformed device specs name the file and the field", "[models][device]") {
  CHECK(ErrorOf(kGoodSpec) == "no error");
  CHECK(ErrorOf(Replace(kGoodSpec, R"("sm_count": 10,)", "")) == "bad.json: sm_count: missing");
  CHECK(ErrorOf(Replace(kGoodSpec, "\"peak_fp32_flops\": 10e12", "\"peak_fp32_flops\": -1")) ==
        "bad.json: peak_fp32_flops: must be > 0 (got -1)");
  CHECK(ErrorOf(Replace(kGoodSpec, "\"memory_reserve_bytes\": 100",
                        "\"memory_reserve_bytes\": 1000")) ==
        "bad.json: memory_reserve_bytes: 1000 must be less than memory_bytes 1000");
  CHECK(ErrorOf(Replace(kGoodSpec, "\"efficiency_max\": 0.5", "\"efficiency_max\": 1.5")) ==
        "bad.json: compute_model: efficiency_max: must be <= 1 (got 1.5)");
  CHECK(ErrorOf(Replace(kGoodSpec, "\"precision\": \"fp16\"", "\"precision\": \"bf16\"")) ==
        "bad.json: compute_model: precision: the device has no bf16 peak");
  CHECK(ErrorOf(Replace(kGoodSpec, "\"precision\": \"fp16\"", "\"precision\": \"int8\"")) ==
        "bad.json: compute_model: precision: 'int8' must be one of fp16, bf16, fp32");
  CHECK(ErrorOf(Replace(kGoodSpec, "\"memory_efficiency\": 0.8",
                        "\"memory_efficiency\": 0.8, \"weight_gradient_passes\": 0")) ==
        "bad.json: compute_model: weight_gradient_passes: must be >= 1 (got 0)");
  CHECK(ErrorOf(Replace(kGoodSpec, "\"memory_efficiency\": 0.8",
                        "\"memory_efficiency\": 0.8, \"weight_gradient_passes\": 17")) ==
        "bad.json: compute_model: weight_gradient_passes: must be <= 16 (got 17)");
  // Left out, a backward-weight pass writes its gradient once.
  CHECK(ParseDeviceSpec(kGoodSpec, "good.json").compute.weight_gradient_passes == 1);
  CHECK(ErrorOf(Replace(kGoodSpec, "\"sm_count\"", "\"sm_cnt\"")) ==
        "bad.json: sm_cnt: unknown field");
  CHECK(ErrorOf("{\"name\": \"x\",\n  \"product\": }").find("bad.json: line 2") == 0);
  CHECK_THROWS_WITH(LoadDeviceSpec("no-such-gpu"),
                    Catch::StartsWith("--device no-such-gpu: no such device spec (known: "));
}

TEST_CASE("the layer model's optional overlap fields are checked and default to off",
          "[models][device]") {
  const ComputeModelParams defaults = ParseDeviceSpec(kGoodSpec, "good.json").compute;
  CHECK(defaults.host_overlap_sharpness == 0);
  CHECK(defaults.score_bytes_per_element == 0);
  CHECK(!defaults.score_kernels_serial);
  const std::string with =
      Replace(kGoodSpec, "\"memory_efficiency\": 0.8",
              "\"memory_efficiency\": 0.8, \"host_overlap_sharpness\": 4, "
              "\"score_bytes_per_element\": 16, \"score_kernels_serial\": true");
  const ComputeModelParams set = ParseDeviceSpec(with, "good.json").compute;
  CHECK(set.host_overlap_sharpness == 4);
  CHECK(set.score_bytes_per_element == 16);
  CHECK(set.score_kernels_serial);
  CHECK(ErrorOf(Replace(kGoodSpec, "\"memory_efficiency\": 0.8",
                        "\"memory_efficiency\": 0.8, \"host_overlap_sharpness\": 0.5")) ==
        "bad.json: compute_model: host_overlap_sharpness: must be in [1, 64] (got 0.5)");
  CHECK(ErrorOf(Replace(kGoodSpec, "\"memory_efficiency\": 0.8",
                        "\"memory_efficiency\": 0.8, \"score_bytes_per_element\": -1")) ==
        "bad.json: compute_model: score_bytes_per_element: must be in [0, 1024] (got -1)");
}

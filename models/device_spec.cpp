#include "models/device_spec.h"

#include <algorithm>
#include <filesystem>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/limits.h"
#include "models/model_card.h"

namespace terasim {
namespace {

// Ranges of a device's rates: finite, positive, and far outside any real device on both sides
// (a V100 does 1.25e14 FLOP/s and 9e11 B/s), so that work / rate stays a finite, representable
// number of nanoseconds.
constexpr double kMinFlops = 1e6;       // FLOP/s, and FLOPs of saturation_flops
constexpr double kMaxFlops = 1e18;      // an exaFLOP per second per device
constexpr double kMinBytesPerS = 1e3;   // a kB/s
constexpr double kMaxBytesPerS = 1e15;  // a PB/s

// A number in [lo, hi]; throws "WHERE: KEY: must be in [lo, hi] (got v)".
double RequireInRange(const JsonReader& r, const std::string& key, double lo, double hi) {
  double value = r.RequireDouble(key);
  if (!(value >= lo && value <= hi)) {
    ThrowInput("{}: {}: must be in [{}, {}] (got {})", r.where(), key, lo, hi, value);
  }
  return value;
}

Precision ParsePrecision(const JsonReader& r, const std::string& key) {
  std::string text = r.RequireString(key);
  if (text == "fp16") return Precision::kFp16;
  if (text == "bf16") return Precision::kBf16;
  if (text == "fp32") return Precision::kFp32;
  ThrowInput("{}: {}: '{}' must be one of fp16, bf16, fp32", r.where(), key, text);
}

ComputeModelParams ParseComputeModel(const JsonReader& r) {
  r.RejectUnknown({"precision", "efficiency_max", "saturation_flops", "sharpness",
                   "kernel_overhead_ns_per_layer", "memory_efficiency", "weight_gradient_passes",
                   "host_overlap_sharpness", "score_bytes_per_element", "score_kernels_serial",
                   "note"});
  ComputeModelParams p;
  p.precision = ParsePrecision(r, "precision");
  p.efficiency_max = r.RequirePositive("efficiency_max");
  if (p.efficiency_max > 1) {
    ThrowInput("{}: efficiency_max: must be <= 1 (got {})", r.where(), p.efficiency_max);
  }
  p.saturation_flops = r.RequireDoubleIn("saturation_flops", 1, kMaxFlops);
  p.sharpness = RequireInRange(r, "sharpness", 1, 64);
  p.kernel_overhead_ns_per_layer =
      r.RequireInt("kernel_overhead_ns_per_layer", 0, limits::kMaxDurationNs, "kMaxDurationNs");
  p.memory_efficiency = r.RequirePositive("memory_efficiency");
  if (p.memory_efficiency > 1) {
    ThrowInput("{}: memory_efficiency: must be <= 1 (got {})", r.where(), p.memory_efficiency);
  }
  p.weight_gradient_passes = static_cast<int>(r.OptionalInt("weight_gradient_passes", 1, 1));
  if (p.weight_gradient_passes > 16) {
    ThrowInput("{}: weight_gradient_passes: must be <= 16 (got {})", r.where(),
               p.weight_gradient_passes);
  }
  if (r.Has("host_overlap_sharpness")) {
    p.host_overlap_sharpness = RequireInRange(r, "host_overlap_sharpness", 1, 64);
  }
  if (r.Has("score_bytes_per_element")) {
    p.score_bytes_per_element = RequireInRange(r, "score_bytes_per_element", 0, 1024);
  }
  p.score_kernels_serial = r.OptionalBool("score_kernels_serial", false);
  p.note = r.RequireString("note");
  return p;
}

bool IsPath(const std::string& name_or_path) {
  return name_or_path.find('/') != std::string::npos ||
         (name_or_path.size() > 5 &&
          name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
}

std::string DeviceDir() { return DataRoot() + "/models/data/devices"; }

}  // namespace

const char* PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp16:
      return "fp16";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp32:
      return "fp32";
  }
  return "?";
}

double DeviceSpec::PeakFlops() const {
  switch (compute.precision) {
    case Precision::kFp16:
      return peak_fp16_tensor_flops;
    case Precision::kBf16:
      return peak_bf16_tensor_flops;
    case Precision::kFp32:
      return peak_fp32_flops;
  }
  return 0;
}

DeviceSpec ParseDeviceSpec(const std::string& json_text, const std::string& origin) {
  nlohmann::json doc = ParseJson(json_text, origin);
  JsonReader r(doc, origin);
  r.RejectUnknown({"name", "product", "peak_fp16_tensor_flops", "peak_bf16_tensor_flops",
                   "peak_fp32_flops", "memory_bytes", "memory_reserve_bytes",
                   "memory_bw_bytes_per_s", "sm_count", "compute_model", "operator_model", "source",
                   "note"});
  DeviceSpec d;
  d.name = r.RequireString("name");
  if (d.name.empty()) ThrowInput("{}: name: must not be empty", origin);
  d.product = r.RequireString("product");
  d.peak_fp16_tensor_flops = r.RequireDoubleIn("peak_fp16_tensor_flops", kMinFlops, kMaxFlops);
  d.peak_bf16_tensor_flops = r.RequireDoubleIn("peak_bf16_tensor_flops", -kMaxFlops, kMaxFlops);
  if (d.peak_bf16_tensor_flops < 0) {
    ThrowInput("{}: peak_bf16_tensor_flops: must be >= 0 (0: no bf16) (got {})", origin,
               d.peak_bf16_tensor_flops);
  }
  d.peak_fp32_flops = r.RequireDoubleIn("peak_fp32_flops", kMinFlops, kMaxFlops);
  d.memory_bytes = r.RequireInt("memory_bytes", 1, limits::kMaxBytes, "kMaxBytes");
  d.memory_reserve_bytes = r.RequireInt("memory_reserve_bytes", 0, limits::kMaxBytes, "kMaxBytes");
  if (d.memory_reserve_bytes >= d.memory_bytes) {
    ThrowInput("{}: memory_reserve_bytes: {} must be less than memory_bytes {}", origin,
               d.memory_reserve_bytes, d.memory_bytes);
  }
  d.memory_bw_bytes_per_s =
      r.RequireDoubleIn("memory_bw_bytes_per_s", kMinBytesPerS, kMaxBytesPerS);
  d.sm_count = static_cast<int>(r.RequireInt("sm_count", 1, INT32_MAX));
  d.compute = ParseComputeModel(r.Child("compute_model"));
  if (!(d.PeakFlops() > 0)) {
    ThrowInput("{}: compute_model: precision: the device has no {} peak", origin,
               PrecisionName(d.compute.precision));
  }
  if (r.Has("operator_model")) {
    d.operator_model = ParseOperatorModelParams(r.Child("operator_model"));
  }
  d.source = r.RequireString("source");
  d.origin = origin;
  return d;
}

DeviceSpec LoadDeviceSpec(const std::string& name_or_path) {
  if (IsPath(name_or_path)) return ParseDeviceSpec(ReadTextFile(name_or_path), name_or_path);
  std::string path = DeviceDir() + "/" + name_or_path + ".json";
  if (!std::filesystem::exists(path)) {
    std::string known;
    for (const auto& spec : ListDeviceSpecs()) known += (known.empty() ? "" : ", ") + spec.name;
    ThrowInput("--device {}: no such device spec (known: {})", name_or_path, known);
  }
  DeviceSpec spec = ParseDeviceSpec(ReadTextFile(path), path);
  if (spec.name != name_or_path) {
    ThrowInput("{}: name: '{}' does not match the file name", path, spec.name);
  }
  return spec;
}

std::vector<DeviceSpec> ListDeviceSpecs() {
  std::string dir = DeviceDir();
  if (!std::filesystem::is_directory(dir)) ThrowInput("{}: device spec folder not found", dir);
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<DeviceSpec> specs;
  for (const auto& p : paths) specs.push_back(ParseDeviceSpec(ReadTextFile(p), p));
  std::sort(specs.begin(), specs.end(),
            [](const DeviceSpec& a, const DeviceSpec& b) { return a.name < b.name; });
  return specs;
}

}  // namespace terasim

#include "models/operator_params.h"

#include "models/errors.h"
#include "models/json_reader.h"

namespace terasim {
namespace {

// A fraction in (0, 1]; throws "WHERE: KEY: must be in (0, 1] (got v)".
double RequireFraction(const JsonReader& r, const std::string& key) {
  const double value = r.RequireDouble(key);
  if (!(value > 0 && value <= 1)) {
    ThrowInput("{}: {}: must be in (0, 1] (got {})", r.where(), key, value);
  }
  return value;
}

}  // namespace

OperatorModelParams ParseOperatorModelParams(const JsonReader& r) {
  r.RejectUnknown({"gemm_efficiency", "tile_m", "tile_n", "kernel_overhead_ns", "memory_efficiency",
                   "kernel_gpu_ns", "tile_k_overhead", "fused", "default", "note"});
  OperatorModelParams p;
  p.gemm_efficiency = RequireFraction(r, "gemm_efficiency");
  p.tile_m = static_cast<int>(r.RequireInt("tile_m", 1));
  p.tile_n = static_cast<int>(r.RequireInt("tile_n", 1));
  if (p.tile_m > 1024 || p.tile_n > 1024) {
    ThrowInput("{}: tile_m x tile_n: {} x {} must be at most 1024 x 1024", r.where(), p.tile_m,
               p.tile_n);
  }
  p.kernel_overhead_ns = r.RequireInt("kernel_overhead_ns", 0);
  if (p.kernel_overhead_ns > 10 * kNsPerMs) {
    ThrowInput("{}: kernel_overhead_ns: {} is more than 10 ms per kernel", r.where(),
               p.kernel_overhead_ns);
  }
  p.memory_efficiency = RequireFraction(r, "memory_efficiency");
  if (r.Has("kernel_gpu_ns")) {
    p.kernel_gpu_ns = r.RequireInt("kernel_gpu_ns", 0);
    if (p.kernel_gpu_ns > kNsPerMs) {
      ThrowInput("{}: kernel_gpu_ns: {} is more than 1 ms per kernel", r.where(), p.kernel_gpu_ns);
    }
  }
  if (r.Has("tile_k_overhead")) {
    p.tile_k_overhead = static_cast<int>(r.RequireInt("tile_k_overhead", 0));
    if (p.tile_k_overhead > 65536) {
      ThrowInput("{}: tile_k_overhead: {} is more than 65536 steps of k", r.where(),
                 p.tile_k_overhead);
    }
  }
  p.fused = r.RequireBool("fused");
  p.is_default = r.OptionalBool("default", false);
  p.note = r.RequireString("note");
  return p;
}

}  // namespace terasim

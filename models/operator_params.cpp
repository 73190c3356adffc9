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
                   "kernel_gpu_ns", "tile_k_overhead", "tiles", "l2_bw_bytes_per_s",
                   "gemm_memory_efficiency", "backward_kernel_overhead_ns",
                   "layout_memory_efficiency", "collective_host_ns", "host_runs_ahead", "fused",
                   "default", "note"});
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
  p.backward_kernel_overhead_ns = p.kernel_overhead_ns;
  if (r.Has("backward_kernel_overhead_ns")) {
    p.backward_kernel_overhead_ns = r.RequireInt("backward_kernel_overhead_ns", 0);
    if (p.backward_kernel_overhead_ns > 10 * kNsPerMs) {
      ThrowInput("{}: backward_kernel_overhead_ns: {} is more than 10 ms per kernel", r.where(),
                 p.backward_kernel_overhead_ns);
    }
  }
  if (r.Has("collective_host_ns")) {
    p.collective_host_ns = r.RequireInt("collective_host_ns", 0);
    if (p.collective_host_ns > 10 * kNsPerMs) {
      ThrowInput("{}: collective_host_ns: {} is more than 10 ms per call", r.where(),
                 p.collective_host_ns);
    }
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
  if (r.Has("tiles")) {
    const auto& tiles = r.RequireArray("tiles");
    for (size_t i = 0; i < tiles.size(); ++i) {
      const auto& t = tiles[i];
      const bool pair =
          t.is_array() && t.size() == 2 && t[0].is_number_integer() && t[1].is_number_integer();
      const int64_t m = pair ? t[0].get<int64_t>() : 0;
      const int64_t n = pair ? t[1].get<int64_t>() : 0;
      if (!pair || m < 1 || n < 1 || m > 1024 || n > 1024) {
        ThrowInput("{}: tiles[{}]: must be [rows, columns], each 1..1024", r.where(), i);
      }
      p.tiles.push_back({static_cast<int>(m), static_cast<int>(n)});
    }
  }
  if (r.Has("l2_bw_bytes_per_s"))
    p.l2_bw_bytes_per_s = r.RequireDoubleIn("l2_bw_bytes_per_s", 0, 1e15);
  p.gemm_memory_efficiency = r.Has("gemm_memory_efficiency")
                                 ? RequireFraction(r, "gemm_memory_efficiency")
                                 : p.memory_efficiency;
  p.layout_memory_efficiency = r.Has("layout_memory_efficiency")
                                   ? RequireFraction(r, "layout_memory_efficiency")
                                   : p.memory_efficiency;
  p.host_runs_ahead = r.OptionalBool("host_runs_ahead", false);
  p.fused = r.RequireBool("fused");
  p.is_default = r.OptionalBool("default", false);
  p.note = r.RequireString("note");
  return p;
}

}  // namespace terasim

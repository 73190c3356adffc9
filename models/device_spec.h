// DeviceSpec: one accelerator's peak rates, memory and the fitted parameters of the roofline
// compute model, read from models/data/devices/NAME.json.
//
// Every number comes from the data file, which notes its source (vendor datasheet, FACTS.md,
// or the fit that produced it). A DeviceSpec is a plain value; LoadDeviceSpec validates it
// once and later code may assume it is sane. Thread safety: plain values and pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/operator_params.h"
#include "models/units.h"

namespace terasim {

// The arithmetic the layer math runs in; picks which peak the roofline uses.
enum class Precision { kFp16, kBf16, kFp32 };

// "fp16", "bf16", "fp32".
const char* PrecisionName(Precision precision);

// The fitted parameters of the roofline model (models/roofline_cost.h). The compute time of
// `flops` of one layer (or block) is
//     (flops^k + s^k)^(1/k) / (peak * efficiency_max)      s = saturation_flops, k = sharpness
// i.e. a floor of s / (peak * efficiency_max) for ops too small to fill the GPU, rising
// smoothly to flops / (peak * efficiency_max) for large ops; plus a fixed kernel overhead
// per layer per pass.
struct ComputeModelParams {
  Precision precision = Precision::kFp16;
  double efficiency_max = 0;                // fraction of the peak that large layers reach, (0, 1]
  double saturation_flops = 0;              // per-layer work below which the GPU is under-filled
  double sharpness = 4;                     // k >= 1: how sharp the knee between floor and slope is
  TimeNs kernel_overhead_ns_per_layer = 0;  // forward of one whole layer; backward pays it twice
  double memory_efficiency = 0;             // fraction of the memory bandwidth reached, (0, 1]
  // Weight-sized gradient tensors one backward-weight pass moves through memory: 1 when the GEMM
  // writes the gradient once; 4 under PyTorch autograd's accumulation across micro-batches or
  // slices (the GEMM writes a new dW; AccumulateGrad reads it and the running .grad and writes
  // the sum). It is what makes small slices of very large layers memory-bound.
  int weight_gradient_passes = 1;
  // Host / GPU overlap (optional, 0 = off). Off: a pass costs overhead + max(compute, memory).
  // On (a sharpness q >= 1): the host issues the kernels while the GPU runs the earlier ones
  // (eager PyTorch queues them asynchronously), so a pass costs the smooth maximum
  // (H^q + G^q)^(1/q) of the host time H (the overhead above) and the GPU time
  // G = compute + memory. q = 1 is their sum; a large q their maximum.
  double host_overlap_sharpness = 0;
  // Bytes moved per element of a score-sized tensor (b (a / t) l (c + l)) by a forward or
  // backward-input pass beyond the saved activations (eager scale / mask / softmax / dropout
  // kernels reading and writing the scores); 0 unless a fit sets it.
  double score_bytes_per_element = 0;
  // Whether the score traffic above runs in kernels of its own, after the GEMMs (true: its
  // memory time adds to the pass's max(compute, memory), as eager PyTorch's separate scale /
  // mask / softmax kernels on one stream do) or overlaps them (false: it joins the memory
  // side of that max). Optional; false unless a fit sets it.
  bool score_kernels_serial = false;
  std::string note;  // the fit rationale
};

struct DeviceSpec {
  std::string name;                   // e.g. "v100-sxm2-16gb" (the file is NAME.json)
  std::string product;                // the vendor's name for it
  double peak_fp16_tensor_flops = 0;  // FLOP/s, dense
  double peak_bf16_tensor_flops = 0;  // FLOP/s, dense; 0 when the device has no bf16
  double peak_fp32_flops = 0;         // FLOP/s, without tensor cores
  Bytes memory_bytes = 0;             // device memory
  Bytes memory_reserve_bytes = 0;     // kept free (CUDA context, NCCL buffers, fragmentation)
  double memory_bw_bytes_per_s = 0;
  int sm_count = 0;
  ComputeModelParams compute;
  // The operator-level model's parameters (models/operator_cost.h), when the spec has them.
  std::optional<OperatorModelParams> operator_model;
  std::string source;  // where the numbers come from
  std::string origin;  // the file it was read from

  // The peak for compute.precision, FLOP/s.
  double PeakFlops() const;
  // Memory a schedule may use: memory_bytes - memory_reserve_bytes.
  Bytes CapacityBytes() const { return memory_bytes - memory_reserve_bytes; }
};

// Loads a spec by name (models/data/devices/NAME.json under DataRoot()) or by path (anything
// containing '/' or ending in .json). Throws InputError "FILE: FIELD: what is wrong" on any
// problem, or "--device NAME: no such device spec (known: ...)" for an unknown name.
DeviceSpec LoadDeviceSpec(const std::string& name_or_path);

// Parses a spec from JSON text; `origin` names the place in error messages. Throws InputError.
DeviceSpec ParseDeviceSpec(const std::string& json_text, const std::string& origin);

// Every spec in models/data/devices, sorted by name. Throws InputError on a malformed file.
std::vector<DeviceSpec> ListDeviceSpecs();

}  // namespace terasim

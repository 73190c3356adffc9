// The CPU reference back end: a Device (exec/device.h) doing real fp32 math on the host
// (OpenBLAS sgemm and the kernels of exec/cpu_kernels.h), and CpuBackend, the back-end layer
// (exec/transformer_backend.h) on it. Every kernel is the reference the CUDA kernels
// mirror; memory is host memory, always zero-initialized, and every call completes before it
// returns.
//
// Thread safety: none per object (see ComputeBackend); distinct objects on distinct threads.
#pragma once

#include <cstdint>
#include <memory>

#include "exec/device.h"
#include "exec/transformer_backend.h"

namespace terasim {

// The reference device (host memory, OpenBLAS and exec/cpu_kernels.h); every kernel the
// CUDA kernels mirror.
std::unique_ptr<Device> MakeCpuDevice();

// The back-end layer on a CpuDevice.
class CpuBackend : public TransformerBackend {
 public:
  // Initializes the shard's weights from `seed`. Throws InputError when tp does not divide the
  // card's heads or ffn.
  CpuBackend(const ModelCard& card, ShardSpec shard, uint64_t seed);
};

}  // namespace terasim

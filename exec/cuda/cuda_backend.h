// The CUDA back end: CudaDevice, the Device interface (exec/device.h) on one CUDA device with
// cuBLAS GEMMs and the kernels of exec/cuda/cuda_kernels.cuh, and CudaBackend, the back-end
// layer (exec/transformer_backend.h) on it: the same bookkeeping and the same sequence of
// kernels as the CPU reference.
//
// Memory is stream-ordered (cudaMallocAsync / cudaFreeAsync on the device's stream); every
// kernel is queued on that stream. Weights, gradients, Adam moments, the key/value buffers and
// every saved activation stay on the device; activations cross the ComputeBackend interface as
// host spans (two PCIe copies and one synchronization per call: correctness first).
//
// Precision: fp32 GEMMs (exact, no TF32) by default; with GemmPrecision::kBf16 the GEMMs use
// bf16 products with fp32 accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_16BF) while
// storage, kernels and the optimizer stay fp32.
//
// Thread safety: none per object (see ComputeBackend). Every back-end call first makes the
// device current for the calling thread, so the runner may call it from any stream thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "exec/cuda/cuda_handles.h"
#include "exec/cuda/cuda_kernels.cuh"
#include "exec/device.h"
#include "exec/transformer_backend.h"

namespace terasim {

struct CudaBackendOptions {
  int device = 0;  // CUDA device index
  gpu::GemmPrecision precision = gpu::GemmPrecision::kFp32;
};

// "fp32" or "bf16" -> the precision; throws InputError "CONTEXT: --precision: ..." otherwise.
gpu::GemmPrecision ParseGemmPrecision(const std::string& name, const std::string& context);

// The Device on CUDA device options.device (stream-ordered memory, cuBLAS GEMMs and the kernels
// of exec/cuda/cuda_kernels.cuh on one stream). Throws CudaError when the device cannot be used.
std::unique_ptr<Device> MakeCudaDevice(CudaBackendOptions options);

// The back-end layer on a CudaDevice.
class CudaBackend : public TransformerBackend {
 public:
  // Initializes the shard's weights from `seed` (identical to CpuBackend's) on
  // options.device. Throws InputError when tp does not divide the card's heads or ffn;
  // CudaError when the device cannot be used.
  CudaBackend(const ModelCard& card, ShardSpec shard, uint64_t seed, CudaBackendOptions options);
};

}  // namespace terasim

// The one checking wrapper for every CUDA runtime, cuBLAS and NCCL call (STYLE.md "Errors").
//
//   TERASIM_CUDA(cudaMemcpyAsync(...));
//   TERASIM_CUBLAS(cublasSgemm(...));
//   TERASIM_NCCL(ncclSend(...));       // from exec/cuda/nccl_comm.h (builds only with NCCL)
//
// A failing call throws CudaError "CALL failed at FILE:LINE (rank R, device D): LIBRARY
// MESSAGE". The rank is the MPI rank from the launcher's environment (OMPI_COMM_WORLD_RANK,
// PMI_RANK), or 0 when not launched by MPI; the device is the calling thread's current CUDA
// device. Both are looked up only when a call fails. Thread-safe.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace terasim {

// A failed CUDA, cuBLAS or NCCL call (a run-time failure, not bad input).
class CudaError : public std::runtime_error {
 public:
  explicit CudaError(const std::string& what) : std::runtime_error(what) {}
};

namespace cuda_detail {

// "rank R, device D" of the failing caller.
inline std::string Where() {
  int rank = 0;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
    if (const char* value = std::getenv(name)) {
      rank = std::atoi(value);
      break;
    }
  }
  int device = -1;
  cudaGetDevice(&device);
  cudaGetLastError();  // the query above must not leave an error behind
  return fmt::format("rank {}, device {}", rank, device);
}

[[noreturn]] inline void Fail(const char* call, const char* file, int line,
                              const std::string& message) {
  throw CudaError(fmt::format("{} failed at {}:{} ({}): {}", call, file, line, Where(), message));
}

inline void Check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky-free error so later calls report their own
  Fail(call, file, line,
       fmt::format("CUDA {}: {}", cudaGetErrorName(status), cudaGetErrorString(status)));
}

inline void Check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  Fail(call, file, line,
       fmt::format("cuBLAS {}: {}", cublasGetStatusName(status), cublasGetStatusString(status)));
}

}  // namespace cuda_detail
}  // namespace terasim

#define TERASIM_CUDA(call) ::terasim::cuda_detail::Check((call), #call, __FILE__, __LINE__)
#define TERASIM_CUBLAS(call) ::terasim::cuda_detail::Check((call), #call, __FILE__, __LINE__)

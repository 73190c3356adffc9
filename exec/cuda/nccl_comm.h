// NcclComm: the move-only owner of one NCCL communicator (STYLE.md "Ownership"). Built only
// where NCCL is found (TERASIM_HAVE_NCCL). Thread safety: none; NCCL itself requires the calls
// on one communicator to be issued in the same order on every rank.
#pragma once

#include <nccl.h>

#include <utility>

#include "exec/cuda/cuda_check.h"

// The NCCL overload of the checking wrapper of exec/cuda/cuda_check.h.
namespace terasim::cuda_detail {
inline void Check(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess) return;
  Fail(call, file, line,
       fmt::format("NCCL {}: {} ({})", static_cast<int>(status), ncclGetErrorString(status),
                   ncclGetLastError(nullptr)));
}
}  // namespace terasim::cuda_detail
#define TERASIM_NCCL(call) ::terasim::cuda_detail::Check((call), #call, __FILE__, __LINE__)

namespace terasim {

class NcclComm {
 public:
  // Joins communicator `id` as `rank` of `ranks` on the calling thread's current device
  // (collective: every rank must call it). Throws CudaError naming the NCCL failure.
  NcclComm(int ranks, int rank, const ncclUniqueId& id) {
    TERASIM_NCCL(ncclCommInitRank(&comm_, ranks, id, rank));
  }
  ~NcclComm() {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }
  NcclComm(NcclComm&& other) noexcept : comm_(std::exchange(other.comm_, nullptr)) {}
  NcclComm& operator=(NcclComm&& other) noexcept {
    std::swap(comm_, other.comm_);
    return *this;
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  // Aborts every operation in flight on the communicator (another device failed); the
  // communicator is unusable afterwards. Never throws.
  void Abort() noexcept {
    if (comm_ != nullptr) ncclCommAbort(std::exchange(comm_, nullptr));
  }

 private:
  ncclComm_t comm_ = nullptr;
};

// A new unique id (on the root rank, before the others join). Throws CudaError.
inline ncclUniqueId NewNcclUniqueId() {
  ncclUniqueId id;
  TERASIM_NCCL(ncclGetUniqueId(&id));
  return id;
}

}  // namespace terasim

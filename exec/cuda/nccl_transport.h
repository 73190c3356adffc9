// NcclTransport: the Transport for one process per GPU (launched under mpirun), over one NCCL
// communicator whose ranks are the schedule's devices. Built only where CUDA and NCCL are
// found (TERASIM_HAVE_NCCL); the communicator is bootstrapped over MPI where MPI is built
// (NcclTransport::OverMpi), else from a unique id the caller distributes.
//
// The moves of a TransportBase (exec/transport_base.h), which owns matching, stall detection
// and the combining of collectives. Every move is grouped point-to-point NCCL traffic
// (ncclGroupStart / ncclSend / ncclRecv / ncclGroupEnd), so any subset of ranks forms a
// collective group without sub-communicators: a message is a header {count, hash of its name}
// followed by the payload, and Pull checks that the name matches; a collective's Gather sends
// each member's contribution to every other member, which all combine them in the group's rank
// order (every member gets the same bits, as InProcessTransport; n - 1 times the traffic of a
// ring, correctness first), so Share has nothing to send.
//
// Ordering: NCCL completes a rank's operations on one communicator in the order they were
// issued, so matching operations must be issued in the same order on both sides. The
// generators put a device's sends and receives on one p2p stream in schedule order, which
// satisfies this; a schedule with communication on several concurrent streams may stall
// (reported after the stall timeout). Moves are serialized by a mutex; waits poll the stream
// and give up on Abort or after the stall timeout. Thread-safe; does not poll.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>

#include "exec/cuda/cuda_handles.h"
#include "exec/cuda/nccl_comm.h"
#include "exec/transport_base.h"

namespace terasim {

class NcclTransport : public TransportBase {
 public:
  // Joins communicator `id` as `rank` of `ranks` on CUDA device `gpu` (collective).
  NcclTransport(int ranks, int rank, const ncclUniqueId& id, int gpu,
                std::chrono::milliseconds stall_timeout = std::chrono::seconds(120));
#ifdef TERASIM_HAVE_NCCL_MPI_BOOTSTRAP
  // Rank and size from MPI_COMM_WORLD (MPI already initialized), the unique id made on rank 0
  // and broadcast with MPI_Bcast; the GPU is the rank modulo the visible devices.
  static std::unique_ptr<NcclTransport> OverMpi(
      std::chrono::milliseconds stall_timeout = std::chrono::seconds(120));
#endif

 protected:
  // Sends and waits until the receiver has taken the message (NCCL sends complete then).
  void Post(int from, int to, const std::string& name, std::span<const float> data) override;
  // Receives the next message from `from`, which must be `name`.
  bool Pull(int to, int from, const std::string& name) override;
  std::vector<std::vector<float>> Gather(const CollectiveCall& call,
                                         std::span<const float> data) override;
  std::vector<float> Share(const CollectiveCall&, std::vector<float> result) override {
    return result;
  }
  // Aborts the communicator (not under mutex_: a waiting move holds it), unblocking its kernels.
  void OnAbort() override { comm_.Abort(); }

 private:
  using Buffer = DeviceBuffer<float>;
  // Waits for the stream; throws StoppedError or InternalError (stall).
  void Wait(const std::string& what);

  int rank_;
  int gpu_;
  std::mutex mutex_;  // one move on the communicator at a time
  CudaStream stream_;
  NcclComm comm_;
};

}  // namespace terasim

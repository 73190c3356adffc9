// NcclTransport: the Transport for one process per GPU (launched under mpirun), over one NCCL
// communicator whose ranks are the schedule's devices. Built only where CUDA and NCCL are
// found (TERASIM_HAVE_NCCL); the communicator is bootstrapped over MPI where MPI is built
// (NcclTransport::OverMpi), else from a unique id the caller distributes.
//
// Every operation is grouped point-to-point NCCL traffic (ncclGroupStart / ncclSend /
// ncclRecv / ncclGroupEnd), so any subset of ranks forms a collective group without
// sub-communicators: a message is a header {count, hash of the tensor identity} followed by the
// payload, and Recv checks that the identity matches; an all-reduce sends each member's
// contribution to every other member, which sums them on the device in the group's rank order
// (every member gets the same bits, as InProcessTransport; n - 1 times the traffic of a ring,
// correctness first).
//
// Ordering: NCCL completes a rank's operations on one communicator in the order they were
// issued, so matching operations must be issued in the same order on both sides. The
// generators put a device's sends and receives on one p2p stream in schedule order, which
// satisfies this; a schedule with communication on several concurrent streams may stall
// (reported after the stall timeout). Calls are serialized by a mutex; waits poll the stream
// and give up on Abort or after the stall timeout. Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>

#include "exec/cuda/cuda_handles.h"
#include "exec/cuda/nccl_comm.h"
#include "exec/stop_flag.h"
#include "exec/transport.h"

namespace terasim {

class NcclTransport : public Transport {
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

  void Send(int from, int to, const std::string& tensor, std::span<const float> data) override;
  std::vector<float> Recv(int to, int from, const std::string& tensor) override;
  void AllReduce(const CollectiveCall& call, std::span<float> data) override;
  void Broadcast(const CollectiveCall& call, int root, std::vector<float>& data) override;
  std::vector<float> AllGather(const CollectiveCall& call, std::span<const float> data) override;
  void Abort() override;

 private:
  using Buffer = DeviceBuffer<float>;
  // Waits for the stream polling the stop flag; throws StoppedError or InternalError (stall).
  void Wait(const std::string& what);
  // Every member's data on the device, by position in call.ranks (sizes may differ).
  std::vector<Buffer> Exchange(const CollectiveCall& call, std::span<const float> data);

  int rank_;
  int gpu_;
  std::chrono::milliseconds stall_timeout_;
  StopFlag stop_;
  std::mutex mutex_;  // one operation on the communicator at a time
  CudaStream stream_;
  NcclComm comm_;
};

}  // namespace terasim

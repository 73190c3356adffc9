// LoopbackTransport: the Transport for every device of a schedule run as threads of this
// process on ONE GPU (the GPU test machine has one H200, and NCCL refuses two ranks on one
// GPU). Each device gets its own CUDA stream; a message travels through device memory on the
// sender's stream (host -> device into the sender's buffer, device -> device into the
// receiver's, device -> host) and is delivered into the receiver's mailbox when it is posted.
// Matching, buffering, polling, stall detection and the collectives (gathered at the group's
// first member, summed there in rank order, so every member gets the bits the in-process
// transport gives) are TransportBase's. Thread-safe.
#pragma once

#include <chrono>
#include <vector>

#include "exec/cuda/cuda_handles.h"
#include "exec/transport_base.h"

namespace terasim {

class LoopbackTransport : public TransportBase {
 public:
  // Streams for devices 0..devices-1 on CUDA device `gpu`. Waits longer than `stall_timeout`
  // throw InternalError naming what was awaited. Throws CudaError when the GPU is unusable.
  LoopbackTransport(int devices, int gpu = 0,
                    std::chrono::milliseconds stall_timeout = std::chrono::seconds(120));

 protected:
  void Post(int from, int to, const std::string& name, std::span<const float> data) override;

 private:
  cudaStream_t StreamOf(int device) const;

  int gpu_;
  std::vector<CudaStream> streams_;  // by device
};

}  // namespace terasim

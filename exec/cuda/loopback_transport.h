// LoopbackTransport: the Transport for every device of a schedule run as threads of this
// process on ONE GPU (the GPU test machine has one H200, and NCCL refuses two ranks on one
// GPU). Each device gets its own CUDA stream; tensors travel through device memory:
//
//   Send:        host -> device copy on the sender's stream into a message buffer.
//   Recv:        device-to-device copy of the message on the receiver's stream, then -> host.
//   collectives: each member uploads its contribution; once all have arrived, each member
//                combines them on its own stream in the group's rank order (so every member
//                gets bit-identical sums, as InProcessTransport) and copies its result back.
//
// Matching is InProcessTransport's: mailboxes keyed by (from, to, tensor), rendezvous keyed by
// (group, tensor). The host spans of the Transport interface cost one host -> device and one
// device -> host copy per call on each side. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "exec/cuda/cuda_handles.h"
#include "exec/stop_flag.h"
#include "exec/transport.h"

namespace terasim {

class LoopbackTransport : public Transport {
 public:
  // Streams for devices 0..devices-1 on CUDA device `gpu`. Waits longer than `stall_timeout`
  // throw InternalError naming what was awaited. Throws CudaError when the GPU is unusable.
  LoopbackTransport(int devices, int gpu = 0,
                    std::chrono::milliseconds stall_timeout = std::chrono::seconds(120));

  void Send(int from, int to, const std::string& tensor, std::span<const float> data) override;
  std::vector<float> Recv(int to, int from, const std::string& tensor) override;
  void AllReduce(const CollectiveCall& call, std::span<float> data) override;
  void Broadcast(const CollectiveCall& call, int root, std::vector<float>& data) override;
  std::vector<float> AllGather(const CollectiveCall& call, std::span<const float> data) override;
  void Abort() override;

 private:
  using Buffer = DeviceBuffer<float>;
  struct Rendezvous {
    std::vector<Buffer> contributions;  // by position in ranks, on the device
    int arrived = 0;
    int departed = 0;
  };
  using RendezvousKey = std::pair<std::string, std::string>;  // (group, tensor)

  cudaStream_t StreamOf(int device) const;
  // Uploads `data` and waits until every member has; returns the rendezvous, whose
  // contributions stay valid until Depart.
  const Rendezvous& Arrive(const CollectiveCall& call, std::span<const float> data);
  void Depart(const CollectiveCall& call);
  // The rank-order sum of every contribution, on the caller's stream.
  Buffer Sum(const CollectiveCall& call, const Rendezvous& r) const;

  int gpu_;
  std::chrono::milliseconds stall_timeout_;
  std::vector<CudaStream> streams_;  // by device
  StopFlag stop_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, std::string>, std::deque<Buffer>> mailboxes_;
  std::map<RendezvousKey, Rendezvous> rendezvous_;
};

}  // namespace terasim

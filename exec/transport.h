// Transport: how devices exchange tensors (STYLE.md: transports are pluggable). The runner
// calls it from the stream thread that runs a SEND, RECV or collective op. Implementations:
// InProcessTransport (exec/inproc_transport.h, every device a thread of this process); an MPI
// or NCCL transport can implement the same calls.
//
// Matching: a Send matches the Recv with the same (from, to, tensor); a collective matches
// the calls of every member of `group` with the same tensor identity. Sums are taken in the
// group's rank order, so every member gets bit-identical results run after run.
// Thread-safe: many stream threads call it at once.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace terasim {

struct CollectiveCall {
  std::string group;       // group name (schedule Group::name)
  std::vector<int> ranks;  // members, in ring order
  int device = 0;          // the caller, one of ranks
  std::string tensor;      // identity, the same on every member
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Delivers `data` to device `to`; does not wait for the receiver.
  virtual void Send(int from, int to, const std::string& tensor, std::span<const float> data) = 0;
  // Waits for and returns what `from` sent to `to` under `tensor`.
  virtual std::vector<float> Recv(int to, int from, const std::string& tensor) = 0;
  // data = the element-wise sum of every member's data (same size on every member).
  virtual void AllReduce(const CollectiveCall& call, std::span<float> data) = 0;
  // data = the root's data on every member (resized on the others).
  virtual void Broadcast(const CollectiveCall& call, int root, std::vector<float>& data) = 0;
  // The concatenation of every member's data in rank order.
  virtual std::vector<float> AllGather(const CollectiveCall& call, std::span<const float> data) = 0;
  // The caller's 1/n chunk (by its position in ranks) of the sum; size divisible by n.
  virtual std::vector<float> ReduceScatter(const CollectiveCall& call,
                                           std::span<const float> data) = 0;
  // Makes every current and future wait throw StoppedError (a device failed).
  virtual void Abort() = 0;
};

}  // namespace terasim

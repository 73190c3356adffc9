// Transport: how devices exchange tensors (STYLE.md: transports are pluggable). The runner
// calls it from the stream thread that runs a SEND, RECV or collective op. Implementations
// derive from TransportBase (exec/transport_base.h), which owns matching, buffering, polling,
// stall detection and the combining of collectives, and provide only the moves: in-process
// (exec/inproc_transport.h), MPI (exec/mpi_transport.h), NCCL and one-GPU loopback
// (exec/cuda/).
//
// Matching: a Send matches the Recv with the same (from, to, tensor); a collective matches
// the calls of every member of `group` with the same tensor identity. Sums are taken in the
// group's rank order, so every member gets bit-identical results run after run.
// Thread-safe: many stream threads call it at once.
//
// Polling (optional, Polls() says whether a transport has it): a runner that runs all of a
// device's streams on one thread must never block in Recv while another stream of the device
// could go on, so it asks with TryRecv and sleeps in WaitArrival until something new arrives.
// A transport that polls must also Send without blocking (the runner's device thread sends
// between its ops).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
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

// The position of `device` in call.ranks. Throws InternalError when it is not a member.
int GroupPosition(const CollectiveCall& call, int device);

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
  // The caller's 1/n chunk (by its position in ranks) of the sum; size divisible by n. The
  // base runs AllReduce and keeps the chunk (so its sums are AllReduce's, bit for bit).
  virtual std::vector<float> ReduceScatter(const CollectiveCall& call, std::span<const float> data);
  // Makes every current and future wait throw StoppedError (a device failed).
  virtual void Abort() = 0;

  // Whether TryRecv, Arrivals and WaitArrival work (the defaults throw InternalError).
  virtual bool Polls() const { return false; }
  // What `from` sent to `to` under `tensor`, taken from the transport, if it has arrived.
  virtual std::optional<std::vector<float>> TryRecv(int to, int from, const std::string& tensor);
  // A count that grows whenever a message is delivered to `to` (it may grow for other devices'
  // messages too: a waiter then just looks again). Cheap enough to poll in a loop.
  virtual uint64_t Arrivals(int to);
  // Returns once Arrivals(to) != seen or after `timeout`; throws StoppedError after Abort.
  virtual void WaitArrival(int to, uint64_t seen, std::chrono::milliseconds timeout);
};

}  // namespace terasim

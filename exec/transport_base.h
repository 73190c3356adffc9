// TransportBase: what every transport shares, so that a concrete transport provides only its
// moves (issue 18). It implements the whole Transport interface (exec/transport.h):
//
//   Matching and buffering. A message is keyed by (from, to, name); the name of a SEND/RECV is
//     the tensor identity, a collective's messages are named after its group and tensor. A
//     message that arrives before its receiver asks waits in a FIFO mailbox under its key.
//   Polling. TryRecv, Arrivals and WaitArrival look at the mailboxes (transports whose
//     messages are delivered when posted; the others do not poll).
//   Abort. Every current and future wait throws StoppedError.
//   Stall detection. A wait that gets nothing for the stall timeout throws InternalError
//     "executor stalled for N s waiting for WHAT", WHAT naming the devices and the tensor.
//   Collectives in software. Every member's contribution is gathered at the group's first
//     member, combined there (sums in the group's rank order, so every member gets the same
//     bits run after run, whatever the transport) and the result handed to the others.
//
// The moves a concrete transport provides:
//   Post     starts carrying a message and never waits for the receiver; the message reaches
//            the mailbox through Deliver, at once (Delivery::kAtPost) or when
//   Pull     fetches it (Delivery::kPulled: MPI probes, NCCL receives the next message).
//   Gather   (optional) a native exchange of the contributions of a collective, with Share.
//   OnAbort  (optional) unblocks the transport's own waits.
// Thread-safe: many stream threads call it at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>

#include "exec/stop_flag.h"
#include "exec/transport.h"

namespace terasim {

class TransportBase : public Transport {
 public:
  void Send(int from, int to, const std::string& tensor, std::span<const float> data) final;
  std::vector<float> Recv(int to, int from, const std::string& tensor) final;
  void AllReduce(const CollectiveCall& call, std::span<float> data) final;
  void Broadcast(const CollectiveCall& call, int root, std::vector<float>& data) final;
  std::vector<float> AllGather(const CollectiveCall& call, std::span<const float> data) final;
  void Abort() final;
  bool Polls() const final { return delivery_ == Delivery::kAtPost; }
  std::optional<std::vector<float>> TryRecv(int to, int from, const std::string& tensor) final;
  uint64_t Arrivals(int to) final;
  void WaitArrival(int to, uint64_t seen, std::chrono::milliseconds timeout) final;

 protected:
  enum class Delivery {
    kAtPost,  // Post delivers the message itself (or another thread does, without asking)
    kPulled,  // a waiting receiver calls Pull until its message is delivered
  };
  // Waits longer than `stall_timeout` throw InternalError naming what was awaited, followed by
  // " (PLACE)" when `place` is given (e.g. "MPI rank 3").
  TransportBase(Delivery delivery, std::chrono::milliseconds stall_timeout, std::string place = {});

  // Starts carrying `data` from device `from` to device `to` under `name`; must not wait for
  // the receiver to ask.
  virtual void Post(int from, int to, const std::string& name, std::span<const float> data) = 0;
  // Delivery::kPulled: fetches what has arrived for `to` into the mailbox (Deliver), at least
  // the message `from` sent under `name` if it has come. Called without the mailbox lock, from
  // any thread that waits. Returns whether it delivered anything. The default throws.
  virtual bool Pull(int to, int from, const std::string& name);
  // Every member's contribution, by position in call.ranks, on the members that combine them;
  // empty on the others. The default gathers at the group's first member.
  virtual std::vector<std::vector<float>> Gather(const CollectiveCall& call,
                                                 std::span<const float> data);
  // The combined result on every member: the combining members hand `result` to the others
  // (who pass an empty one). The default matches the default Gather.
  virtual std::vector<float> Share(const CollectiveCall& call, std::vector<float> result);
  // Called by Abort after the stop flag is set (not under any lock of this class).
  virtual void OnAbort() {}

  // Puts a message into the mailbox of (from, to, name) and wakes its waiters.
  void Deliver(int from, int to, const std::string& name, std::vector<float> data);
  // Polls `done` until it returns true; throws StoppedError after Abort and the stall error
  // after the stall timeout.
  void Await(const std::function<bool()>& done, const std::string& what) const;
  bool Stopped() const { return stop_.Stopped(); }

 private:
  using Key = std::tuple<int, int, std::string>;  // (from, to, name)
  // The oldest message under `key`, removed, if any.
  std::optional<std::vector<float>> TakeLocked(const Key& key);
  std::optional<std::vector<float>> TryTake(const Key& key);
  // Waits for and removes the oldest message under (from, to, name).
  std::vector<float> Take(int to, int from, const std::string& name, const std::string& what);
  // The text of a wait on a collective's message from or to `peer`.
  static std::string CollectiveWhat(const CollectiveCall& call, const char* role, int peer);

  const Delivery delivery_;
  const std::chrono::milliseconds stall_timeout_;
  const std::string place_;  // " (PLACE)" or empty
  StopFlag stop_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<Key, std::deque<std::vector<float>>> mailboxes_;
  std::atomic<uint64_t> arrivals_{0};  // messages delivered to any device (Arrivals)
};

}  // namespace terasim

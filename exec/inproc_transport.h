// InProcessTransport: the Transport for devices that are threads of one process. Point to
// point messages sit in mailboxes keyed by (from, to, tensor); a collective is a rendezvous
// keyed by (group, tensor) where each member deposits its data and, once all have, reads every
// contribution and combines them in rank order (so all members compute identical sums).
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>

#include "exec/stop_flag.h"
#include "exec/transport.h"

namespace terasim {

class InProcessTransport : public Transport {
 public:
  // Waits longer than `stall_timeout` throw InternalError naming what was awaited.
  explicit InProcessTransport(std::chrono::milliseconds stall_timeout = std::chrono::seconds(120))
      : stall_timeout_(stall_timeout) {}

  void Send(int from, int to, const std::string& tensor, std::span<const float> data) override;
  std::vector<float> Recv(int to, int from, const std::string& tensor) override;
  void AllReduce(const CollectiveCall& call, std::span<float> data) override;
  void Broadcast(const CollectiveCall& call, int root, std::vector<float>& data) override;
  std::vector<float> AllGather(const CollectiveCall& call, std::span<const float> data) override;
  void Abort() override;
  bool Polls() const override { return true; }
  std::optional<std::vector<float>> TryRecv(int to, int from, const std::string& tensor) override;
  uint64_t Arrivals(int to) override;
  void WaitArrival(int to, uint64_t seen, std::chrono::milliseconds timeout) override;

 private:
  using MailboxKey = std::tuple<int, int, std::string>;  // (from, to, tensor)
  struct Rendezvous {
    std::vector<std::vector<float>> contributions;  // by position in ranks
    int arrived = 0;
    int departed = 0;
  };
  // Deposits `data` and returns every member's contribution, in rank order.
  std::vector<std::vector<float>> Exchange(const CollectiveCall& call, std::span<const float> data);
  // The oldest message under `key`, removed, if any (mutex_ held).
  std::optional<std::vector<float>> TakeLocked(const MailboxKey& key);

  std::chrono::milliseconds stall_timeout_;
  StopFlag stop_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<MailboxKey, std::deque<std::vector<float>>> mailboxes_;
  std::map<std::pair<std::string, std::string>, Rendezvous> rendezvous_;
  std::atomic<uint64_t> arrivals_{0};  // messages delivered to any device (Arrivals)
};

}  // namespace terasim

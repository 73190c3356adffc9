#include "exec/transport_base.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "models/errors.h"

namespace terasim {

namespace {

// Polling waits: spin briefly, then sleep up to 200 us (the executor's stream threads share
// few cores with the other ranks).
class Backoff {
 public:
  void Wait() {
    if (spins_ < 16) {
      ++spins_;
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
    sleep_us_ = std::min(sleep_us_ * 2, 200);
  }

 private:
  int spins_ = 0;
  int sleep_us_ = 5;
};

// The name of a collective's messages in phase `phase` ("up" to the first member, "down" back).
std::string CollectiveName(const char* phase, const CollectiveCall& call) {
  return fmt::format("{}:{}:{}", phase, call.group, call.tensor);
}

}  // namespace

TransportBase::TransportBase(Delivery delivery, std::chrono::milliseconds stall_timeout,
                             std::string place)
    : delivery_(delivery),
      stall_timeout_(stall_timeout),
      place_(place.empty() ? "" : " (" + place + ")") {}

bool TransportBase::Pull(int, int, const std::string& name) {
  throw InternalError("transport delivers at post but was asked to pull " + name);
}

void TransportBase::Deliver(int from, int to, const std::string& name, std::vector<float> data) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mailboxes_[{from, to, name}].push_back(std::move(data));
    arrivals_.fetch_add(1);
  }
  cv_.notify_all();
}

std::optional<std::vector<float>> TransportBase::TakeLocked(const Key& key) {
  auto it = mailboxes_.find(key);
  if (it == mailboxes_.end()) return std::nullopt;  // an emptied mailbox is erased
  std::vector<float> data = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) mailboxes_.erase(it);
  return data;
}

std::optional<std::vector<float>> TransportBase::TryTake(const Key& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return TakeLocked(key);
}

void TransportBase::Await(const std::function<bool()>& done, const std::string& what) const {
  const auto deadline = std::chrono::steady_clock::now() + stall_timeout_;
  Backoff backoff;
  while (!done()) {
    if (stop_.Stopped()) throw StoppedError();
    if (std::chrono::steady_clock::now() >= deadline) {
      throw InternalError(fmt::format("executor stalled for {} s waiting for {}{}",
                                      stall_timeout_.count() / 1000.0, what, place_));
    }
    backoff.Wait();
  }
}

std::vector<float> TransportBase::Take(int to, int from, const std::string& name,
                                       const std::string& what) {
  const Key key(from, to, name);
  std::optional<std::vector<float>> data;
  if (delivery_ == Delivery::kAtPost) {
    std::unique_lock<std::mutex> lock(mutex_);
    WaitFor(
        cv_, lock, [&] { return (data = TakeLocked(key)).has_value(); }, stop_, stall_timeout_,
        what + place_);
  } else {
    Await(
        [&] {
          while (!(data = TryTake(key))) {
            if (!Pull(to, from, name)) return false;  // nothing more has arrived
          }
          return true;
        },
        what);
  }
  return std::move(*data);
}

void TransportBase::Send(int from, int to, const std::string& tensor, std::span<const float> data) {
  Post(from, to, tensor, data);
}

std::vector<float> TransportBase::Recv(int to, int from, const std::string& tensor) {
  return Take(to, from, tensor,
              fmt::format("device {} to receive {} from device {}", to, tensor, from));
}

std::string TransportBase::CollectiveWhat(const CollectiveCall& call, const char* role, int peer) {
  return fmt::format("device {}: collective {} on group {} ({} device {})", call.device,
                     call.tensor, call.group, role, peer);
}

std::vector<std::vector<float>> TransportBase::Gather(const CollectiveCall& call,
                                                      std::span<const float> data) {
  const std::string name = CollectiveName("up", call);
  const int first = call.ranks[0];
  if (call.device != first) {
    Post(call.device, first, name, data);
    return {};
  }
  std::vector<std::vector<float>> all(call.ranks.size());
  all[0].assign(data.begin(), data.end());
  for (size_t m = 1; m < all.size(); ++m) {
    all[m] = Take(first, call.ranks[m], name, CollectiveWhat(call, "from", call.ranks[m]));
  }
  return all;
}

std::vector<float> TransportBase::Share(const CollectiveCall& call, std::vector<float> result) {
  const std::string name = CollectiveName("down", call);
  const int first = call.ranks[0];
  if (call.device == first) {
    for (size_t m = 1; m < call.ranks.size(); ++m) Post(first, call.ranks[m], name, result);
    return result;
  }
  return Take(call.device, first, name, CollectiveWhat(call, "result from", first));
}

void TransportBase::AllReduce(const CollectiveCall& call, std::span<float> data) {
  GroupPosition(call, call.device);  // a member, or InternalError
  std::vector<std::vector<float>> all = Gather(call, data);
  std::vector<float> sum;
  if (!all.empty()) {
    for (const auto& c : all) {
      TERASIM_CHECK(c.size() == data.size(), "all-reduce {} sizes differ: {} vs {}", call.tensor,
                    c.size(), data.size());
    }
    // Fixed rank order: every member gets the same bits, whichever transport carried them.
    sum = std::move(all[0]);
    for (size_t m = 1; m < all.size(); ++m) {
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += all[m][i];
    }
  }
  const std::vector<float> result = Share(call, std::move(sum));
  TERASIM_CHECK(result.size() == data.size(), "all-reduce {} result of {} values for {}",
                call.tensor, result.size(), data.size());
  std::copy(result.begin(), result.end(), data.begin());
}

void TransportBase::Broadcast(const CollectiveCall& call, int root, std::vector<float>& data) {
  GroupPosition(call, call.device);
  const int root_position = GroupPosition(call, root);
  std::vector<std::vector<float>> all = Gather(call, data);
  data = Share(call, all.empty() ? std::vector<float>() : std::move(all[root_position]));
}

std::vector<float> TransportBase::AllGather(const CollectiveCall& call,
                                            std::span<const float> data) {
  GroupPosition(call, call.device);
  std::vector<float> joined;
  for (const auto& c : Gather(call, data)) joined.insert(joined.end(), c.begin(), c.end());
  return Share(call, std::move(joined));
}

void TransportBase::Abort() {
  stop_.Stop();
  OnAbort();
  cv_.notify_all();
}

std::optional<std::vector<float>> TransportBase::TryRecv(int to, int from,
                                                         const std::string& tensor) {
  if (!Polls()) return Transport::TryRecv(to, from, tensor);  // throws
  return TryTake(Key(from, to, tensor));
}

uint64_t TransportBase::Arrivals(int to) {
  if (!Polls()) return Transport::Arrivals(to);  // throws
  return arrivals_.load();
}

void TransportBase::WaitArrival(int to, uint64_t seen, std::chrono::milliseconds timeout) {
  if (!Polls()) Transport::WaitArrival(to, seen, timeout);  // throws
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return stop_.Stopped() || arrivals_.load() != seen; });
  if (stop_.Stopped()) throw StoppedError();
}

}  // namespace terasim

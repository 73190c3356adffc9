#include "exec/inproc_transport.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/errors.h"

namespace terasim {

void InProcessTransport::Send(int from, int to, const std::string& tensor,
                              std::span<const float> data) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mailboxes_[{from, to, tensor}].emplace_back(data.begin(), data.end());
    arrivals_.fetch_add(1);
  }
  cv_.notify_all();
}

std::vector<float> InProcessTransport::Recv(int to, int from, const std::string& tensor) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto key = std::make_tuple(from, to, tensor);
  std::optional<std::vector<float>> data;
  WaitFor(
      cv_, lock, [&] { return (data = TakeLocked(key)).has_value(); }, stop_, stall_timeout_,
      fmt::format("device {} to receive {} from device {}", to, tensor, from));
  return std::move(*data);
}

std::optional<std::vector<float>> InProcessTransport::TakeLocked(const MailboxKey& key) {
  auto it = mailboxes_.find(key);
  if (it == mailboxes_.end() || it->second.empty()) return std::nullopt;
  std::vector<float> data = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) mailboxes_.erase(it);
  return data;
}

std::optional<std::vector<float>> InProcessTransport::TryRecv(int to, int from,
                                                              const std::string& tensor) {
  std::lock_guard<std::mutex> lock(mutex_);
  return TakeLocked(std::make_tuple(from, to, tensor));
}

uint64_t InProcessTransport::Arrivals(int) { return arrivals_.load(); }

void InProcessTransport::WaitArrival(int, uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return stop_.Stopped() || arrivals_.load() != seen; });
  if (stop_.Stopped()) throw StoppedError();
}

std::vector<std::vector<float>> InProcessTransport::Exchange(const CollectiveCall& call,
                                                             std::span<const float> data) {
  const int n = static_cast<int>(call.ranks.size());
  const int position = GroupPosition(call, call.device);
  const auto key = std::make_pair(call.group, call.tensor);
  std::unique_lock<std::mutex> lock(mutex_);
  Rendezvous& r = rendezvous_[key];
  if (r.contributions.empty()) r.contributions.resize(n);
  TERASIM_CHECK(r.contributions.size() == static_cast<size_t>(n),
                "group {} used with {} and {} members", call.group, r.contributions.size(), n);
  r.contributions[position].assign(data.begin(), data.end());
  r.arrived += 1;
  if (r.arrived == n) cv_.notify_all();
  WaitFor(
      cv_, lock, [&] { return rendezvous_.at(key).arrived == n; }, stop_, stall_timeout_,
      fmt::format("device {}: collective {} on group {}", call.device, call.tensor, call.group));
  Rendezvous& done = rendezvous_.at(key);
  std::vector<std::vector<float>> all = done.contributions;
  done.departed += 1;
  if (done.departed == n) rendezvous_.erase(key);
  return all;
}

void InProcessTransport::AllReduce(const CollectiveCall& call, std::span<float> data) {
  std::vector<std::vector<float>> all = Exchange(call, data);
  for (const auto& c : all) {
    TERASIM_CHECK(c.size() == data.size(), "all-reduce {} sizes differ: {} vs {}", call.tensor,
                  c.size(), data.size());
  }
  // Fixed rank order: every member computes the same bits.
  for (size_t i = 0; i < data.size(); ++i) {
    float sum = all[0][i];
    for (size_t m = 1; m < all.size(); ++m) sum += all[m][i];
    data[i] = sum;
  }
}

void InProcessTransport::Broadcast(const CollectiveCall& call, int root, std::vector<float>& data) {
  std::vector<std::vector<float>> all = Exchange(call, data);
  auto it = std::find(call.ranks.begin(), call.ranks.end(), root);
  TERASIM_CHECK(it != call.ranks.end(), "broadcast root {} is not in group {}", root, call.group);
  data = all[it - call.ranks.begin()];
}

std::vector<float> InProcessTransport::AllGather(const CollectiveCall& call,
                                                 std::span<const float> data) {
  std::vector<float> out;
  for (const auto& c : Exchange(call, data)) out.insert(out.end(), c.begin(), c.end());
  return out;
}

void InProcessTransport::Abort() {
  stop_.Stop();
  cv_.notify_all();
}

}  // namespace terasim

#include "exec/cuda/loopback_transport.h"

#include <algorithm>

#include <fmt/format.h>

#include "exec/cuda/cuda_kernels.cuh"
#include "models/errors.h"

namespace terasim {

namespace {

// Copies `count` floats device -> device on `stream`.
void CopyOnDevice(float* dst, const float* src, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  TERASIM_CUDA(cudaMemcpyAsync(dst, src, static_cast<size_t>(count) * sizeof(float),
                               cudaMemcpyDeviceToDevice, stream));
}

}  // namespace

LoopbackTransport::LoopbackTransport(int devices, int gpu, std::chrono::milliseconds stall_timeout)
    : gpu_(gpu), stall_timeout_(stall_timeout) {
  UseDevice(gpu_);
  streams_.resize(static_cast<size_t>(devices));
}

cudaStream_t LoopbackTransport::StreamOf(int device) const {
  TERASIM_CHECK(device >= 0 && device < static_cast<int>(streams_.size()),
                "device {} outside the loopback transport's {}", device, streams_.size());
  return streams_[device].get();
}

void LoopbackTransport::Send(int from, int to, const std::string& tensor,
                             std::span<const float> data) {
  UseDevice(gpu_);
  Buffer message = Buffer::FromHost(data, StreamOf(from));
  TERASIM_CUDA(cudaStreamSynchronize(StreamOf(from)));  // `data` is the caller's
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mailboxes_[{from, to, tensor}].push_back(std::move(message));
  }
  cv_.notify_all();
}

std::vector<float> LoopbackTransport::Recv(int to, int from, const std::string& tensor) {
  UseDevice(gpu_);
  Buffer message;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto key = std::make_tuple(from, to, tensor);
    WaitFor(
        cv_, lock,
        [&] {
          auto it = mailboxes_.find(key);
          return it != mailboxes_.end() && !it->second.empty();
        },
        stop_, stall_timeout_,
        fmt::format("device {} to receive {} from device {}", to, tensor, from));
    auto it = mailboxes_.find(key);
    message = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) mailboxes_.erase(it);
  }
  const cudaStream_t stream = StreamOf(to);
  Buffer received(message.size(), stream);
  CopyOnDevice(received.data(), message.data(), message.size(), stream);
  // Synchronizes `stream`, so the message buffer is no longer read when it is freed.
  return received.ToHost();
}

const LoopbackTransport::Rendezvous& LoopbackTransport::Arrive(const CollectiveCall& call,
                                                               std::span<const float> data) {
  UseDevice(gpu_);
  const int n = static_cast<int>(call.ranks.size());
  const int position = GroupPosition(call, call.device);
  const cudaStream_t stream = StreamOf(call.device);
  Buffer contribution = Buffer::FromHost(data, stream);
  TERASIM_CUDA(cudaStreamSynchronize(stream));  // `data` is the caller's
  const RendezvousKey key(call.group, call.tensor);
  std::unique_lock<std::mutex> lock(mutex_);
  Rendezvous& r = rendezvous_[key];
  if (r.contributions.empty()) r.contributions.resize(n);
  TERASIM_CHECK(r.contributions.size() == static_cast<size_t>(n),
                "group {} used with {} and {} members", call.group, r.contributions.size(), n);
  r.contributions[position] = std::move(contribution);
  r.arrived += 1;
  if (r.arrived == n) cv_.notify_all();
  WaitFor(
      cv_, lock, [&] { return rendezvous_.at(key).arrived == n; }, stop_, stall_timeout_,
      fmt::format("device {}: collective {} on group {}", call.device, call.tensor, call.group));
  return rendezvous_.at(key);  // std::map nodes stay put while other keys come and go
}

void LoopbackTransport::Depart(const CollectiveCall& call) {
  std::lock_guard<std::mutex> lock(mutex_);
  const RendezvousKey key(call.group, call.tensor);
  Rendezvous& r = rendezvous_.at(key);
  r.departed += 1;
  // Every member has synchronized its reads of the contributions before departing.
  if (r.departed == static_cast<int>(call.ranks.size())) rendezvous_.erase(key);
}

LoopbackTransport::Buffer LoopbackTransport::Sum(const CollectiveCall& call,
                                                 const Rendezvous& r) const {
  const cudaStream_t stream = StreamOf(call.device);
  const int64_t size = r.contributions[0].size();
  for (const Buffer& c : r.contributions) {
    TERASIM_CHECK(c.size() == size, "all-reduce {} sizes differ: {} vs {}", call.tensor, c.size(),
                  size);
  }
  Buffer sum(size, stream);
  CopyOnDevice(sum.data(), r.contributions[0].data(), size, stream);
  // Fixed rank order: every member computes the same bits.
  for (size_t m = 1; m < r.contributions.size(); ++m) {
    gpu::AddInPlace(stream, size, r.contributions[m].data(), sum.data());
  }
  return sum;
}

void LoopbackTransport::AllReduce(const CollectiveCall& call, std::span<float> data) {
  const Rendezvous& r = Arrive(call, data);
  Buffer sum = Sum(call, r);
  sum.CopyToHost(data);
  Depart(call);
}

void LoopbackTransport::Broadcast(const CollectiveCall& call, int root, std::vector<float>& data) {
  const Rendezvous& r = Arrive(call, data);
  const Buffer& from = r.contributions[GroupPosition(call, root)];
  const cudaStream_t stream = StreamOf(call.device);
  Buffer copy(from.size(), stream);
  CopyOnDevice(copy.data(), from.data(), from.size(), stream);
  data = copy.ToHost();
  Depart(call);
}

std::vector<float> LoopbackTransport::AllGather(const CollectiveCall& call,
                                                std::span<const float> data) {
  const Rendezvous& r = Arrive(call, data);
  const cudaStream_t stream = StreamOf(call.device);
  int64_t total = 0;
  for (const Buffer& c : r.contributions) total += c.size();
  Buffer gathered(total, stream);
  int64_t offset = 0;
  for (const Buffer& c : r.contributions) {
    CopyOnDevice(gathered.data() + offset, c.data(), c.size(), stream);
    offset += c.size();
  }
  std::vector<float> out = gathered.ToHost();
  Depart(call);
  return out;
}

void LoopbackTransport::Abort() {
  stop_.Stop();
  cv_.notify_all();
}

}  // namespace terasim

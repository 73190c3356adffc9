#include "exec/cuda/loopback_transport.h"

#include "models/errors.h"

namespace terasim {

LoopbackTransport::LoopbackTransport(int devices, int gpu, std::chrono::milliseconds stall_timeout)
    : TransportBase(Delivery::kAtPost, stall_timeout), gpu_(gpu) {
  UseDevice(gpu_);
  streams_.resize(static_cast<size_t>(devices));
}

cudaStream_t LoopbackTransport::StreamOf(int device) const {
  TERASIM_CHECK(device >= 0 && device < static_cast<int>(streams_.size()),
                "device {} outside the loopback transport's {}", device, streams_.size());
  return streams_[device].get();
}

void LoopbackTransport::Post(int from, int to, const std::string& name,
                             std::span<const float> data) {
  UseDevice(gpu_);
  StreamOf(to);  // a device of this transport, or InternalError
  const cudaStream_t stream = StreamOf(from);
  using Buffer = DeviceBuffer<float>;
  const Buffer sent = Buffer::FromHost(data, stream);
  Buffer received(sent.size(), stream);
  if (sent.size() > 0) {
    TERASIM_CUDA(cudaMemcpyAsync(received.data(), sent.data(),
                                 static_cast<size_t>(sent.size()) * sizeof(float),
                                 cudaMemcpyDeviceToDevice, stream));
  }
  // Synchronizes `stream`: `data` is the caller's, and the buffers are freed on return.
  Deliver(from, to, name, received.ToHost());
}

}  // namespace terasim

// Move-only RAII owners of the CUDA handles the GPU executor uses (STYLE.md "Ownership"): a
// stream, an event, a typed device buffer and a cuBLAS handle. Each wraps exactly one handle,
// creates it through the checking wrapper (exec/cuda/cuda_check.h, throws CudaError) and
// releases it in its destructor without throwing. The NCCL communicator has its own owner
// (exec/cuda/nccl_comm.h) so that this header builds without NCCL.
//
// Device buffers are stream-ordered (cudaMallocAsync / cudaFreeAsync on the stream given at
// construction): work queued on that stream before the buffer dies finishes before its memory
// is reused. Work on other streams must be ordered before the free by an event.
// Thread safety: none per object; distinct objects may be used from distinct threads.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "exec/cuda/cuda_check.h"

namespace terasim {

class CudaStream {
 public:
  // A non-blocking stream on the calling thread's current device.
  CudaStream() { TERASIM_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~CudaStream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& other) noexcept {
    std::swap(stream_, other.stream_);
    return *this;
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }
  // Waits for everything queued so far; throws CudaError on an asynchronous failure.
  void Synchronize() const { TERASIM_CUDA(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

class CudaEvent {
 public:
  // An event without timing unless `timing` (timing events cost more to record).
  explicit CudaEvent(bool timing = false) {
    TERASIM_CUDA(
        cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~CudaEvent() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  cudaEvent_t get() const { return event_; }
  // Marks the current end of `stream`.
  void Record(cudaStream_t stream) const { TERASIM_CUDA(cudaEventRecord(event_, stream)); }
  // Makes `stream` wait (on the device) for the last Record.
  void MakeWait(cudaStream_t stream) const { TERASIM_CUDA(cudaStreamWaitEvent(stream, event_, 0)); }
  void Synchronize() const { TERASIM_CUDA(cudaEventSynchronize(event_)); }
  // Milliseconds between `start`'s and this event's records (both timing events).
  float MillisecondsSince(const CudaEvent& start) const {
    float ms = 0;
    TERASIM_CUDA(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // `count` uninitialized elements, allocated in the order of `stream`.
  DeviceBuffer(int64_t count, cudaStream_t stream) : count_(count), stream_(stream) {
    if (count_ > 0) {
      void* p = nullptr;
      TERASIM_CUDA(cudaMallocAsync(&p, Bytes(), stream_));
      data_ = static_cast<T*>(p);
    }
  }
  ~DeviceBuffer() { Release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        count_(std::exchange(other.count_, 0)),
        stream_(other.stream_) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      Release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
      stream_ = other.stream_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // A buffer of `count` zeros.
  static DeviceBuffer Zeros(int64_t count, cudaStream_t stream) {
    DeviceBuffer b(count, stream);
    b.Zero();
    return b;
  }
  // A buffer holding a copy of `host` (the copy is queued; `host` must stay alive until the
  // stream reaches it, so callers synchronize before `host` dies).
  static DeviceBuffer FromHost(std::span<const T> host, cudaStream_t stream) {
    DeviceBuffer b(static_cast<int64_t>(host.size()), stream);
    b.CopyFromHost(host);
    return b;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  int64_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  size_t Bytes() const { return static_cast<size_t>(count_) * sizeof(T); }
  cudaStream_t stream() const { return stream_; }

  void Zero() {
    if (count_ > 0) TERASIM_CUDA(cudaMemsetAsync(data_, 0, Bytes(), stream_));
  }
  // Queues host -> device of host.size() (<= size()) elements at the start.
  void CopyFromHost(std::span<const T> host) {
    RequireFits(static_cast<int64_t>(host.size()) <= count_);
    if (!host.empty()) {
      TERASIM_CUDA(cudaMemcpyAsync(data_, host.data(), host.size() * sizeof(T),
                                   cudaMemcpyHostToDevice, stream_));
    }
  }
  // Queues device -> host of host.size() (<= size()) elements and waits for the stream.
  void CopyToHost(std::span<T> host) const {
    RequireFits(static_cast<int64_t>(host.size()) <= count_);
    if (!host.empty()) {
      TERASIM_CUDA(cudaMemcpyAsync(host.data(), data_, host.size() * sizeof(T),
                                   cudaMemcpyDeviceToHost, stream_));
    }
    TERASIM_CUDA(cudaStreamSynchronize(stream_));
  }
  std::vector<T> ToHost() const {
    std::vector<T> host(static_cast<size_t>(count_));
    CopyToHost(host);
    return host;
  }

 private:
  // Size preconditions are internal invariants, not input.
  static void RequireFits(bool ok) {
    if (!ok) throw CudaError("DeviceBuffer: host span larger than the buffer");
  }
  void Release() noexcept {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  int64_t count_ = 0;
  cudaStream_t stream_ = nullptr;
};

class CublasHandle {
 public:
  // A handle bound to `stream`, default (exact fp32) math, device pointer mode off.
  explicit CublasHandle(cudaStream_t stream) {
    TERASIM_CUBLAS(cublasCreate(&handle_));
    TERASIM_CUBLAS(cublasSetStream(handle_, stream));
  }
  ~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }
  CublasHandle(CublasHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  CublasHandle& operator=(CublasHandle&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// Makes `device` current for the calling thread (CUDA's current device is per thread, and the
// executor calls a back end from several stream threads).
inline void UseDevice(int device) { TERASIM_CUDA(cudaSetDevice(device)); }

// The number of CUDA devices, 0 where the driver is missing or too old (the build machines:
// "CUDA driver version is insufficient") or no GPU is present. Never throws.
inline int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace terasim

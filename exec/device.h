// Device: the narrow interface below the back-end layer (exec/transformer_backend.h). A device
// owns memory and runs kernels; it knows nothing of layers, slices or parameters. The CPU
// reference (exec/cpu_backend.h) and the CUDA back end (exec/cuda/cuda_backend.h) implement it;
// a new op kind needs code once in the back-end layer plus, at most, one kernel here per device.
//
// Memory is fp32 arrays addressed by raw pointers from Allocate (a DeviceArray owns one). All
// kernels take device pointers, row-major as in exec/cpu_kernels.h, and are queued in one
// order per device: each sees the results of the calls before it. Work may be asynchronous:
// Download and Synchronize wait for everything queued; host spans given to Upload must stay
// alive until the next Download or Synchronize.
//
// Thread safety: none; the back-end layer serializes calls. Kernels that accumulate do so in a
// fixed order (deterministic for a given device).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace terasim {

class Device;

// Owns `size` floats of one device's memory; move-only; empty when default-constructed.
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(Device* device, float* data, int64_t size)
      : device_(device), data_(data), size_(size) {}
  ~DeviceArray() { Release(); }
  DeviceArray(DeviceArray&& other) noexcept
      : device_(std::exchange(other.device_, nullptr)),
        data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    if (this != &other) {
      Release();
      device_ = std::exchange(other.device_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  float* data() { return data_; }
  const float* data() const { return data_; }
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  inline void Release() noexcept;
  Device* device_ = nullptr;
  float* data_ = nullptr;
  int64_t size_ = 0;
};

class Device {
 public:
  virtual ~Device() = default;

  // Makes this device current for the calling thread (CUDA: cudaSetDevice); called at the top
  // of every back-end call, so any thread may drive the back end.
  virtual void Enter() {}

  // --- Memory and copies -------------------------------------------------------------------
  // `n` floats; zeroed when `zero` (a device may zero always).
  DeviceArray Allocate(int64_t n, bool zero) {
    return DeviceArray(this, n > 0 ? AllocateRaw(n, zero) : nullptr, n);
  }
  DeviceArray Zeros(int64_t n) { return Allocate(n, true); }
  // A new array holding a copy of `host` (see the header on host spans' lifetime).
  DeviceArray FromHost(std::span<const float> host) {
    DeviceArray a = Allocate(static_cast<int64_t>(host.size()), false);
    Upload(host, a.data());
    return a;
  }
  virtual float* AllocateRaw(int64_t n, bool zero) = 0;
  virtual void Free(float* data) noexcept = 0;
  // host -> device: host.size() floats to `dst`.
  virtual void Upload(std::span<const float> host, float* dst) = 0;
  // device -> host: host.size() floats from `src`; waits for every queued call.
  virtual void Download(const float* src, std::span<float> host) = 0;
  // device -> device: `rows` rows of `width` floats, rows `src_pitch` / `dst_pitch` floats
  // apart.
  virtual void Copy2D(float* dst, int64_t dst_pitch, const float* src, int64_t src_pitch,
                      int64_t width, int64_t rows) = 0;
  // Waits for every queued call.
  virtual void Synchronize() = 0;

  // --- Kernels (each as in exec/cpu_kernels.h or the comment) ------------------------------
  // C[m, n] = alpha * op(A) op(B) + beta * C, row-major; `batch` > 1 runs that many GEMMs with
  // A, B, C advanced by the strides (in floats) each time.
  virtual void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc, int batch = 1,
                    int64_t stride_a = 0, int64_t stride_b = 0, int64_t stride_c = 0) = 0;
  virtual void LayerNormForward(int rows, int cols, const float* x, const float* gain,
                                const float* bias, float* y, float* mean, float* rstd) = 0;
  // dx overwritten; grad_gain and grad_bias accumulate.
  virtual void LayerNormBackward(int rows, int cols, const float* x, const float* mean,
                                 const float* rstd, const float* gain, const float* dy, float* dx,
                                 float* grad_gain, float* grad_bias) = 0;
  virtual void GeluForward(int64_t n, const float* u, float* g) = 0;
  // du may alias dg.
  virtual void GeluBackward(int64_t n, const float* u, const float* dg, float* du) = 0;
  // out[c] += sum over rows of x[r, c], rows in order.
  virtual void AddColumnSums(int rows, int cols, const float* x, float* out) = 0;
  // x[r, c] = bias[c].
  virtual void FillRows(int rows, int cols, const float* bias, float* x) = 0;
  // x[r, c] += bias[c].
  virtual void AddRowBias(int rows, int cols, const float* bias, float* x) = 0;
  // out[i] += x[i].
  virtual void AddInPlace(int64_t n, const float* x, float* out) = 0;
  // out[i] = value.
  virtual void Fill(int64_t n, float value, float* out) = 0;
  // Causal softmax of `blocks` score blocks of [n, ctx_len]: row i keeps keys [0, t0 + i] and
  // zeroes the rest.
  virtual void CausalSoftmax(int blocks, int n, int ctx_len, int t0, float* scores) = 0;
  // d[j] = p[j] * (d[j] - sum_j p d) * scale for every row of [rows, ctx_len].
  virtual void SoftmaxBackward(int rows, int ctx_len, float scale, const float* probs,
                               float* grad) = 0;
  // Cross-entropy of [rows, vocab] logits against host `targets`: returns loss[r] = log Z -
  // logit[target] (double); the logits become (softmax - onehot) * inv_tokens in place.
  virtual std::vector<double> CrossEntropy(int rows, int vocab, std::span<const int> targets,
                                           float inv_tokens, float* logits) = 0;
  // x[i, :] = token_table[tokens[i], :] + position_table[positions[i], :] (host ids).
  virtual void EmbedForward(int hidden, std::span<const int> tokens, std::span<const int> positions,
                            const float* token_table, const float* position_table, float* x) = 0;
  // The tables' gradients += grad_x rows at their token and position, rows in order.
  virtual void EmbedBackward(int hidden, std::span<const int> tokens,
                             std::span<const int> positions, const float* grad_x,
                             float* grad_token_table, float* grad_position_table) = 0;
  // m, v updated; w -= step * m / (sqrt(v) + eps).
  virtual void AdamStep(int64_t n, float beta1, float beta2, float eps, float step,
                        const float* grad, float* m, float* v, float* w) = 0;
};

void DeviceArray::Release() noexcept {
  if (device_ != nullptr && data_ != nullptr) device_->Free(data_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace terasim

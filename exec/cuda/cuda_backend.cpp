// Host side of the CUDA back end (exec/cuda/cuda_backend.h). Plain C++: the device code is in
// exec/cuda/cuda_kernels.cu, so this file builds with the host compiler (and its sanitizers).
#include "exec/cuda/cuda_backend.h"

#include <memory>
#include <utility>

#include "models/errors.h"

namespace terasim {

namespace {

// Makes the device current before any member that allocates on it is constructed.
CudaBackendOptions OnDevice(CudaBackendOptions options) {
  UseDevice(options.device);
  return options;
}

// The Device on one CUDA device: stream-ordered memory and every kernel on one stream.
class CudaDevice final : public Device {
 public:
  // Creates the stream and cuBLAS handle on options.device; throws CudaError when the device
  // cannot be used.
  explicit CudaDevice(CudaBackendOptions options)
      : options_(OnDevice(options)), cublas_(stream_.get()) {}

  void Enter() override { UseDevice(options_.device); }
  void Synchronize() override { stream_.Synchronize(); }

  float* AllocateRaw(int64_t n, bool zero) override {
    void* p = nullptr;
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    TERASIM_CUDA(cudaMallocAsync(&p, bytes, stream_.get()));
    if (zero) TERASIM_CUDA(cudaMemsetAsync(p, 0, bytes, stream_.get()));
    return static_cast<float*>(p);
  }

  void Free(float* data) noexcept override { (void)cudaFreeAsync(data, stream_.get()); }

  void Upload(std::span<const float> host, float* dst) override {
    if (host.empty()) return;
    TERASIM_CUDA(cudaMemcpyAsync(dst, host.data(), host.size_bytes(), cudaMemcpyHostToDevice,
                                 stream_.get()));
  }

  void Download(const float* src, std::span<float> host) override {
    if (!host.empty()) {
      TERASIM_CUDA(cudaMemcpyAsync(host.data(), src, host.size_bytes(), cudaMemcpyDeviceToHost,
                                   stream_.get()));
    }
    stream_.Synchronize();
  }

  void Copy2D(float* dst, int64_t dst_pitch, const float* src, int64_t src_pitch, int64_t width,
              int64_t rows) override {
    if (width == 0 || rows == 0) return;
    const size_t f = sizeof(float);
    TERASIM_CUDA(cudaMemcpy2DAsync(dst, dst_pitch * f, src, src_pitch * f, width * f, rows,
                                   cudaMemcpyDeviceToDevice, stream_.get()));
  }

  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc, int batch, int64_t stride_a,
            int64_t stride_b, int64_t stride_c) override {
    gpu::Gemm(cublas_.get(), options_.precision, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc, batch, stride_a, stride_b, stride_c);
  }

  void LayerNormForward(int rows, int cols, const float* x, const float* gain, const float* bias,
                        float* y, float* mean, float* rstd) override {
    gpu::LayerNormForward(stream_.get(), rows, cols, x, gain, bias, y, mean, rstd);
  }

  void LayerNormBackward(int rows, int cols, const float* x, const float* mean, const float* rstd,
                         const float* gain, const float* dy, float* dx, float* grad_gain,
                         float* grad_bias) override {
    gpu::LayerNormBackward(stream_.get(), rows, cols, x, mean, rstd, gain, dy, dx, grad_gain,
                           grad_bias);
  }

  void GeluForward(int64_t n, const float* u, float* g) override {
    gpu::GeluForward(stream_.get(), n, u, g);
  }

  void GeluBackward(int64_t n, const float* u, const float* dg, float* du) override {
    gpu::GeluBackward(stream_.get(), n, u, dg, du);
  }

  void AddColumnSums(int rows, int cols, const float* x, float* out) override {
    gpu::AddColumnSums(stream_.get(), rows, cols, x, out);
  }

  void FillRows(int rows, int cols, const float* bias, float* x) override {
    gpu::FillRows(stream_.get(), rows, cols, bias, x);
  }

  void AddRowBias(int rows, int cols, const float* bias, float* x) override {
    gpu::AddRowBias(stream_.get(), rows, cols, bias, x);
  }

  void AddInPlace(int64_t n, const float* x, float* out) override {
    gpu::AddInPlace(stream_.get(), n, x, out);
  }

  void Fill(int64_t n, float value, float* out) override {
    gpu::Fill(stream_.get(), n, value, out);
  }

  void CausalSoftmax(int blocks, int n, int ctx_len, int t0, float* scores) override {
    gpu::CausalSoftmax(stream_.get(), blocks, n, ctx_len, t0, scores);
  }

  void SoftmaxBackward(int rows, int ctx_len, float scale, const float* probs,
                       float* grad) override {
    gpu::SoftmaxBackward(stream_.get(), rows, ctx_len, scale, probs, grad);
  }

  std::vector<double> CrossEntropy(int rows, int vocab, std::span<const int> targets,
                                   float inv_tokens, float* logits) override {
    const DeviceBuffer<int> d_targets = DeviceBuffer<int>::FromHost(targets, stream_.get());
    DeviceBuffer<double> loss(rows, stream_.get());
    gpu::CrossEntropy(stream_.get(), rows, vocab, d_targets.data(), inv_tokens, logits,
                      loss.data());
    return loss.ToHost();  // waits: `targets` may die after this
  }

  void EmbedForward(int hidden, std::span<const int> tokens, std::span<const int> positions,
                    const float* token_table, const float* position_table, float* x) override {
    const auto d_tokens = DeviceBuffer<int>::FromHost(tokens, stream_.get());
    const auto d_positions = DeviceBuffer<int>::FromHost(positions, stream_.get());
    gpu::EmbedForward(stream_.get(), static_cast<int>(tokens.size()), hidden, d_tokens.data(),
                      d_positions.data(), token_table, position_table, x);
    stream_.Synchronize();  // the host ids are the caller's
  }

  void EmbedBackward(int hidden, std::span<const int> tokens, std::span<const int> positions,
                     const float* grad_x, float* grad_token_table,
                     float* grad_position_table) override {
    const auto d_tokens = DeviceBuffer<int>::FromHost(tokens, stream_.get());
    const auto d_positions = DeviceBuffer<int>::FromHost(positions, stream_.get());
    gpu::EmbedBackward(stream_.get(), static_cast<int>(tokens.size()), hidden, d_tokens.data(),
                       d_positions.data(), grad_x, grad_token_table, grad_position_table);
    stream_.Synchronize();  // the host ids are the caller's
  }

  void AdamStep(int64_t n, float beta1, float beta2, float eps, float step, const float* grad,
                float* m, float* v, float* w) override {
    gpu::AdamStep(stream_.get(), n, beta1, beta2, eps, step, grad, m, v, w);
  }

 private:
  CudaBackendOptions options_;
  CudaStream stream_;
  CublasHandle cublas_;
};

}  // namespace

gpu::GemmPrecision ParseGemmPrecision(const std::string& name, const std::string& context) {
  if (name == "fp32") return gpu::GemmPrecision::kFp32;
  if (name == "bf16") return gpu::GemmPrecision::kBf16;
  ThrowInput("{}: --precision: unknown '{}' (known: fp32, bf16)", context, name);
}

std::unique_ptr<Device> MakeCudaDevice(CudaBackendOptions options) {
  return std::make_unique<CudaDevice>(options);
}

CudaBackend::CudaBackend(const ModelCard& card, ShardSpec shard, uint64_t seed,
                         CudaBackendOptions options)
    : TransformerBackend(card, std::move(shard), seed, MakeCudaDevice(options)) {}

}  // namespace terasim

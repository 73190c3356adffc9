#include "exec/cpu_backend.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>

#include "exec/cpu_kernels.h"

namespace terasim {

namespace {

// Every slice allocates its activation buffers and frees them after its backward. glibc serves
// blocks above 128 KiB with fresh mmap()s and returns freed heap tops to the kernel, so those
// buffers page-fault on every use, more or less depending on the order of the ops around them:
// `terasim calibrate`'s repeated single-layer points and a pipeline's interleaved slices then
// pay different amounts of kernel time for the same math. Keeping the blocks in the heap and
// the heap mapped makes a slice cost the same wherever it runs (process-wide, set once; 32 MiB
// is glibc's largest mmap threshold on 64-bit systems).
void KeepActivationMemoryMapped() {
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
}

}  // namespace

namespace {

// The reference device: host memory, always zero-initialized (the reference never reads
// uninitialized memory, whatever a kernel does), every call complete when it returns.
class CpuDevice final : public Device {
 public:
  CpuDevice() { KeepActivationMemoryMapped(); }

  void Synchronize() override {}

  float* AllocateRaw(int64_t n, bool /*zero*/) override {
    return new float[static_cast<size_t>(n)]();
  }

  void Free(float* data) noexcept override { delete[] data; }

  void Upload(std::span<const float> host, float* dst) override {
    if (!host.empty()) std::memcpy(dst, host.data(), host.size_bytes());
  }

  void Download(const float* src, std::span<float> host) override {
    if (!host.empty()) std::memcpy(host.data(), src, host.size_bytes());
  }

  void Copy2D(float* dst, int64_t dst_pitch, const float* src, int64_t src_pitch, int64_t width,
              int64_t rows) override {
    for (int64_t r = 0; r < rows; ++r) std::copy_n(src + r * src_pitch, width, dst + r * dst_pitch);
  }

  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc, int batch, int64_t stride_a,
            int64_t stride_b, int64_t stride_c) override {
    for (int i = 0; i < batch; ++i) {
      cpu::Gemm(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb,
                beta, c + i * stride_c, ldc);
    }
  }

  void LayerNormForward(int rows, int cols, const float* x, const float* gain, const float* bias,
                        float* y, float* mean, float* rstd) override {
    cpu::LayerNormForward(rows, cols, x, gain, bias, y, mean, rstd);
  }

  void LayerNormBackward(int rows, int cols, const float* x, const float* mean, const float* rstd,
                         const float* gain, const float* dy, float* dx, float* grad_gain,
                         float* grad_bias) override {
    cpu::LayerNormBackward(rows, cols, x, mean, rstd, gain, dy, dx, grad_gain, grad_bias);
  }

  void GeluForward(int64_t n, const float* u, float* g) override { cpu::GeluForward(n, u, g); }

  void GeluBackward(int64_t n, const float* u, const float* dg, float* du) override {
    cpu::GeluBackward(n, u, dg, du);
  }

  void AddColumnSums(int rows, int cols, const float* x, float* out) override {
    cpu::AddColumnSums(rows, cols, x, out);
  }

  void FillRows(int rows, int cols, const float* bias, float* x) override {
    for (int r = 0; r < rows; ++r) std::copy_n(bias, cols, x + static_cast<int64_t>(r) * cols);
  }

  void AddRowBias(int rows, int cols, const float* bias, float* x) override {
    cpu::AddRowBias(rows, cols, bias, x);
  }

  void AddInPlace(int64_t n, const float* x, float* out) override {
    for (int64_t i = 0; i < n; ++i) out[i] += x[i];
  }

  void Fill(int64_t n, float value, float* out) override { std::fill_n(out, n, value); }

  void CausalSoftmax(int blocks, int n, int ctx_len, int t0, float* scores) override {
    for (int b = 0; b < blocks; ++b) {
      for (int i = 0; i < n; ++i) {
        float* row = scores + (static_cast<int64_t>(b) * n + i) * ctx_len;
        const int valid = t0 + i + 1;  // causal: keys [0, t0 + i]
        float mx = -std::numeric_limits<float>::infinity();
        for (int j = 0; j < valid; ++j) mx = std::max(mx, row[j]);
        float sum = 0;
        for (int j = 0; j < valid; ++j) {
          row[j] = std::exp(row[j] - mx);
          sum += row[j];
        }
        const float inv = 1.0f / sum;
        for (int j = 0; j < valid; ++j) row[j] *= inv;
        for (int j = valid; j < ctx_len; ++j) row[j] = 0.0f;
      }
    }
  }

  void SoftmaxBackward(int rows, int ctx_len, float scale, const float* probs,
                       float* grad) override {
    for (int i = 0; i < rows; ++i) {
      const float* prow = probs + static_cast<int64_t>(i) * ctx_len;
      float* drow = grad + static_cast<int64_t>(i) * ctx_len;
      float dot = 0;
      for (int j = 0; j < ctx_len; ++j) dot += prow[j] * drow[j];
      for (int j = 0; j < ctx_len; ++j) drow[j] = prow[j] * (drow[j] - dot) * scale;
    }
  }

  std::vector<double> CrossEntropy(int rows, int vocab, std::span<const int> targets,
                                   float inv_tokens, float* logits) override {
    std::vector<double> loss(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r) {
      const int target = targets[r];
      float* row = logits + static_cast<int64_t>(r) * vocab;
      float mx = -std::numeric_limits<float>::infinity();
      for (int c = 0; c < vocab; ++c) mx = std::max(mx, row[c]);
      double sum = 0;
      for (int c = 0; c < vocab; ++c) sum += std::exp(static_cast<double>(row[c] - mx));
      const double log_z = std::log(sum) + mx;
      loss[r] = log_z - row[target];
      // dlogits = (softmax - onehot) * inv_tokens
      for (int c = 0; c < vocab; ++c) {
        row[c] = static_cast<float>(std::exp(static_cast<double>(row[c]) - log_z)) * inv_tokens;
      }
      row[target] -= inv_tokens;
    }
    return loss;
  }

  void EmbedForward(int hidden, std::span<const int> tokens, std::span<const int> positions,
                    const float* token_table, const float* position_table, float* x) override {
    for (size_t r = 0; r < tokens.size(); ++r) {
      const float* te = token_table + static_cast<int64_t>(tokens[r]) * hidden;
      const float* pe = position_table + static_cast<int64_t>(positions[r]) * hidden;
      float* xr = x + static_cast<int64_t>(r) * hidden;
      for (int c = 0; c < hidden; ++c) xr[c] = te[c] + pe[c];
    }
  }

  void EmbedBackward(int hidden, std::span<const int> tokens, std::span<const int> positions,
                     const float* grad_x, float* grad_token_table,
                     float* grad_position_table) override {
    for (size_t r = 0; r < tokens.size(); ++r) {
      const float* gr = grad_x + static_cast<int64_t>(r) * hidden;
      float* gt = grad_token_table + static_cast<int64_t>(tokens[r]) * hidden;
      float* gp = grad_position_table + static_cast<int64_t>(positions[r]) * hidden;
      for (int c = 0; c < hidden; ++c) {
        gt[c] += gr[c];
        gp[c] += gr[c];
      }
    }
  }

  void AdamStep(int64_t n, float beta1, float beta2, float eps, float step, const float* grad,
                float* m, float* v, float* w) override {
    for (int64_t j = 0; j < n; ++j) {
      m[j] = beta1 * m[j] + (1.0f - beta1) * grad[j];
      v[j] = beta2 * v[j] + (1.0f - beta2) * grad[j] * grad[j];
      w[j] -= step * m[j] / (std::sqrt(v[j]) + eps);
    }
  }
};

}  // namespace

std::unique_ptr<Device> MakeCpuDevice() { return std::make_unique<CpuDevice>(); }

CpuBackend::CpuBackend(const ModelCard& card, ShardSpec shard, uint64_t seed)
    : TransformerBackend(card, std::move(shard), seed, MakeCpuDevice()) {}

}  // namespace terasim

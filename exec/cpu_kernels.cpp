#include "exec/cpu_kernels.h"

#include <cblas.h>

#include <cmath>

namespace terasim::cpu {

void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void LayerNormForward(int rows, int cols, const float* x, const float* gain, const float* bias,
                      float* y, float* mean, float* rstd) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<int64_t>(r) * cols;
    float* yr = y + static_cast<int64_t>(r) * cols;
    double sum = 0;
    for (int c = 0; c < cols; ++c) sum += xr[c];
    const float mu = static_cast<float>(sum / cols);
    double var = 0;
    for (int c = 0; c < cols; ++c) var += static_cast<double>(xr[c] - mu) * (xr[c] - mu);
    const float rs = static_cast<float>(1.0 / std::sqrt(var / cols + kLayerNormEps));
    for (int c = 0; c < cols; ++c) yr[c] = (xr[c] - mu) * rs * gain[c] + bias[c];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

void LayerNormBackward(int rows, int cols, const float* x, const float* mean, const float* rstd,
                       const float* gain, const float* dy, float* dx, float* grad_gain,
                       float* grad_bias) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<int64_t>(r) * cols;
    const float* dyr = dy + static_cast<int64_t>(r) * cols;
    float* dxr = dx + static_cast<int64_t>(r) * cols;
    const float mu = mean[r];
    const float rs = rstd[r];
    double sum_dxhat = 0;
    double sum_dxhat_xhat = 0;
    for (int c = 0; c < cols; ++c) {
      const float xhat = (xr[c] - mu) * rs;
      const float dxhat = dyr[c] * gain[c];
      sum_dxhat += dxhat;
      sum_dxhat_xhat += static_cast<double>(dxhat) * xhat;
      grad_gain[c] += dyr[c] * xhat;
      grad_bias[c] += dyr[c];
    }
    const float m1 = static_cast<float>(sum_dxhat / cols);
    const float m2 = static_cast<float>(sum_dxhat_xhat / cols);
    for (int c = 0; c < cols; ++c) {
      const float xhat = (xr[c] - mu) * rs;
      dxr[c] = rs * (dyr[c] * gain[c] - m1 - xhat * m2);
    }
  }
}

namespace {
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;
}  // namespace

void GeluForward(int64_t n, const float* u, float* g) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = u[i];
    g[i] = 0.5f * x * (1.0f + std::tanh(kGeluC * (x + kGeluA * x * x * x)));
  }
}

void GeluBackward(int64_t n, const float* u, const float* dg, float* du) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = u[i];
    const float t = std::tanh(kGeluC * (x + kGeluA * x * x * x));
    const float dt = (1.0f - t * t) * kGeluC * (1.0f + 3.0f * kGeluA * x * x);
    du[i] = dg[i] * (0.5f * (1.0f + t) + 0.5f * x * dt);
  }
}

void AddColumnSums(int rows, int cols, const float* x, float* out) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<int64_t>(r) * cols;
    for (int c = 0; c < cols; ++c) out[c] += xr[c];
  }
}

void AddRowBias(int rows, int cols, const float* bias, float* x) {
  for (int r = 0; r < rows; ++r) {
    float* xr = x + static_cast<int64_t>(r) * cols;
    for (int c = 0; c < cols; ++c) xr[c] += bias[c];
  }
}

}  // namespace terasim::cpu

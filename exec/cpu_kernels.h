// fp32 kernels of the CPU back end: a row-major sgemm wrapper over OpenBLAS (cblas.h),
// LayerNorm, GeLU (tanh form) and column sums, forward and backward. Pure functions on raw
// row-major buffers; thread-safe (OpenBLAS may use its own threads inside sgemm).
#pragma once

#include <cstdint>

namespace terasim::cpu {

// C[m, n] = alpha * op(A) op(B) + beta * C, all row-major; op(A) is [m, k], op(B) is [k, n];
// lda/ldb/ldc are the row strides of A, B, C as stored.
void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);

inline constexpr float kLayerNormEps = 1e-5f;

// y = (x - mean) * rstd * gain + bias per row of x [rows, cols]; saves mean and rstd [rows].
void LayerNormForward(int rows, int cols, const float* x, const float* gain, const float* bias,
                      float* y, float* mean, float* rstd);
// dx = the input gradient (overwritten); grad_gain and grad_bias are accumulated.
void LayerNormBackward(int rows, int cols, const float* x, const float* mean, const float* rstd,
                       const float* gain, const float* dy, float* dx, float* grad_gain,
                       float* grad_bias);

// g = 0.5 u (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3))), elementwise over n values.
void GeluForward(int64_t n, const float* u, float* g);
// du = dg * g'(u).
void GeluBackward(int64_t n, const float* u, const float* dg, float* du);

// out[c] += sum over rows of x[r, c].
void AddColumnSums(int rows, int cols, const float* x, float* out);
// x[r, c] += bias[c].
void AddRowBias(int rows, int cols, const float* bias, float* x);

}  // namespace terasim::cpu

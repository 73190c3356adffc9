// The CUDA back end's kernels and GEMMs, as plain host functions that queue work on a stream
// (exec/cuda/cuda_kernels.cu holds the device code; this header has no CUDA syntax, so host
// C++ includes it). Each mirrors a CPU reference function (exec/cpu_kernels.h) or a loop of
// exec/cpu_backend.cpp on row-major fp32 device buffers. Launch failures throw CudaError;
// errors inside a kernel surface at the next synchronization. Thread-safe (state lives only in
// the arguments).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace terasim::gpu {

enum class GemmPrecision {
  kFp32,  // exact fp32 (CUBLAS_COMPUTE_32F, no TF32)
  kBf16,  // bf16 products with fp32 accumulation (CUBLAS_COMPUTE_32F_FAST_16BF)
};

// C[m, n] = alpha * op(A) op(B) + beta * C, all row-major as in cpu::Gemm; on the handle's
// stream. `batch` > 1 runs that many GEMMs with the A, B, C pointers advanced by the strides
// (in elements) each time.
void Gemm(cublasHandle_t handle, GemmPrecision precision, bool trans_a, bool trans_b, int m, int n,
          int k, float alpha, const float* a, int lda, const float* b, int ldb, float beta,
          float* c, int ldc, int batch = 1, int64_t stride_a = 0, int64_t stride_b = 0,
          int64_t stride_c = 0);

// As cpu::LayerNormForward / cpu::LayerNormBackward (grad_gain and grad_bias accumulate).
void LayerNormForward(cudaStream_t stream, int rows, int cols, const float* x, const float* gain,
                      const float* bias, float* y, float* mean, float* rstd);
void LayerNormBackward(cudaStream_t stream, int rows, int cols, const float* x, const float* mean,
                       const float* rstd, const float* gain, const float* dy, float* dx,
                       float* grad_gain, float* grad_bias);

// As cpu::GeluForward / cpu::GeluBackward (du may alias dg).
void GeluForward(cudaStream_t stream, int64_t n, const float* u, float* g);
void GeluBackward(cudaStream_t stream, int64_t n, const float* u, const float* dg, float* du);

// out[c] += sum over rows of x[r, c] (rows summed in order: deterministic).
void AddColumnSums(cudaStream_t stream, int rows, int cols, const float* x, float* out);
// x[r, c] = bias[c] for every row.
void FillRows(cudaStream_t stream, int rows, int cols, const float* bias, float* x);
// x[r, c] += bias[c] for every row.
void AddRowBias(cudaStream_t stream, int rows, int cols, const float* bias, float* x);
// out[i] += x[i].
void AddInPlace(cudaStream_t stream, int64_t n, const float* x, float* out);
// out[i] = value.
void Fill(cudaStream_t stream, int64_t n, float value, float* out);

// Causal softmax of `heads_rows` score blocks of [n, ctx_len] each (block b = row r * heads +
// head): row i of a block keeps keys [0, t0 + i] and zeroes the rest.
void CausalSoftmax(cudaStream_t stream, int blocks, int n, int ctx_len, int t0, float* scores);
// d[j] = p[j] * (d[j] - sum_j p d) * scale for every row of [rows, ctx_len].
void SoftmaxBackward(cudaStream_t stream, int rows, int ctx_len, float scale, const float* probs,
                     float* grad);

// Cross-entropy of `rows` logit rows of [rows, vocab] against `targets`: loss[r] = log Z -
// logit[target]; the logits become the gradient (softmax - onehot) * inv_tokens in place.
void CrossEntropy(cudaStream_t stream, int rows, int vocab, const int* targets, float inv_tokens,
                  float* logits, double* loss);

// x[i, :] = token_table[tokens[i], :] + position_table[positions[i], :] for `rows` rows.
void EmbedForward(cudaStream_t stream, int rows, int hidden, const int* tokens,
                  const int* positions, const float* token_table, const float* position_table,
                  float* x);
// The tables' gradients += grad_x rows at their token and position (rows in order:
// deterministic).
void EmbedBackward(cudaStream_t stream, int rows, int hidden, const int* tokens,
                   const int* positions, const float* grad_x, float* grad_token_table,
                   float* grad_position_table);

// One Adam step: m, v updated; w -= step * m / (sqrt(v) + eps).
void AdamStep(cudaStream_t stream, int64_t n, float beta1, float beta2, float eps, float step,
              const float* grad, float* m, float* v, float* w);

}  // namespace terasim::gpu

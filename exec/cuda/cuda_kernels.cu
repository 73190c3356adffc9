// Device code of the CUDA back end (exec/cuda/cuda_kernels.cuh documents every function).
// Straightforward kernels: one thread block per row for row reductions (LayerNorm, softmax,
// cross-entropy), one thread per column for column sums (rows in order, so results do not
// depend on scheduling), grid-stride loops for elementwise work.
#include "exec/cuda/cuda_kernels.cuh"

#include <cfloat>

#include "exec/cuda/cuda_check.h"

namespace terasim::gpu {

namespace {

constexpr int kBlock = 256;                    // threads per block of every kernel here
constexpr float kLayerNormEps = 1e-5f;         // as cpu::kLayerNormEps
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;

int Blocks(int64_t n) {
  const int64_t b = (n + kBlock - 1) / kBlock;
  return static_cast<int>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

void CheckLaunch(const char* kernel) {
  cuda_detail::Check(cudaGetLastError(), kernel, __FILE__, __LINE__);
}

// Sum (or max) of one value per thread over the block; every thread gets the result.
template <typename T, bool kMax>
__device__ T BlockReduce(T value) {
  __shared__ T scratch[kBlock / 32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) {
    const T other = __shfl_down_sync(0xffffffffu, value, offset);
    value = kMax ? (other > value ? other : value) : value + other;
  }
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  T result = scratch[0];
  for (int w = 1; w < kBlock / 32; ++w) {
    result = kMax ? (scratch[w] > result ? scratch[w] : result) : result + scratch[w];
  }
  return result;
}

__global__ void LayerNormForwardKernel(int cols, const float* x, const float* gain,
                                       const float* bias, float* y, float* mean, float* rstd) {
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  float sum = 0;
  for (int c = threadIdx.x; c < cols; c += kBlock) sum += xr[c];
  const float mu = BlockReduce<float, false>(sum) / cols;
  float var = 0;
  for (int c = threadIdx.x; c < cols; c += kBlock) var += (xr[c] - mu) * (xr[c] - mu);
  const float rs = rsqrtf(BlockReduce<float, false>(var) / cols + kLayerNormEps);
  for (int c = threadIdx.x; c < cols; c += kBlock) yr[c] = (xr[c] - mu) * rs * gain[c] + bias[c];
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

__global__ void LayerNormInputGradKernel(int cols, const float* x, const float* mean,
                                         const float* rstd, const float* gain, const float* dy,
                                         float* dx) {
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  const float* dyr = dy + row * cols;
  float* dxr = dx + row * cols;
  const float mu = mean[row];
  const float rs = rstd[row];
  float s1 = 0;
  float s2 = 0;
  for (int c = threadIdx.x; c < cols; c += kBlock) {
    const float dxhat = dyr[c] * gain[c];
    s1 += dxhat;
    s2 += dxhat * (xr[c] - mu) * rs;
  }
  const float m1 = BlockReduce<float, false>(s1) / cols;
  const float m2 = BlockReduce<float, false>(s2) / cols;
  for (int c = threadIdx.x; c < cols; c += kBlock) {
    const float xhat = (xr[c] - mu) * rs;
    dxr[c] = rs * (dyr[c] * gain[c] - m1 - xhat * m2);
  }
}

__global__ void LayerNormParamGradKernel(int rows, int cols, const float* x, const float* mean,
                                         const float* rstd, const float* dy, float* grad_gain,
                                         float* grad_bias) {
  const int c = blockIdx.x * kBlock + threadIdx.x;
  if (c >= cols) return;
  float gg = 0;
  float gb = 0;
  for (int r = 0; r < rows; ++r) {
    const int64_t i = static_cast<int64_t>(r) * cols + c;
    gg += dy[i] * (x[i] - mean[r]) * rstd[r];
    gb += dy[i];
  }
  grad_gain[c] += gg;
  grad_bias[c] += gb;
}

__global__ void GeluForwardKernel(int64_t n, const float* u, float* g) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    const float x = u[i];
    g[i] = 0.5f * x * (1.0f + tanhf(kGeluC * (x + kGeluA * x * x * x)));
  }
}

__global__ void GeluBackwardKernel(int64_t n, const float* u, const float* dg, float* du) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    const float x = u[i];
    const float t = tanhf(kGeluC * (x + kGeluA * x * x * x));
    const float dt = (1.0f - t * t) * kGeluC * (1.0f + 3.0f * kGeluA * x * x);
    du[i] = dg[i] * (0.5f * (1.0f + t) + 0.5f * x * dt);
  }
}

__global__ void AddColumnSumsKernel(int rows, int cols, const float* x, float* out) {
  const int c = blockIdx.x * kBlock + threadIdx.x;
  if (c >= cols) return;
  float sum = 0;
  for (int r = 0; r < rows; ++r) sum += x[static_cast<int64_t>(r) * cols + c];
  out[c] += sum;
}

__global__ void FillRowsKernel(int64_t n, int cols, const float* bias, float* x) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    x[i] = bias[i % cols];
  }
}

__global__ void AddRowBiasKernel(int64_t n, int cols, const float* bias, float* x) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    x[i] += bias[i % cols];
  }
}

__global__ void AddInPlaceKernel(int64_t n, const float* x, float* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    out[i] += x[i];
  }
}

__global__ void FillKernel(int64_t n, float value, float* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    out[i] = value;
  }
}

// One block per score row (block b, row i): grid (n, blocks).
__global__ void CausalSoftmaxKernel(int n, int ctx_len, int t0, float* scores) {
  const int i = blockIdx.x;
  float* row = scores + (static_cast<int64_t>(blockIdx.y) * n + i) * ctx_len;
  const int valid = t0 + i + 1;
  float mx = -FLT_MAX;
  for (int j = threadIdx.x; j < valid; j += kBlock) mx = fmaxf(mx, row[j]);
  mx = BlockReduce<float, true>(mx);
  float sum = 0;
  for (int j = threadIdx.x; j < valid; j += kBlock) {
    const float e = expf(row[j] - mx);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0f / BlockReduce<float, false>(sum);
  for (int j = threadIdx.x; j < ctx_len; j += kBlock) row[j] = j < valid ? row[j] * inv : 0.0f;
}

__global__ void SoftmaxBackwardKernel(int ctx_len, float scale, const float* probs, float* grad) {
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * ctx_len;
  const float* p = probs + offset;
  float* d = grad + offset;
  float dot = 0;
  for (int j = threadIdx.x; j < ctx_len; j += kBlock) dot += p[j] * d[j];
  dot = BlockReduce<float, false>(dot);
  for (int j = threadIdx.x; j < ctx_len; j += kBlock) d[j] = p[j] * (d[j] - dot) * scale;
}

__global__ void CrossEntropyKernel(int vocab, const int* targets, float inv_tokens, float* logits,
                                   double* loss) {
  const int64_t r = blockIdx.x;
  float* row = logits + r * vocab;
  float mx = -FLT_MAX;
  for (int c = threadIdx.x; c < vocab; c += kBlock) mx = fmaxf(mx, row[c]);
  mx = BlockReduce<float, true>(mx);
  double sum = 0;
  for (int c = threadIdx.x; c < vocab; c += kBlock) sum += exp(static_cast<double>(row[c] - mx));
  sum = BlockReduce<double, false>(sum);
  const double log_z = log(sum) + mx;
  const int target = targets[r];
  const float target_logit = row[target];
  __syncthreads();  // every thread has read row[target] before the row is overwritten
  for (int c = threadIdx.x; c < vocab; c += kBlock) {
    float g = static_cast<float>(exp(static_cast<double>(row[c]) - log_z)) * inv_tokens;
    if (c == target) g -= inv_tokens;
    row[c] = g;
  }
  if (threadIdx.x == 0) loss[r] = log_z - target_logit;
}

__global__ void EmbedForwardKernel(int hidden, const int* tokens, const int* positions,
                                   const float* token_table, const float* position_table,
                                   float* x) {
  const int64_t r = blockIdx.x;
  const float* te = token_table + static_cast<int64_t>(tokens[r]) * hidden;
  const float* pe = position_table + static_cast<int64_t>(positions[r]) * hidden;
  for (int c = threadIdx.x; c < hidden; c += kBlock) x[r * hidden + c] = te[c] + pe[c];
}

__global__ void EmbedBackwardKernel(int rows, int hidden, const int* tokens, const int* positions,
                                    const float* grad_x, float* grad_token_table,
                                    float* grad_position_table) {
  const int c = blockIdx.x * kBlock + threadIdx.x;
  if (c >= hidden) return;
  for (int r = 0; r < rows; ++r) {
    const float g = grad_x[static_cast<int64_t>(r) * hidden + c];
    grad_token_table[static_cast<int64_t>(tokens[r]) * hidden + c] += g;
    grad_position_table[static_cast<int64_t>(positions[r]) * hidden + c] += g;
  }
}

__global__ void AdamKernel(int64_t n, float beta1, float beta2, float eps, float step,
                           const float* grad, float* m, float* v, float* w) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    const float g = grad[i];
    m[i] = beta1 * m[i] + (1.0f - beta1) * g;
    v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
    w[i] -= step * m[i] / (sqrtf(v[i]) + eps);
  }
}

}  // namespace

void Gemm(cublasHandle_t handle, GemmPrecision precision, bool trans_a, bool trans_b, int m, int n,
          int k, float alpha, const float* a, int lda, const float* b, int ldb, float beta,
          float* c, int ldc, int batch, int64_t stride_a, int64_t stride_b, int64_t stride_c) {
  if (m == 0 || n == 0 || batch == 0) return;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasComputeType_t compute =
      precision == GemmPrecision::kBf16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
  if (batch == 1) {
    TERASIM_CUBLAS(cublasGemmEx(handle, op_b, op_a, n, m, k, &alpha, b, CUDA_R_32F, ldb, a,
                                CUDA_R_32F, lda, &beta, c, CUDA_R_32F, ldc, compute,
                                CUBLAS_GEMM_DEFAULT));
  } else {
    TERASIM_CUBLAS(cublasGemmStridedBatchedEx(
        handle, op_b, op_a, n, m, k, &alpha, b, CUDA_R_32F, ldb, stride_b, a, CUDA_R_32F, lda,
        stride_a, &beta, c, CUDA_R_32F, ldc, stride_c, batch, compute, CUBLAS_GEMM_DEFAULT));
  }
}

void LayerNormForward(cudaStream_t stream, int rows, int cols, const float* x, const float* gain,
                      const float* bias, float* y, float* mean, float* rstd) {
  if (rows == 0) return;
  LayerNormForwardKernel<<<rows, kBlock, 0, stream>>>(cols, x, gain, bias, y, mean, rstd);
  CheckLaunch("LayerNormForwardKernel");
}

void LayerNormBackward(cudaStream_t stream, int rows, int cols, const float* x, const float* mean,
                       const float* rstd, const float* gain, const float* dy, float* dx,
                       float* grad_gain, float* grad_bias) {
  if (rows == 0) return;
  LayerNormInputGradKernel<<<rows, kBlock, 0, stream>>>(cols, x, mean, rstd, gain, dy, dx);
  CheckLaunch("LayerNormInputGradKernel");
  LayerNormParamGradKernel<<<Blocks(cols), kBlock, 0, stream>>>(rows, cols, x, mean, rstd, dy,
                                                                grad_gain, grad_bias);
  CheckLaunch("LayerNormParamGradKernel");
}

void GeluForward(cudaStream_t stream, int64_t n, const float* u, float* g) {
  if (n == 0) return;
  GeluForwardKernel<<<Blocks(n), kBlock, 0, stream>>>(n, u, g);
  CheckLaunch("GeluForwardKernel");
}

void GeluBackward(cudaStream_t stream, int64_t n, const float* u, const float* dg, float* du) {
  if (n == 0) return;
  GeluBackwardKernel<<<Blocks(n), kBlock, 0, stream>>>(n, u, dg, du);
  CheckLaunch("GeluBackwardKernel");
}

void AddColumnSums(cudaStream_t stream, int rows, int cols, const float* x, float* out) {
  if (rows == 0 || cols == 0) return;
  AddColumnSumsKernel<<<Blocks(cols), kBlock, 0, stream>>>(rows, cols, x, out);
  CheckLaunch("AddColumnSumsKernel");
}

void FillRows(cudaStream_t stream, int rows, int cols, const float* bias, float* x) {
  const int64_t n = static_cast<int64_t>(rows) * cols;
  if (n == 0) return;
  FillRowsKernel<<<Blocks(n), kBlock, 0, stream>>>(n, cols, bias, x);
  CheckLaunch("FillRowsKernel");
}

void AddRowBias(cudaStream_t stream, int rows, int cols, const float* bias, float* x) {
  const int64_t n = static_cast<int64_t>(rows) * cols;
  if (n == 0) return;
  AddRowBiasKernel<<<Blocks(n), kBlock, 0, stream>>>(n, cols, bias, x);
  CheckLaunch("AddRowBiasKernel");
}

void AddInPlace(cudaStream_t stream, int64_t n, const float* x, float* out) {
  if (n == 0) return;
  AddInPlaceKernel<<<Blocks(n), kBlock, 0, stream>>>(n, x, out);
  CheckLaunch("AddInPlaceKernel");
}

void Fill(cudaStream_t stream, int64_t n, float value, float* out) {
  if (n == 0) return;
  FillKernel<<<Blocks(n), kBlock, 0, stream>>>(n, value, out);
  CheckLaunch("FillKernel");
}

void CausalSoftmax(cudaStream_t stream, int blocks, int n, int ctx_len, int t0, float* scores) {
  if (blocks == 0 || n == 0) return;
  CausalSoftmaxKernel<<<dim3(n, blocks), kBlock, 0, stream>>>(n, ctx_len, t0, scores);
  CheckLaunch("CausalSoftmaxKernel");
}

void SoftmaxBackward(cudaStream_t stream, int rows, int ctx_len, float scale, const float* probs,
                     float* grad) {
  if (rows == 0) return;
  SoftmaxBackwardKernel<<<rows, kBlock, 0, stream>>>(ctx_len, scale, probs, grad);
  CheckLaunch("SoftmaxBackwardKernel");
}

void CrossEntropy(cudaStream_t stream, int rows, int vocab, const int* targets, float inv_tokens,
                  float* logits, double* loss) {
  if (rows == 0) return;
  CrossEntropyKernel<<<rows, kBlock, 0, stream>>>(vocab, targets, inv_tokens, logits, loss);
  CheckLaunch("CrossEntropyKernel");
}

void EmbedForward(cudaStream_t stream, int rows, int hidden, const int* tokens,
                  const int* positions, const float* token_table, const float* position_table,
                  float* x) {
  if (rows == 0) return;
  EmbedForwardKernel<<<rows, kBlock, 0, stream>>>(hidden, tokens, positions, token_table,
                                                  position_table, x);
  CheckLaunch("EmbedForwardKernel");
}

void EmbedBackward(cudaStream_t stream, int rows, int hidden, const int* tokens,
                   const int* positions, const float* grad_x, float* grad_token_table,
                   float* grad_position_table) {
  if (rows == 0) return;
  EmbedBackwardKernel<<<Blocks(hidden), kBlock, 0, stream>>>(
      rows, hidden, tokens, positions, grad_x, grad_token_table, grad_position_table);
  CheckLaunch("EmbedBackwardKernel");
}

void AdamStep(cudaStream_t stream, int64_t n, float beta1, float beta2, float eps, float step,
              const float* grad, float* m, float* v, float* w) {
  if (n == 0) return;
  AdamKernel<<<Blocks(n), kBlock, 0, stream>>>(n, beta1, beta2, eps, step, grad, m, v, w);
  CheckLaunch("AdamKernel");
}

}  // namespace terasim::gpu

// CudaBackend: the ComputeBackend on one CUDA device, the same math as the CPU reference
// (exec/cpu_backend.h) with cuBLAS GEMMs and the kernels of exec/cuda/cuda_kernels.cuh.
//
// Weights, gradients, Adam moments, the key/value buffers and every saved activation stay on
// the device. The interface passes activations as host spans, so each call copies its input
// host -> device, queues its work on the back end's stream and copies its output back, then
// waits for the stream (correctness first: two PCIe copies of rows * tokens * hidden floats
// and one synchronization per call; a device-resident runner would remove them). A kWhole
// layer call keeps its intermediate sums on the device.
//
// Precision: fp32 GEMMs (exact, no TF32) by default; with GemmPrecision::kBf16 the GEMMs use
// bf16 products with fp32 accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_16BF) while
// storage, kernels and the optimizer stay fp32.
//
// Thread safety: none (see ComputeBackend). Every call first makes the back end's device
// current for the calling thread, so the runner may call it from any of its stream threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "exec/compute_backend.h"
#include "exec/cuda/cuda_handles.h"
#include "exec/cuda/cuda_kernels.cuh"
#include "exec/model_params.h"
#include "models/model_card.h"

namespace terasim {

struct CudaBackendOptions {
  int device = 0;  // CUDA device index
  gpu::GemmPrecision precision = gpu::GemmPrecision::kFp32;
};

// "fp32" or "bf16" -> the precision; throws InputError "CONTEXT: --precision: ..." otherwise.
gpu::GemmPrecision ParseGemmPrecision(const std::string& name, const std::string& context);

class CudaBackend : public ComputeBackend {
 public:
  // Creates the stream and cuBLAS handle on options.device and initializes the shard's
  // weights from `seed` (identical to CpuBackend's). Throws InputError when tp does not divide
  // the card's heads or ffn; CudaError when the device cannot be used.
  CudaBackend(const ModelCard& card, ShardSpec shard, uint64_t seed, CudaBackendOptions options);

  void BeginIteration() override;
  void Input(const SliceRef& slice, std::span<float> x) override;
  void InputBackward(const SliceRef& slice, std::span<const float> grad_x) override;
  void Forward(int layer, LayerPart part, const SliceRef& slice, std::span<const float> input,
               std::span<float> output) override;
  void FinishForward(int layer, LayerPart part, const SliceRef& slice,
                     std::span<const float> summed, std::span<float> output) override;
  void Backward(int layer, LayerPart part, const SliceRef& slice,
                std::span<const float> grad_output, std::span<float> grad_input) override;
  void FinishBackward(int layer, LayerPart part, const SliceRef& slice,
                      std::span<const float> summed, std::span<float> grad_input) override;
  double Loss(const SliceRef& slice, std::span<const float> output, std::span<float> grad_output,
              int64_t global_tokens) override;
  double LossSum() const override { return loss_sum_; }
  std::vector<float> Gradients(Range layers) const override;
  void SetGradients(Range layers, std::span<const float> values) override;
  void SnapshotGradients(Range layers) override;
  void GatherSnapshot(FullTensors& full) const override;
  void OptimizerStep(Range layers, const AdamOptions& adam) override;
  double LayerFlops(LayerPart part, const SliceRef& slice, bool backward) const override;

  // Waits for all queued work; throws CudaError on an asynchronous failure. For benchmarks.
  void Synchronize() const { stream_.Synchronize(); }

 private:
  using Buffer = DeviceBuffer<float>;
  struct ParamSet {
    int set = 0;  // layer index, kEmbedSet or kHeadSet
    std::vector<ParamSpec> specs;
    std::vector<Buffer> weight, grad, adam_m, adam_v;
    std::vector<std::vector<float>> snapshot;  // host copies
    bool snapped = false;
    int adam_step = 0;
  };
  struct KvBuffer {
    Buffer k, v, dk, dv;  // [rows, sequence, hidden / tp] each
  };
  struct SliceState {  // saved activations of one (micro-batch, layer, slice), on the device
    Buffer x, mean1, rstd1, a, qkv, probs, ctx;
    Buffer y, mean2, rstd2, b, u, g;
    Buffer dz, dy;
  };
  using SliceKey = std::tuple<int, int, int>;  // (micro-batch, layer, t0)

  ParamSet MakeSet(int set, std::vector<ParamSpec> specs) const;
  ParamSet& Layer(int layer);
  SliceState& State(int layer, const SliceRef& slice);
  KvBuffer& Kv(int layer, const SliceRef& slice);
  std::vector<const ParamSet*> SetsIn(Range layers) const;
  std::vector<ParamSet*> SetsIn(Range layers);

  Buffer Upload(std::span<const float> host) const;
  void Download(const Buffer& device, std::span<float> host) const;
  Buffer Zeros(int64_t n) const { return Buffer::Zeros(n, stream_.get()); }
  Buffer Uninitialized(int64_t n) const { return Buffer(n, stream_.get()); }
  // Row-major GEMM on this back end's handle and precision (see gpu::Gemm).
  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc, int batch = 1,
            int64_t stride_a = 0, int64_t stride_b = 0, int64_t stride_c = 0) const;
  // The (token, position) ids of a slice's rows, on the device.
  std::pair<DeviceBuffer<int>, DeviceBuffer<int>> TokenIds(const SliceRef& slice) const;

  // Device-resident halves of the block protocol; `partial` and `out` are device buffers.
  void AttentionForward(int layer, const SliceRef& slice, float* partial);
  void FinishAttention(int layer, const SliceRef& slice, const float* summed);
  void MlpForward(int layer, const SliceRef& slice, float* partial);
  void FinishMlp(int layer, const SliceRef& slice, const float* summed, float* out);
  void MlpBackward(int layer, const SliceRef& slice, float* partial);
  void FinishMlpBackward(int layer, const SliceRef& slice, const float* summed);
  void AttentionBackward(int layer, const SliceRef& slice, float* partial);
  void FinishAttentionBackward(int layer, const SliceRef& slice, const float* summed,
                               float* grad_input);

  ModelCard card_;
  ShardSpec shard_;
  uint64_t seed_;
  CudaBackendOptions options_;
  int hidden_;
  int local_hidden_;
  int local_heads_;
  int head_dim_;
  int local_ffn_;
  // Declared before every buffer: destroyed after them (their frees are queued on it).
  CudaStream stream_;
  CublasHandle cublas_;
  std::map<int, ParamSet> layers_;
  std::optional<ParamSet> embed_;
  std::optional<ParamSet> head_;
  std::map<std::pair<int, int>, KvBuffer> kv_;  // (micro-batch, layer)
  std::map<SliceKey, SliceState> slices_;
  double loss_sum_ = 0;
};

}  // namespace terasim

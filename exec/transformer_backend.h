// TransformerBackend: the one back-end layer every device shares (STYLE.md: one layer holds
// the bookkeeping, device kernels sit behind an interface). It implements ComputeBackend over a
// Device (exec/device.h) and owns everything that is not a kernel: the shard's parameter
// tensors by (set, index), their gradients, Adam moments and first-iteration snapshot; the
// forward and backward sequence of a layer under the block protocol of exec/compute_backend.h;
// the saved activations of each slice in flight, keyed by (micro-batch, layer, t0); the
// key/value buffer and its gradient per (micro-batch, layer); the loss, gradient accumulation
// and the optimizer step.
//
// Each layer: pre-LayerNorm causal self-attention (QKV projection, scores of a token slice
// [t0, t1) against keys [0, t1) from the (micro-batch, layer) key/value buffer, softmax, output
// projection) and a pre-LayerNorm MLP with tanh GeLU, each with a residual. The backward of a
// slice adds its key/value gradient contributions for earlier positions to the buffer's
// gradient, where the backward of earlier slices (which runs later) picks them up. Tensor
// parallel shards follow exec/model_params.h. Weights come from (seed, layer) so any shard of
// any tp degree on any device starts from the same model.
//
// Activations cross the interface as host spans; each call uploads its input, queues its
// kernels, downloads its output (or synchronizes) before it returns. A kWhole call keeps its
// intermediate sums on the device.
//
// Thread safety: none (see ComputeBackend).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "exec/compute_backend.h"
#include "exec/device.h"
#include "exec/model_params.h"
#include "models/model_card.h"

namespace terasim {

class TransformerBackend : public ComputeBackend {
 public:
  // Initializes the shard's weights from `seed` on `device`. Throws InputError when tp does not
  // divide the card's heads or ffn.
  TransformerBackend(const ModelCard& card, ShardSpec shard, uint64_t seed,
                     std::unique_ptr<Device> device);
  ~TransformerBackend() override;

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
  void SequenceShard(int layer, LayerPart part, bool backward, const SliceRef& shard,
                     std::span<const float> input, std::span<float> output) override;
  void KeepActivations(int layer, const SliceRef& slice, Recompute mode) override;
  void RecomputeForward(int layer, const SliceRef& slice) override;
  void RecomputeBlock(int layer, LayerPart part, const SliceRef& slice,
                      std::span<const float> input, std::span<float> partial) override;
  void FinishRecompute(int layer, LayerPart part, const SliceRef& slice,
                       std::span<const float> summed) override;
  void RecomputeShard(int layer, LayerPart part, const SliceRef& shard,
                      std::span<float> output) override;
  std::vector<float> Gradients(Range layers, ParamSubset subset = ParamSubset::kAll) const override;
  void SetGradients(Range layers, std::span<const float> values,
                    ParamSubset subset = ParamSubset::kAll) override;
  std::vector<float> Parameters(Range layers) const override;
  void SetParameters(Range layers, std::span<const float> values) override;
  void ReleaseParameters(Range layers, ElementRange keep) override;
  void SnapshotGradients(Range layers, ElementRange valid = {}) override;
  void GatherSnapshot(FullTensors& full) const override;
  void ReleaseGradients(Range layers, ElementRange keep) override;
  void OptimizerStep(Range layers, const AdamOptions& adam, ElementRange shard = {}) override;
  StateBytes ResidentState() const override;
  double LayerFlops(LayerPart part, const SliceRef& slice, bool backward) const override;

  // For tests: the value of element (full_row, full_col) of parameter `name` (ParamName), or
  // nullopt when this shard does not hold it; AddToParameter changes it (no-op if not held).
  std::optional<float> ParameterValue(const std::string& name, int full_row, int full_col) const;
  void AddToParameter(const std::string& name, int full_row, int full_col, float delta);

  // Waits for all queued device work. For benchmarks.
  void Synchronize() const { device_->Synchronize(); }

 private:
  struct ParamSet {
    int set = 0;  // layer index, kEmbedSet or kHeadSet
    std::vector<ParamSpec> specs;
    std::vector<DeviceArray> weight, grad;
    std::vector<int64_t> sizes;  // each tensor's elements (weight or grad may be released)
    std::vector<std::vector<float>> snapshot;  // host copies
    ElementRange snapshot_valid;               // in this set's flattened order
    bool snapped = false;
    // ReleaseParameters: `weight` freed but the elements `kept` (this set's flattened order),
    // held in `kept_values`.
    bool released = false;
    ElementRange kept;
    DeviceArray kept_values;
    // ReleaseGradients (ZeRO-2 / 3): `grad` freed but the elements `grad_kept` (zero
    // elsewhere), held in `grad_kept_values`, until BeginIteration makes them whole again.
    bool grad_released = false;
    ElementRange grad_kept;
    DeviceArray grad_kept_values;
    // Adam moments of the elements `moments` of this set's flattened order: those its first
    // OptimizerStep steps (ZeRO: the device's shard), allocated then.
    ElementRange moments{0, 0};
    DeviceArray adam_m, adam_v;
    int adam_step = 0;
    int64_t Size() const;
  };
  struct KvBuffer {
    DeviceArray k, v, dk, dv;  // [rows, sequence, hidden / tp] each
  };
  struct SliceState {  // saved activations of one (micro-batch, layer, slice)
    DeviceArray x, mean1, rstd1, a, qkv, probs, ctx;
    DeviceArray y, mean2, rstd2, b, u, g;
    DeviceArray dz, dy;
    Recompute mode = Recompute::kNone;  // how the forward keeps the arrays above
    // Sequence parallelism: x, y, dz, dy and the LayerNorm statistics hold this rank's token
    // rows; a and b (the gathered LayerNorm outputs) every token row.
    bool sequence_parallel = false;
  };
  using SliceKey = std::tuple<int, int, int>;  // (micro-batch, layer, t0)

  ParamSet MakeSet(int set, std::vector<ParamSpec> specs);
  ParamSet& Layer(int layer);
  SliceState& State(int layer, const SliceRef& slice);
  // The state of a slice whose recompute=full forward kept its input, checked ready for the
  // recomputation of `part` (InternalError naming the slice when not).
  SliceState& Kept(int layer, LayerPart part, const SliceRef& slice);
  KvBuffer& Kv(int layer, const SliceRef& slice);
  // The sets in Gradients() order for a layer range.
  std::vector<const ParamSet*> SetsIn(Range layers) const;
  std::vector<ParamSet*> SetsIn(Range layers);
  const ParamSet* FindSet(const std::string& name, size_t& index) const;
  // The flat index in the shard of full element (row, col) of spec, or -1 when not held.
  int64_t ShardIndex(const ParamSpec& spec, int full_row, int full_col) const;
  // The (token, position) ids of a slice's rows.
  void TokenIds(const SliceRef& slice, int offset, std::vector<int>& tokens,
                std::vector<int>& positions) const;

  // A ParamSet's arrays (weight, grad, ...) for the flattened vectors: every tensor, or those
  // of `subset`, in spec order, each with its offset in the set's flattened order.
  using Arrays = std::vector<DeviceArray> ParamSet::*;
  template <typename Fn>
  void ForEachTensor(Range layers, ParamSubset subset, Fn&& fn) const;
  std::vector<float> Flatten(Range layers, Arrays arrays, ParamSubset subset) const;
  // Tensor i of `arrays` (weight or grad) of `ps` into `out`; when released, its kept
  // elements (zeros elsewhere). `local`: its first element in the set's flattened order.
  void DownloadTensor(const ParamSet& ps, Arrays arrays, size_t i, int64_t local,
                      std::span<float> out) const;
  // The elements `keep` (set-local, clamped to the set) of `arrays` of `ps`, copied into one
  // new array (ReleaseParameters, ReleaseGradients); `keep` is clamped in place.
  DeviceArray CopyKept(const ParamSet& ps, Arrays arrays, ElementRange& keep);
  // ReleaseParameters (`arrays` weight) and ReleaseGradients (grad).
  void Release(Range layers, ElementRange keep, Arrays arrays);
  // fn(set, its first element in the flattened order, its element count) for each held set.
  template <typename Fn>
  void ForEachSet(Range layers, Fn&& fn);
  void Unflatten(Range layers, Arrays arrays, ParamSubset subset, std::span<const float> values);

  DeviceArray Zeros(int64_t n) { return device_->Zeros(n); }
  DeviceArray Uninitialized(int64_t n) { return device_->Allocate(n, false); }
  void Download(const DeviceArray& a, std::span<float> host) const;

  // The block's input LayerNorm (ln1 of s.x, or with `mlp` ln2 of s.y) over `rows` token
  // rows into `out`, keeping its statistics in s.
  void NormIn(int layer, bool mlp, int rows, SliceState& s, float* out);
  // The whole forward or backward block sequence of the block protocol on the device.
  void RunPart(int layer, LayerPart part, bool backward, const SliceRef& slice,
               std::span<const float> in, std::span<float> out);
  // FinishForward / FinishBackward.
  void Finish(int layer, LayerPart part, bool backward, const SliceRef& slice,
              std::span<const float> summed, std::span<float> out);

  // Device-resident halves of the block protocol; `partial`, `summed`, `out` are device
  // arrays of slice.Values(hidden).
  // `write_kv` false (recomputation): the buffer already holds this slice's keys and values.
  void AttentionForward(int layer, const SliceRef& slice, float* partial, bool write_kv = true);
  // s.probs = causal softmax of scale * q k^T over keys [0, t1) (the forward's, and selective
  // recomputation's in the backward).
  void AttentionProbs(const SliceRef& slice, SliceState& s, KvBuffer& kv);
  void FinishAttention(int layer, const SliceRef& slice, const float* summed);
  void MlpForward(int layer, const SliceRef& slice, float* partial);
  void FinishMlp(int layer, const SliceRef& slice, const float* summed, float* out);
  // `dz` / `dy`: the gradient of the block's output (every token row).
  void MlpBackward(int layer, const SliceRef& slice, const float* dz, float* partial);
  void FinishMlpBackward(int layer, const SliceRef& slice, const float* summed);
  void AttentionBackward(int layer, const SliceRef& slice, const float* dy, float* partial);
  void FinishAttentionBackward(int layer, const SliceRef& slice, const float* summed,
                               float* grad_input);
  // The attention block's finish into the layer input gradient (host), and the slice's state
  // dropped: the end of a layer's backward.
  void FinishLayerBackward(int layer, const SliceRef& slice, const float* summed,
                           std::span<float> grad_input);

  // Declared first: destroyed after every array it allocated.
  std::unique_ptr<Device> device_;
  ModelCard card_;
  ShardSpec shard_;
  uint64_t seed_;
  int hidden_;
  int local_hidden_;  // hidden / tp: this shard's attention width
  int local_heads_;
  int head_dim_;
  int local_ffn_;
  std::map<int, ParamSet> layers_;
  std::optional<ParamSet> embed_;
  std::optional<ParamSet> head_;
  std::map<std::pair<int, int>, KvBuffer> kv_;  // (micro-batch, layer)
  std::map<SliceKey, SliceState> slices_;
  double loss_sum_ = 0;
};

}  // namespace terasim

// ComputeBackend: the pluggable layer math of one device (STYLE.md: compute back ends are one
// of the few virtual interfaces). The runner (exec/runner.h) drives it op by op; the CPU back
// end (exec/cpu_backend.h) is the reference, a CUDA back end can implement the same calls.
//
// A back end holds one device's shard of the model (the layers it runs, sharded over its tp
// group), their gradients and optimizer state, and the per-iteration state of every slice in
// flight: saved activations for the backward and the key/value buffer (and its gradient) of
// each (micro-batch, layer). Activations cross the interface as host fp32 spans of
// rows * tokens * hidden values, row-major (sequence, token, feature).
//
// Block protocol (Megatron): Forward(part=kAttention) returns the partial sum of the
// attention output projection; after the tp all-reduce, FinishForward(kAttention) adds bias
// and residual and keeps the result inside; Forward(kMlp) continues from it and returns the
// fc2 partial sum; FinishForward(kMlp) yields the layer output. Backward mirrors it:
// Backward(kMlp) takes the layer output gradient and returns the partial gradient of the
// ln2 output; FinishBackward(kMlp) runs ln2's backward and the residual; Backward(kAttention)
// returns the partial gradient of the ln1 output; FinishBackward(kAttention) yields the layer
// input gradient. With one tp rank, the "partial" sums are already whole and kWhole runs both
// blocks and both finishes in one call.
//
// Thread safety: none; the runner serializes calls per device.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "models/model_card.h"
#include "schedule/op.h"

namespace terasim {

// One token slice of a micro-batch, or (sequence parallelism) one tp rank's shard of it: of
// the slice's rows * Tokens() token rows, in (sequence, token) order, chunk `part` of `parts`
// equal chunks.
struct SliceRef {
  int microbatch = 0;
  int rows = 1;  // sequences in the micro-batch
  int t0 = 0;    // the slice is tokens [t0, t1); its causal context is t0 tokens
  int t1 = 0;
  int64_t first_sequence = 0;  // global index of row 0 (rows of all lower micro-batch ids)
  int part = 0;                // the shard: chunk `part` of `parts` (1: the whole slice)
  int parts = 1;

  int Tokens() const { return t1 - t0; }
  // Token rows of the shard, and the first one's index among the slice's.
  int TokenRows() const { return rows * Tokens() / parts; }
  int FirstTokenRow() const { return part * TokenRows(); }
  int64_t Values(int hidden) const { return static_cast<int64_t>(TokenRows()) * hidden; }
};

// Elements [begin, end) of a flattened gradient or parameter vector (Gradients() order); the
// default is all of them.
struct ElementRange {
  int64_t begin = 0;
  int64_t end = INT64_MAX;
  bool Contains(int64_t i) const { return i >= begin && i < end; }
};

// Which parameters a flattened vector holds: all, or only those every tp rank holds whole
// (ShardKind::kReplicated: LayerNorms, row-parallel biases, embedding, head), whose gradients
// a sequence-parallel tp group computes in parts, one per rank's token rows.
enum class ParamSubset { kAll, kReplicated };

// Which part of the model one device holds.
struct ShardSpec {
  std::vector<int> layers;  // transformer layers held, ascending
  int tp_rank = 0;
  int tp = 1;
};

// Model state resident on one device (bytes): parameters, their gradients, Adam's two moments.
// ZeRO shards them over the data-parallel group (Rajbhandari et al. 2020): stage 1 the moments,
// 2 the gradients too, 3 the parameters too (outside a layer's use). The executor keeps no
// separate fp32 master weights: its parameters are fp32 already.
struct StateBytes {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t moments = 0;
};

struct AdamOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
};

// Full (unsharded) tensors assembled from shards, by ParamName (exec/model_params.h).
struct FullTensors {
  std::map<std::string, std::vector<float>> values;
  std::map<std::string, std::vector<uint8_t>> covered;  // 1 where an element was written
};

class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;

  // Drops every slice's saved state and key/value buffer and zeroes the gradients and the
  // loss sum; called before each iteration.
  virtual void BeginIteration() = 0;

  // The input of layer 0 for a slice: the token + position embedding when the card has the
  // embedding in its stack, else synthetic activations from (seed, sequence, token).
  virtual void Input(const SliceRef& slice, std::span<float> x) = 0;
  // The embedding's backward (accumulates the tables' gradients); no-op without embedding.
  virtual void InputBackward(const SliceRef& slice, std::span<const float> grad_x) = 0;

  // See the block protocol above. `input`/`grad_output` and `output`/`grad_input` hold
  // slice.Values(hidden) floats where the protocol says they are used, and may be empty
  // where it does not (Forward(kMlp) input, Backward(kAttention) grad_output,
  // FinishForward(kAttention) output, FinishBackward(kMlp) grad_input).
  virtual void Forward(int layer, LayerPart part, const SliceRef& slice,
                       std::span<const float> input, std::span<float> output) = 0;
  virtual void FinishForward(int layer, LayerPart part, const SliceRef& slice,
                             std::span<const float> summed, std::span<float> output) = 0;
  virtual void Backward(int layer, LayerPart part, const SliceRef& slice,
                        std::span<const float> grad_output, std::span<float> grad_input) = 0;
  virtual void FinishBackward(int layer, LayerPart part, const SliceRef& slice,
                              std::span<const float> summed, std::span<float> grad_input) = 0;

  // Sequence parallelism (schedule/op.h sp=1; Korthikanti et al. 2022). Between blocks each
  // tp rank holds its shard of the slice's token rows (`shard`, part = its position in the
  // tp group); the block's all-gather before it and reduce-scatter after it replace the tp
  // all-reduce. SequenceShard is what this rank contributes to the all-gather before a block
  // (shard.Values(hidden) floats into `output`):
  //   forward kAttention: keeps `input` (its shard of the layer input), returns its ln1;
  //   forward kMlp:       returns ln2 of the block's kept residual (input empty);
  //   backward kMlp:      keeps `input` (its shard of the layer output gradient), returns it;
  //   backward kAttention: returns the kept gradient of the residual (input empty).
  // The backward ones also accumulate the row-parallel bias gradient over the shard. Then
  // Forward / Backward of the block take the gathered tensor (every token row) as input (and
  // grad_output), and FinishForward / FinishBackward take `shard` and the reduce-scattered sum
  // of this rank's token rows. Gradients of ParamSubset::kReplicated are then this rank's
  // part: the tp group sums them (an all-reduce) before the optimizer.
  virtual void SequenceShard(int layer, LayerPart part, bool backward, const SliceRef& shard,
                             std::span<const float> input, std::span<float> output) = 0;

  // Activation recomputation (schedule/op.h recompute=; models/memory_model.h). How the
  // forward of (layer, slice) keeps its saved activations; call before that Forward, default
  // kNone (keep all). kSelective: the attention core's probabilities are dropped once the
  // context is computed and recomputed inside Backward(kAttention) from the kept queries and
  // the key/value buffer. kFull: once the layer's output is produced only its input is kept;
  // RecomputeForward must rebuild the rest before Backward.
  virtual void KeepActivations(int layer, const SliceRef& slice, Recompute mode) = 0;
  // The RECOMPUTE of a whole layer (one tp rank): re-runs its forward from the kept input to
  // rebuild its saved activations, with the same kernels in the same order as the forward (so
  // the same values). It reads the key/value buffer as the forward left it (this slice's and
  // earlier slices' keys and values) and writes nothing there; no output is produced.
  virtual void RecomputeForward(int layer, const SliceRef& slice) = 0;
  // The RECOMPUTE of one block of a layer split over a tp group (part kAttention or kMlp), in
  // the block protocol of Forward, from what the recompute=full forward kept: RecomputeBlock
  // (kAttention) returns the partial sum of the attention output projection (from the kept
  // layer input, or with sequence parallelism from `input`, the all-gathered ln1 of the kept
  // shards), FinishRecompute(kAttention) takes its tp sum (bias, residual); RecomputeBlock
  // (kMlp) continues (with sequence parallelism from `input`, the gathered ln2) and returns
  // the fc2 partial sum, whose tp sum (the layer output, which the backward does not read)
  // FinishRecompute(kMlp) ignores. As RecomputeForward: the forward's kernels in its order,
  // key/value buffer read, not written. `input` is empty without sequence parallelism.
  virtual void RecomputeBlock(int layer, LayerPart part, const SliceRef& slice,
                              std::span<const float> input, std::span<float> partial) = 0;
  virtual void FinishRecompute(int layer, LayerPart part, const SliceRef& slice,
                               std::span<const float> summed) = 0;
  // Sequence parallelism: this rank's contribution to the all-gather before a recomputed
  // block, as SequenceShard's forward: ln1 of the kept shard of the layer input (kAttention),
  // ln2 of the recomputed residual's shard (kMlp).
  virtual void RecomputeShard(int layer, LayerPart part, const SliceRef& shard,
                              std::span<float> output) = 0;

  // The loss of a slice from the last layer's output, and its gradient into `grad_output`.
  // With an LM head: cross-entropy of the synthetic next tokens; without: the sum of all
  // output features. Either way the loss is divided by `global_tokens` (every token of the
  // iteration's global batch), so the total loss and every gradient do not depend on how the
  // batch is split. Returns this slice's contribution and adds it to the loss sum.
  virtual double Loss(const SliceRef& slice, std::span<const float> output,
                      std::span<float> grad_output, int64_t global_tokens) = 0;
  // Sum of Loss() contributions since BeginIteration.
  virtual double LossSum() const = 0;

  // The gradients of the parameters of layers [layers.begin, layers.end) that this device
  // holds (with the embedding when the range starts at 0 and the head when it ends at the
  // last layer), flattened in a fixed order; SetGradients writes them back.
  virtual std::vector<float> Gradients(Range layers,
                                       ParamSubset subset = ParamSubset::kAll) const = 0;
  virtual void SetGradients(Range layers, std::span<const float> values,
                            ParamSubset subset = ParamSubset::kAll) = 0;
  // The parameters themselves, in the same order (ZeRO: the shards the data-parallel group
  // gathers).
  virtual std::vector<float> Parameters(Range layers) const = 0;
  virtual void SetParameters(Range layers, std::span<const float> values) = 0;
  // ZeRO-3: frees the parameters of the held layers in `layers` but for the elements `keep` of
  // their flattened order (the device's shard), until SetParameters brings them back whole.
  // Meanwhile Parameters gives those elements (the rest zero), OptimizerStep may step only
  // them, and layer math on the layers throws InternalError.
  virtual void ReleaseParameters(Range layers, ElementRange keep) = 0;

  // Copies the current gradients of the held layers in `layers` (not copied before) aside as
  // the "first iteration" gradients (before the optimizer changes the weights); only the
  // elements `valid` of the flattened order hold them (ZeRO: the device's shard), the rest
  // are not covered.
  virtual void SnapshotGradients(Range layers, ElementRange valid = {}) = 0;
  // Writes the snapshot, in full (unsharded) layout, into `full` (ParamName -> values sized
  // to the full tensor): only elements not yet covered, so the first device that holds an
  // element (the lowest rank, when called in rank order) supplies it.
  virtual void GatherSnapshot(FullTensors& full) const = 0;

  // One Adam step over the held layers in `layers` (and embedding / head as for Gradients),
  // of the elements `shard` of their flattened order (ZeRO: the device's shard; the rest keep
  // their values and moments).
  virtual void OptimizerStep(Range layers, const AdamOptions& adam, ElementRange shard = {}) = 0;

  // ZeRO-2 / 3: after the reduce-scatter of their gradients, frees the gradients of the held
  // layers in `layers` but for the elements `keep` of their flattened order (the device's
  // shard, the rest taken as zero: Gradients gives zeros there, SetGradients and the
  // optimizer step use only `keep`), until BeginIteration makes them whole again.
  virtual void ReleaseGradients(Range layers, ElementRange keep) = 0;
  // The model state this device holds now, measured from its arrays (bytes).
  virtual StateBytes ResidentState() const = 0;

  // Model FLOPs of a forward (or backward: twice) of one part of one layer for a slice on
  // this shard, for traces.
  virtual double LayerFlops(LayerPart part, const SliceRef& slice, bool backward) const = 0;
};

}  // namespace terasim

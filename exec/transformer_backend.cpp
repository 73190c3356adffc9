#include "exec/transformer_backend.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "exec/synthetic_data.h"
#include "models/errors.h"

namespace terasim {

TransformerBackend::TransformerBackend(const ModelCard& card, ShardSpec shard, uint64_t seed,
                                       std::unique_ptr<Device> device)
    : device_(std::move(device)), card_(card), shard_(std::move(shard)), seed_(seed) {
  ValidateTensorParallel(card_, shard_.tp, "exec");
  device_->Enter();
  hidden_ = card_.hidden;
  local_hidden_ = hidden_ / shard_.tp;
  local_heads_ = card_.heads / shard_.tp;
  head_dim_ = card_.HeadDim();
  local_ffn_ = card_.ffn / shard_.tp;
  for (int layer : shard_.layers) {
    TERASIM_CHECK(layer >= 0 && layer < card_.layers, "layer {} out of range", layer);
    layers_.emplace(layer, MakeSet(layer, LayerParamSpecs(card_)));
  }
  const bool first = layers_.count(0) > 0;
  const bool last = layers_.count(card_.layers - 1) > 0;
  if (first && card_.embedding_in_stack) embed_ = MakeSet(kEmbedSet, EmbedParamSpecs(card_));
  if (last && card_.lm_head_in_stack) head_ = MakeSet(kHeadSet, HeadParamSpecs(card_));
}

TransformerBackend::~TransformerBackend() {
  // Frees are queued on the device: make it current for them.
  device_->Enter();
}

TransformerBackend::ParamSet TransformerBackend::MakeSet(int set, std::vector<ParamSpec> specs) {
  ParamSet ps;
  ps.set = set;
  ps.specs = std::move(specs);
  for (const ParamSpec& spec : ps.specs) {
    const std::vector<float> init = InitShard(spec, set, seed_, shard_.tp_rank, shard_.tp);
    ps.weight.push_back(device_->FromHost(init));
    const int64_t n = static_cast<int64_t>(init.size());
    ps.grad.push_back(Zeros(n));
    ps.sizes.push_back(n);
    device_->Synchronize();  // `init` dies at the end of this iteration
  }
  return ps;
}

void TransformerBackend::Download(const DeviceArray& a, std::span<float> host) const {
  TERASIM_CHECK(static_cast<int64_t>(host.size()) <= a.size(), "download of {} from {}",
                host.size(), a.size());
  device_->Download(a.data(), host);
}

TransformerBackend::ParamSet& TransformerBackend::Layer(int layer) {
  auto it = layers_.find(layer);
  TERASIM_CHECK(it != layers_.end(), "layer {} is not held by this device", layer);
  TERASIM_CHECK(!it->second.released, "layer {}: its parameters are released (ZeRO-3)", layer);
  return it->second;
}

TransformerBackend::SliceState& TransformerBackend::State(int layer, const SliceRef& slice) {
  return slices_[SliceKey(slice.microbatch, layer, slice.t0)];
}

TransformerBackend::KvBuffer& TransformerBackend::Kv(int layer, const SliceRef& slice) {
  KvBuffer& kv = kv_[{slice.microbatch, layer}];
  if (kv.k.empty()) {
    const int64_t n = static_cast<int64_t>(slice.rows) * card_.sequence * local_hidden_;
    kv.k = Zeros(n);
    kv.v = Zeros(n);
    kv.dk = Zeros(n);
    kv.dv = Zeros(n);
  }
  return kv;
}

void TransformerBackend::TokenIds(const SliceRef& slice, int offset, std::vector<int>& tokens,
                                  std::vector<int>& positions) const {
  const int n = slice.Tokens();
  for (int k = slice.FirstTokenRow(); k < slice.FirstTokenRow() + slice.TokenRows(); ++k) {
    const int t = slice.t0 + k % n + offset;
    tokens.push_back(SyntheticToken(seed_, slice.first_sequence + k / n, t, card_.vocab));
    positions.push_back(t);
  }
}

void TransformerBackend::BeginIteration() {
  device_->Enter();
  kv_.clear();
  slices_.clear();
  loss_sum_ = 0;
  auto zero = [this](ParamSet& ps) {
    if (ps.grad_released) {  // whole again for this iteration's backward
      for (size_t i = 0; i < ps.grad.size(); ++i) ps.grad[i] = Zeros(ps.sizes[i]);
      ps.grad_released = false;
      ps.grad_kept_values = DeviceArray();
      return;
    }
    for (auto& g : ps.grad) device_->Fill(g.size(), 0.0f, g.data());
  };
  for (auto& [layer, ps] : layers_) zero(ps);
  if (embed_) zero(*embed_);
  if (head_) zero(*head_);
  device_->Synchronize();
}

void TransformerBackend::Input(const SliceRef& slice, std::span<float> x) {
  device_->Enter();
  const int n = slice.Tokens();
  TERASIM_CHECK(static_cast<int64_t>(x.size()) == slice.Values(hidden_), "input size {}", x.size());
  if (!embed_) {
    // Synthetic activations from (seed, sequence, token, feature), on the host.
    for (int k = 0; k < slice.TokenRows(); ++k) {
      const int row = slice.FirstTokenRow() + k;
      float* xr = x.data() + static_cast<int64_t>(k) * hidden_;
      for (int c = 0; c < hidden_; ++c) {
        xr[c] = SyntheticInput(seed_, slice.first_sequence + row / n, slice.t0 + row % n, c);
      }
    }
    return;
  }
  TERASIM_CHECK(!embed_->released, "the embedding's parameters are released (ZeRO-3)");
  std::vector<int> tokens;
  std::vector<int> positions;
  TokenIds(slice, 0, tokens, positions);
  DeviceArray out = Uninitialized(slice.Values(hidden_));
  device_->EmbedForward(hidden_, tokens, positions, embed_->weight[kTokenTable].data(),
                        embed_->weight[kPositionTable].data(), out.data());
  Download(out, x);
}

void TransformerBackend::InputBackward(const SliceRef& slice, std::span<const float> grad_x) {
  if (!embed_) return;
  device_->Enter();
  std::vector<int> tokens;
  std::vector<int> positions;
  TokenIds(slice, 0, tokens, positions);
  DeviceArray g = device_->FromHost(grad_x);
  device_->EmbedBackward(hidden_, tokens, positions, g.data(), embed_->grad[kTokenTable].data(),
                         embed_->grad[kPositionTable].data());
  device_->Synchronize();  // grad_x and the ids are the caller's / this frame's
}

void TransformerBackend::AttentionProbs(const SliceRef& slice, SliceState& s, KvBuffer& kv) {
  Device& d = *device_;
  const int n = slice.Tokens();
  const int hl = local_hidden_;
  const int heads = local_heads_;
  const int ctx_len = slice.t1;  // keys [0, t1)
  const int seq = card_.sequence;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  const int64_t block = static_cast<int64_t>(n) * ctx_len;  // one head's scores
  s.probs = Zeros(static_cast<int64_t>(slice.rows) * heads * block);
  for (int r = 0; r < slice.rows; ++r) {
    const float* q = s.qkv.data() + static_cast<int64_t>(r) * n * 3 * hl;
    const float* k = kv.k.data() + static_cast<int64_t>(r) * seq * hl;
    float* pr = s.probs.data() + static_cast<int64_t>(r) * heads * block;
    // Per head: scores = scale * q k^T.
    d.Gemm(false, true, n, ctx_len, head_dim_, scale, q, 3 * hl, k, hl, 0.0f, pr, ctx_len, heads,
           head_dim_, head_dim_, block);
  }
  d.CausalSoftmax(slice.rows * heads, n, ctx_len, slice.t0, s.probs.data());
}

void TransformerBackend::AttentionForward(int layer, const SliceRef& slice, float* partial,
                                          bool write_kv) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  KvBuffer& kv = Kv(layer, slice);
  Device& d = *device_;
  const int n = slice.Tokens();
  const int rows_tokens = slice.rows * n;
  const int h = hidden_;
  const int hl = local_hidden_;
  const int hd = head_dim_;
  const int heads = local_heads_;
  const int ctx_len = slice.t1;  // keys [0, t1)
  const int seq = card_.sequence;
  if (!s.sequence_parallel) {  // else s.a is the gathered ln1 output
    s.a = Zeros(static_cast<int64_t>(rows_tokens) * h);
    NormIn(layer, false, rows_tokens, s, s.a.data());
  }
  s.qkv = Zeros(static_cast<int64_t>(rows_tokens) * 3 * hl);
  d.FillRows(rows_tokens, 3 * hl, p.weight[kQkvBias].data(), s.qkv.data());
  d.Gemm(false, false, rows_tokens, 3 * hl, h, 1.0f, s.a.data(), h, p.weight[kQkvWeight].data(),
         3 * hl, 1.0f, s.qkv.data(), 3 * hl);
  // Append this slice's keys and values to the buffer: n rows of hl floats per sequence. A
  // recomputation finds them there already (written by this slice's forward, unchanged since:
  // later slices write only their own rows, backwards only the gradients).
  for (int r = 0; write_kv && r < slice.rows; ++r) {
    const float* src = s.qkv.data() + static_cast<int64_t>(r) * n * 3 * hl;
    const int64_t dst = (static_cast<int64_t>(r) * seq + slice.t0) * hl;
    d.Copy2D(kv.k.data() + dst, hl, src + hl, 3 * hl, hl, n);
    d.Copy2D(kv.v.data() + dst, hl, src + 2 * hl, 3 * hl, hl, n);
  }
  const int64_t block = static_cast<int64_t>(n) * ctx_len;  // one head's scores
  AttentionProbs(slice, s, kv);
  s.ctx = Zeros(static_cast<int64_t>(rows_tokens) * hl);
  for (int r = 0; r < slice.rows; ++r) {
    const float* v = kv.v.data() + static_cast<int64_t>(r) * seq * hl;
    const float* pr = s.probs.data() + static_cast<int64_t>(r) * heads * block;
    float* c = s.ctx.data() + static_cast<int64_t>(r) * n * hl;
    // Per head: context = probs v.
    d.Gemm(false, false, n, hd, ctx_len, 1.0f, pr, ctx_len, v, hl, 0.0f, c, hl, heads, block, hd,
           hd);
  }
  d.Gemm(false, false, rows_tokens, h, hl, 1.0f, s.ctx.data(), hl, p.weight[kOutWeight].data(), h,
         0.0f, partial, h);
  if (s.mode == Recompute::kSelective) s.probs = DeviceArray();  // the backward recomputes them
}

void TransformerBackend::FinishAttention(int layer, const SliceRef& slice, const float* summed) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  const int64_t values = slice.Values(hidden_);
  // y = (summed + bias) + x
  s.y = Uninitialized(values);
  device_->Copy2D(s.y.data(), values, summed, values, values, 1);
  device_->AddRowBias(slice.TokenRows(), hidden_, p.weight[kOutBias].data(), s.y.data());
  device_->AddInPlace(values, s.x.data(), s.y.data());
}

void TransformerBackend::MlpForward(int layer, const SliceRef& slice, float* partial) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  Device& d = *device_;
  const int rows_tokens = slice.rows * slice.Tokens();
  const int h = hidden_;
  const int fl = local_ffn_;
  TERASIM_CHECK(!s.y.empty(), "layer {} mlp before its attention finished", layer);
  if (!s.sequence_parallel) {  // else s.b is the gathered ln2 output
    s.b = Zeros(static_cast<int64_t>(rows_tokens) * h);
    NormIn(layer, true, rows_tokens, s, s.b.data());
  }
  s.u = Zeros(static_cast<int64_t>(rows_tokens) * fl);
  d.FillRows(rows_tokens, fl, p.weight[kFc1Bias].data(), s.u.data());
  d.Gemm(false, false, rows_tokens, fl, h, 1.0f, s.b.data(), h, p.weight[kFc1Weight].data(), fl,
         1.0f, s.u.data(), fl);
  s.g = Zeros(s.u.size());
  d.GeluForward(s.u.size(), s.u.data(), s.g.data());
  d.Gemm(false, false, rows_tokens, h, fl, 1.0f, s.g.data(), fl, p.weight[kFc2Weight].data(), h,
         0.0f, partial, h);
}

void TransformerBackend::FinishMlp(int layer, const SliceRef& slice, const float* summed,
                                   float* out) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  const int64_t values = slice.Values(hidden_);
  // out = (summed + y) + bias
  if (out != summed) device_->Copy2D(out, values, summed, values, values, 1);
  device_->AddInPlace(values, s.y.data(), out);
  device_->AddRowBias(slice.TokenRows(), hidden_, p.weight[kFc2Bias].data(), out);
  if (s.mode == Recompute::kFull) {
    // The layer's output is produced: keep only its input (RecomputeForward rebuilds the
    // rest). The frees are queued after the kernels above that read these arrays.
    DeviceArray x = std::move(s.x);
    const bool sequence_parallel = s.sequence_parallel;
    s = SliceState();
    s.x = std::move(x);
    s.mode = Recompute::kFull;
    s.sequence_parallel = sequence_parallel;  // x is this rank's shard
  }
}

void TransformerBackend::KeepActivations(int layer, const SliceRef& slice, Recompute mode) {
  State(layer, slice).mode = mode;
}

void TransformerBackend::RecomputeForward(int layer, const SliceRef& slice) {
  device_->Enter();
  SliceState& s = State(layer, slice);
  TERASIM_CHECK(s.mode == Recompute::kFull && !s.x.empty(),
                "layer {} micro-batch {} tokens {}-{}: RECOMPUTE of a slice whose forward did "
                "not keep its input for recomputation (recompute=full)",
                layer, slice.microbatch, slice.t0, slice.t1);
  TERASIM_CHECK(s.g.empty(), "layer {} micro-batch {} tokens {}-{}: RECOMPUTE twice", layer,
                slice.microbatch, slice.t0, slice.t1);
  // The forward's kernels in the forward's order (Forward(kWhole)), minus the key/value
  // writes and the layer output, which its backward does not read.
  DeviceArray partial = Zeros(slice.Values(hidden_));
  AttentionForward(layer, slice, partial.data(), /*write_kv=*/false);
  FinishAttention(layer, slice, partial.data());
  MlpForward(layer, slice, partial.data());
  device_->Synchronize();
}

TransformerBackend::SliceState& TransformerBackend::Kept(int layer, LayerPart part,
                                                         const SliceRef& slice) {
  SliceState& s = State(layer, slice);
  TERASIM_CHECK(s.mode == Recompute::kFull && !s.x.empty(),
                "layer {} micro-batch {} tokens {}-{}: RECOMPUTE of a slice whose forward did "
                "not keep its input for recomputation (recompute=full)",
                layer, slice.microbatch, slice.t0, slice.t1);
  const bool mlp = part == LayerPart::kMlp;
  // The attention block starts from the kept input alone; the mlp block needs the recomputed
  // residual and not yet its own activations.
  TERASIM_CHECK(mlp ? (!s.y.empty() && s.g.empty()) : s.y.empty(),
                "layer {} micro-batch {} tokens {}-{}: RECOMPUTE of the {} block out of order "
                "or twice",
                layer, slice.microbatch, slice.t0, slice.t1, LayerPartName(part));
  return s;
}

void TransformerBackend::RecomputeBlock(int layer, LayerPart part, const SliceRef& slice,
                                        std::span<const float> input, std::span<float> partial) {
  device_->Enter();
  TERASIM_CHECK(part != LayerPart::kWhole, "RecomputeBlock of a whole layer");
  SliceState& s = Kept(layer, part, slice);
  DeviceArray out = Zeros(slice.Values(hidden_));
  if (part == LayerPart::kAttention) {
    if (s.sequence_parallel) s.a = device_->FromHost(input);
    AttentionForward(layer, slice, out.data(), /*write_kv=*/false);
  } else {
    if (s.sequence_parallel) s.b = device_->FromHost(input);
    MlpForward(layer, slice, out.data());
  }
  Download(out, partial);
}

void TransformerBackend::FinishRecompute(int layer, LayerPart part, const SliceRef& slice,
                                         std::span<const float> summed) {
  device_->Enter();
  SliceState& s = State(layer, slice);
  if (part == LayerPart::kMlp) {
    TERASIM_CHECK(!s.g.empty(), "layer {} mlp recomputation finished before it ran", layer);
    return;  // the layer output: its backward does not read it
  }
  TERASIM_CHECK(s.mode == Recompute::kFull && !s.ctx.empty() && s.y.empty(),
                "layer {} attention recomputation finished out of order", layer);
  DeviceArray in = device_->FromHost(summed);
  FinishAttention(layer, slice, in.data());
  device_->Synchronize();  // `summed` is the caller's
}

void TransformerBackend::RecomputeShard(int layer, LayerPart part, const SliceRef& shard,
                                        std::span<float> output) {
  device_->Enter();
  TERASIM_CHECK(part != LayerPart::kWhole, "sequence parallelism of a whole layer");
  SliceState& s = Kept(layer, part, shard);
  TERASIM_CHECK(s.sequence_parallel,
                "layer {}: a sequence-parallel RECOMPUTE of a forward "
                "that was not sequence parallel",
                layer);
  DeviceArray out = Uninitialized(shard.Values(hidden_));
  NormIn(layer, part == LayerPart::kMlp, shard.TokenRows(), s, out.data());
  Download(out, output);
}

void TransformerBackend::NormIn(int layer, bool mlp, int rows, SliceState& s, float* out) {
  ParamSet& p = Layer(layer);
  DeviceArray& mean = mlp ? s.mean2 : s.mean1;
  DeviceArray& rstd = mlp ? s.rstd2 : s.rstd1;
  mean = Zeros(rows);
  rstd = Zeros(rows);
  device_->LayerNormForward(
      rows, hidden_, (mlp ? s.y : s.x).data(), p.weight[mlp ? kLn2Gain : kLn1Gain].data(),
      p.weight[mlp ? kLn2Bias : kLn1Bias].data(), out, mean.data(), rstd.data());
}

void TransformerBackend::SequenceShard(int layer, LayerPart part, bool backward,
                                       const SliceRef& shard, std::span<const float> input,
                                       std::span<float> output) {
  device_->Enter();
  TERASIM_CHECK(part != LayerPart::kWhole, "sequence parallelism of a whole layer");
  SliceState& s = State(layer, shard);
  const bool mlp = part == LayerPart::kMlp;
  const int rows = shard.TokenRows();
  const int64_t values = shard.Values(hidden_);
  DeviceArray out = Uninitialized(values);
  if (!backward) {
    if (!mlp) {
      s.sequence_parallel = true;
      s.x = device_->FromHost(input);
    }
    TERASIM_CHECK(s.sequence_parallel && !(mlp ? s.y : s.x).empty(),
                  "layer {} {} forward shard out of order", layer, LayerPartName(part));
    NormIn(layer, mlp, rows, s, out.data());
  } else {
    if (mlp) s.dz = device_->FromHost(input);
    const DeviceArray& grad = mlp ? s.dz : s.dy;
    TERASIM_CHECK(s.sequence_parallel && !grad.empty(), "layer {} {} backward shard out of order",
                  layer, LayerPartName(part));
    device_->AddColumnSums(rows, hidden_, grad.data(),
                           Layer(layer).grad[mlp ? kFc2Bias : kOutBias].data());
    device_->Copy2D(out.data(), values, grad.data(), values, values, 1);
  }
  Download(out, output);
}

void TransformerBackend::Forward(int layer, LayerPart part, const SliceRef& slice,
                                 std::span<const float> input, std::span<float> output) {
  RunPart(layer, part, false, slice, input, output);
}

void TransformerBackend::Backward(int layer, LayerPart part, const SliceRef& slice,
                                  std::span<const float> grad_output, std::span<float> grad_input) {
  RunPart(layer, part, true, slice, grad_output, grad_input);
}

void TransformerBackend::RunPart(int layer, LayerPart part, bool backward, const SliceRef& slice,
                                 std::span<const float> in, std::span<float> out) {
  device_->Enter();
  SliceState& s = State(layer, slice);
  const bool attn = part != LayerPart::kMlp;
  const bool mlp = part != LayerPart::kAttention;
  const bool whole = part == LayerPart::kWhole;
  DeviceArray partial = Zeros(slice.Values(hidden_));
  // The block's input: with sequence parallelism the gathered tensor of every token row (the
  // LayerNorm output, or the output gradient); else the layer input (forward) or output
  // gradient (backward) for the pass's first block.
  DeviceArray gathered;
  if (s.sequence_parallel) {
    gathered = device_->FromHost(in);
  } else if (backward ? mlp : attn) {
    (backward ? s.dz : s.x) = device_->FromHost(in);
  }
  if (!backward) {
    if (attn) {
      if (s.sequence_parallel) s.a = std::move(gathered);
      AttentionForward(layer, slice, partial.data());
    }
    if (whole) FinishAttention(layer, slice, partial.data());
    if (mlp) {
      if (s.sequence_parallel) s.b = std::move(gathered);
      MlpForward(layer, slice, partial.data());
    }
    if (whole) FinishMlp(layer, slice, partial.data(), partial.data());
    Download(partial, out);
    return;
  }
  const float* given = s.sequence_parallel ? gathered.data() : nullptr;
  if (mlp) MlpBackward(layer, slice, given ? given : s.dz.data(), partial.data());
  if (whole) FinishMlpBackward(layer, slice, partial.data());
  if (attn) AttentionBackward(layer, slice, given ? given : s.dy.data(), partial.data());
  if (whole) return FinishLayerBackward(layer, slice, partial.data(), out);
  Download(partial, out);
}

void TransformerBackend::FinishLayerBackward(int layer, const SliceRef& slice, const float* summed,
                                             std::span<float> grad_input) {
  DeviceArray gin = Zeros(slice.Values(hidden_));
  FinishAttentionBackward(layer, slice, summed, gin.data());
  Download(gin, grad_input);
  slices_.erase(SliceKey(slice.microbatch, layer, slice.t0));  // this slice is done here
}

void TransformerBackend::FinishForward(int layer, LayerPart part, const SliceRef& slice,
                                       std::span<const float> summed, std::span<float> output) {
  Finish(layer, part, false, slice, summed, output);
}

void TransformerBackend::FinishBackward(int layer, LayerPart part, const SliceRef& slice,
                                        std::span<const float> summed,
                                        std::span<float> grad_input) {
  Finish(layer, part, true, slice, summed, grad_input);
}

void TransformerBackend::Finish(int layer, LayerPart part, bool backward, const SliceRef& slice,
                                std::span<const float> summed, std::span<float> out) {
  device_->Enter();
  TERASIM_CHECK(part != LayerPart::kWhole, "Finish of a whole layer");
  DeviceArray in = device_->FromHost(summed);
  if (part == (backward ? LayerPart::kMlp : LayerPart::kAttention)) {
    // The pass's first block: its result stays inside.
    if (backward) {
      FinishMlpBackward(layer, slice, in.data());
    } else {
      FinishAttention(layer, slice, in.data());
    }
    device_->Synchronize();  // `summed` is the caller's
    return;
  }
  if (backward) return FinishLayerBackward(layer, slice, in.data(), out);
  FinishMlp(layer, slice, in.data(), in.data());
  Download(in, out);
}

void TransformerBackend::MlpBackward(int layer, const SliceRef& slice, const float* dz,
                                     float* partial) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  Device& d = *device_;
  TERASIM_CHECK(!s.g.empty(), "layer {} mlp backward before its forward{}", layer,
                s.mode == Recompute::kFull ? " (recompute=full: before its RECOMPUTE)" : "");
  const int rows_tokens = slice.rows * slice.Tokens();
  const int h = hidden_;
  const int fl = local_ffn_;
  // With sequence parallelism the bias gradient comes from this rank's rows (SequenceShard).
  if (!s.sequence_parallel) d.AddColumnSums(rows_tokens, h, dz, p.grad[kFc2Bias].data());
  DeviceArray dg = Zeros(static_cast<int64_t>(rows_tokens) * fl);
  d.Gemm(false, true, rows_tokens, fl, h, 1.0f, dz, h, p.weight[kFc2Weight].data(), h, 0.0f,
         dg.data(), fl);
  d.Gemm(true, false, fl, h, rows_tokens, 1.0f, s.g.data(), fl, dz, h, 1.0f,
         p.grad[kFc2Weight].data(), h);
  d.GeluBackward(dg.size(), s.u.data(), dg.data(), dg.data());  // du
  d.Gemm(true, false, h, fl, rows_tokens, 1.0f, s.b.data(), h, dg.data(), fl, 1.0f,
         p.grad[kFc1Weight].data(), fl);
  d.AddColumnSums(rows_tokens, fl, dg.data(), p.grad[kFc1Bias].data());
  d.Gemm(false, true, rows_tokens, h, fl, 1.0f, dg.data(), fl, p.weight[kFc1Weight].data(), fl,
         0.0f, partial, h);
}

void TransformerBackend::FinishMlpBackward(int layer, const SliceRef& slice, const float* summed) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  const int rows_tokens = slice.TokenRows();
  s.dy = Zeros(slice.Values(hidden_));
  device_->LayerNormBackward(rows_tokens, hidden_, s.y.data(), s.mean2.data(), s.rstd2.data(),
                             p.weight[kLn2Gain].data(), summed, s.dy.data(),
                             p.grad[kLn2Gain].data(), p.grad[kLn2Bias].data());
  device_->AddInPlace(s.dy.size(), s.dz.data(), s.dy.data());
}

void TransformerBackend::AttentionBackward(int layer, const SliceRef& slice, const float* dy,
                                           float* partial) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  KvBuffer& kv = Kv(layer, slice);
  Device& d = *device_;
  TERASIM_CHECK(!s.dy.empty(), "layer {} attention backward before the mlp's finished", layer);
  const int n = slice.Tokens();
  const int rows_tokens = slice.rows * n;
  const int h = hidden_;
  const int hl = local_hidden_;
  const int hd = head_dim_;
  const int heads = local_heads_;
  const int ctx_len = slice.t1;
  const int seq = card_.sequence;
  if (s.probs.empty()) {
    // Selective recomputation: the forward's scores and softmax again, from the kept queries
    // and the buffer's keys (as the forward left them), with the forward's kernels.
    TERASIM_CHECK(s.mode == Recompute::kSelective, "layer {} attention probabilities missing",
                  layer);
    AttentionProbs(slice, s, kv);
  }
  if (!s.sequence_parallel) d.AddColumnSums(rows_tokens, h, dy, p.grad[kOutBias].data());
  DeviceArray dctx = Zeros(static_cast<int64_t>(rows_tokens) * hl);
  d.Gemm(false, true, rows_tokens, hl, h, 1.0f, dy, h, p.weight[kOutWeight].data(), h, 0.0f,
         dctx.data(), hl);
  d.Gemm(true, false, hl, h, rows_tokens, 1.0f, s.ctx.data(), hl, dy, h, 1.0f,
         p.grad[kOutWeight].data(), h);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t block = static_cast<int64_t>(n) * ctx_len;
  DeviceArray dqkv = Zeros(static_cast<int64_t>(rows_tokens) * 3 * hl);
  DeviceArray dp = Zeros(static_cast<int64_t>(slice.rows) * heads * block);
  for (int r = 0; r < slice.rows; ++r) {
    const int64_t kv_off = static_cast<int64_t>(r) * seq * hl;
    const float* pr = s.probs.data() + static_cast<int64_t>(r) * heads * block;
    const float* dc = dctx.data() + static_cast<int64_t>(r) * n * hl;
    float* dpr = dp.data() + static_cast<int64_t>(r) * heads * block;
    // Per head: dprobs = dctx v^T; dv += probs^T dctx.
    d.Gemm(false, true, n, ctx_len, hd, 1.0f, dc, hl, kv.v.data() + kv_off, hl, 0.0f, dpr, ctx_len,
           heads, hd, hd, block);
    d.Gemm(true, false, ctx_len, hd, n, 1.0f, pr, ctx_len, dc, hl, 1.0f, kv.dv.data() + kv_off, hl,
           heads, block, hd, hd);
  }
  d.SoftmaxBackward(slice.rows * heads * n, ctx_len, scale, s.probs.data(), dp.data());
  for (int r = 0; r < slice.rows; ++r) {
    const int64_t kv_off = static_cast<int64_t>(r) * seq * hl;
    const float* q = s.qkv.data() + static_cast<int64_t>(r) * n * 3 * hl;
    const float* dpr = dp.data() + static_cast<int64_t>(r) * heads * block;
    float* dq = dqkv.data() + static_cast<int64_t>(r) * n * 3 * hl;
    // Per head: dq = dscores k; dk += dscores^T q.
    d.Gemm(false, false, n, hd, ctx_len, 1.0f, dpr, ctx_len, kv.k.data() + kv_off, hl, 0.0f, dq,
           3 * hl, heads, block, hd, hd);
    d.Gemm(true, false, ctx_len, hd, n, 1.0f, dpr, ctx_len, q, 3 * hl, 1.0f, kv.dk.data() + kv_off,
           hl, heads, block, hd, hd);
  }
  // Later slices have already added their contributions: this slice's keys and values are
  // complete now.
  for (int r = 0; r < slice.rows; ++r) {
    float* dst = dqkv.data() + static_cast<int64_t>(r) * n * 3 * hl;
    const int64_t src = (static_cast<int64_t>(r) * seq + slice.t0) * hl;
    d.Copy2D(dst + hl, 3 * hl, kv.dk.data() + src, hl, hl, n);
    d.Copy2D(dst + 2 * hl, 3 * hl, kv.dv.data() + src, hl, hl, n);
  }
  d.Gemm(true, false, h, 3 * hl, rows_tokens, 1.0f, s.a.data(), h, dqkv.data(), 3 * hl, 1.0f,
         p.grad[kQkvWeight].data(), 3 * hl);
  d.AddColumnSums(rows_tokens, 3 * hl, dqkv.data(), p.grad[kQkvBias].data());
  d.Gemm(false, true, rows_tokens, h, 3 * hl, 1.0f, dqkv.data(), 3 * hl,
         p.weight[kQkvWeight].data(), 3 * hl, 0.0f, partial, h);
}

void TransformerBackend::FinishAttentionBackward(int layer, const SliceRef& slice,
                                                 const float* summed, float* grad_input) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  const int rows_tokens = slice.TokenRows();
  device_->LayerNormBackward(rows_tokens, hidden_, s.x.data(), s.mean1.data(), s.rstd1.data(),
                             p.weight[kLn1Gain].data(), summed, grad_input, p.grad[kLn1Gain].data(),
                             p.grad[kLn1Bias].data());
  device_->AddInPlace(slice.Values(hidden_), s.dy.data(), grad_input);
}

double TransformerBackend::Loss(const SliceRef& slice, std::span<const float> output,
                                std::span<float> grad_output, int64_t global_tokens) {
  device_->Enter();
  const int rows_tokens = slice.TokenRows();
  const int h = hidden_;
  const float inv_tokens = 1.0f / static_cast<float>(global_tokens);
  double loss = 0;
  if (!head_) {
    // Sum of every output feature of every token, over the global token count (host).
    for (int64_t i = 0; i < static_cast<int64_t>(rows_tokens) * h; ++i) {
      loss += output[i];
      grad_output[i] = inv_tokens;
    }
    loss /= static_cast<double>(global_tokens);
    loss_sum_ += loss;
    return loss;
  }
  ParamSet& hp = *head_;
  TERASIM_CHECK(!hp.released, "the head's parameters are released (ZeRO-3)");
  Device& d = *device_;
  const int vocab = card_.vocab;
  std::vector<int> targets;
  std::vector<int> positions;
  TokenIds(slice, 1, targets, positions);  // the next token of each position
  DeviceArray x = d.FromHost(output);
  DeviceArray mean = Zeros(rows_tokens);
  DeviceArray rstd = Zeros(rows_tokens);
  DeviceArray hf = Zeros(static_cast<int64_t>(rows_tokens) * h);
  d.LayerNormForward(rows_tokens, h, x.data(), hp.weight[kLnfGain].data(),
                     hp.weight[kLnfBias].data(), hf.data(), mean.data(), rstd.data());
  DeviceArray logits = Zeros(static_cast<int64_t>(rows_tokens) * vocab);
  d.Gemm(false, true, rows_tokens, vocab, h, 1.0f, hf.data(), h, hp.weight[kLmWeight].data(), h,
         0.0f, logits.data(), vocab);
  const std::vector<double> row_loss =
      d.CrossEntropy(rows_tokens, vocab, targets, inv_tokens, logits.data());
  for (double l : row_loss) loss += l;  // rows in order
  loss /= static_cast<double>(global_tokens);
  d.Gemm(true, false, vocab, h, rows_tokens, 1.0f, logits.data(), vocab, hf.data(), h, 1.0f,
         hp.grad[kLmWeight].data(), h);
  DeviceArray dhf = Zeros(static_cast<int64_t>(rows_tokens) * h);
  d.Gemm(false, false, rows_tokens, h, vocab, 1.0f, logits.data(), vocab,
         hp.weight[kLmWeight].data(), h, 0.0f, dhf.data(), h);
  DeviceArray grad = Zeros(x.size());
  d.LayerNormBackward(rows_tokens, h, x.data(), mean.data(), rstd.data(),
                      hp.weight[kLnfGain].data(), dhf.data(), grad.data(), hp.grad[kLnfGain].data(),
                      hp.grad[kLnfBias].data());
  Download(grad, grad_output);
  loss_sum_ += loss;
  return loss;
}

std::vector<const TransformerBackend::ParamSet*> TransformerBackend::SetsIn(Range layers) const {
  std::vector<const ParamSet*> sets;
  if (embed_ && layers.begin <= 0 && layers.end > 0) sets.push_back(&*embed_);
  for (const auto& [layer, ps] : layers_) {
    if (layer >= layers.begin && layer < layers.end) sets.push_back(&ps);
  }
  if (head_ && layers.begin < card_.layers && layers.end >= card_.layers) sets.push_back(&*head_);
  return sets;
}

std::vector<TransformerBackend::ParamSet*> TransformerBackend::SetsIn(Range layers) {
  std::vector<ParamSet*> sets;
  for (const ParamSet* ps : std::as_const(*this).SetsIn(layers)) {
    sets.push_back(const_cast<ParamSet*>(ps));
  }
  return sets;
}

template <typename Fn>
void TransformerBackend::ForEachTensor(Range layers, ParamSubset subset, Fn&& fn) const {
  int64_t at = 0;
  for (const ParamSet* ps : SetsIn(layers)) {
    for (size_t i = 0; i < ps->specs.size(); ++i) {
      if (subset == ParamSubset::kReplicated && ps->specs[i].shard != ShardKind::kReplicated) {
        continue;
      }
      const int64_t n = ps->sizes[i];
      // The caller's constness decides what it changes (Unflatten, OptimizerStep are not const).
      fn(*const_cast<ParamSet*>(ps), i, at, n);
      at += n;
    }
  }
}

std::vector<float> TransformerBackend::Flatten(Range layers, Arrays arrays,
                                               ParamSubset subset) const {
  device_->Enter();
  std::vector<float> out;
  ForEachTensor(layers, subset, [&](ParamSet& ps, size_t i, int64_t at, int64_t n) {
    out.resize(static_cast<size_t>(at + n), 0.0f);
    int64_t local = 0;  // the tensor's first element in the set's flattened order
    for (size_t j = 0; j < i; ++j) local += ps.sizes[j];
    DownloadTensor(ps, arrays, i, local, std::span<float>(out).subspan(at, n));
  });
  return out;
}

void TransformerBackend::DownloadTensor(const ParamSet& ps, Arrays arrays, size_t i, int64_t local,
                                        std::span<float> out) const {
  const bool grad = arrays == &ParamSet::grad;
  if (!(grad ? ps.grad_released : ps.released)) {
    device_->Download((ps.*arrays)[i].data(), out);
    return;
  }
  const ElementRange& kept = grad ? ps.grad_kept : ps.kept;
  const DeviceArray& values = grad ? ps.grad_kept_values : ps.kept_values;
  std::fill(out.begin(), out.end(), 0.0f);
  const int64_t n = ps.sizes[i];
  const int64_t lo = std::max(kept.begin, local);
  const int64_t hi = std::min(kept.end, local + n);
  if (lo >= hi) return;
  device_->Download(values.data() + (lo - kept.begin), out.subspan(lo - local, hi - lo));
}

DeviceArray TransformerBackend::CopyKept(const ParamSet& ps, Arrays arrays, ElementRange& keep) {
  const int64_t size = ps.Size();
  keep = {std::clamp<int64_t>(keep.begin, 0, size), std::clamp<int64_t>(keep.end, 0, size)};
  DeviceArray kept = Uninitialized(keep.end - keep.begin);
  int64_t local = 0;
  for (size_t i = 0; i < ps.sizes.size(); ++i) {
    const int64_t n = ps.sizes[i];
    const int64_t lo = std::max(keep.begin, local);
    const int64_t hi = std::min(keep.end, local + n);
    if (lo < hi) {
      device_->Copy2D(kept.data() + (lo - keep.begin), hi - lo,
                      (ps.*arrays)[i].data() + (lo - local), hi - lo, hi - lo, 1);
    }
    local += n;
  }
  return kept;
}

int64_t TransformerBackend::ParamSet::Size() const {
  int64_t size = 0;
  for (int64_t n : sizes) size += n;
  return size;
}

void TransformerBackend::Unflatten(Range layers, Arrays arrays, ParamSubset subset,
                                   std::span<const float> values) {
  device_->Enter();
  int64_t total = 0;
  ForEachTensor(layers, subset, [&](ParamSet& ps, size_t i, int64_t at, int64_t n) {
    TERASIM_CHECK(at + n <= static_cast<int64_t>(values.size()), "buffer too small: {}",
                  values.size());
    total = at + n;
    if (arrays == &ParamSet::grad && ps.grad_released) {
      // Only the kept elements are held (the rest are zero by ReleaseGradients' contract).
      int64_t local = 0;
      for (size_t j = 0; j < i; ++j) local += ps.sizes[j];
      const int64_t lo = std::max(ps.grad_kept.begin, local);
      const int64_t hi = std::min(ps.grad_kept.end, local + n);
      if (lo < hi) {
        device_->Upload(values.subspan(at + lo - local, hi - lo),
                        ps.grad_kept_values.data() + (lo - ps.grad_kept.begin));
      }
      return;
    }
    device_->Upload(values.subspan(at, n), (ps.*arrays)[i].data());
  });
  TERASIM_CHECK(total == static_cast<int64_t>(values.size()), "buffer size {} != {}", values.size(),
                total);
  device_->Synchronize();  // `values` is the caller's
}

std::vector<float> TransformerBackend::Gradients(Range layers, ParamSubset subset) const {
  return Flatten(layers, &ParamSet::grad, subset);
}

void TransformerBackend::SetGradients(Range layers, std::span<const float> values,
                                      ParamSubset subset) {
  Unflatten(layers, &ParamSet::grad, subset, values);
}

std::vector<float> TransformerBackend::Parameters(Range layers) const {
  device_->Enter();
  std::vector<float> out;
  ForEachTensor(layers, ParamSubset::kAll, [&](ParamSet& ps, size_t i, int64_t at, int64_t n) {
    out.resize(static_cast<size_t>(at + n), 0.0f);
    int64_t local = 0;  // the tensor's first element in the set's flattened order
    for (size_t j = 0; j < i; ++j) local += ps.sizes[j];
    // Released: only the kept elements of this tensor.
    DownloadTensor(ps, &ParamSet::weight, i, local, std::span<float>(out).subspan(at, n));
  });
  return out;
}

void TransformerBackend::SetParameters(Range layers, std::span<const float> values) {
  device_->Enter();
  for (ParamSet* ps : SetsIn(layers)) {
    if (!ps->released) continue;
    for (size_t i = 0; i < ps->weight.size(); ++i) ps->weight[i] = Uninitialized(ps->sizes[i]);
    ps->released = false;
    ps->kept_values = DeviceArray();
  }
  Unflatten(layers, &ParamSet::weight, ParamSubset::kAll, values);
}

template <typename Fn>
void TransformerBackend::ForEachSet(Range layers, Fn&& fn) {
  int64_t start = 0;  // the set's first element in the flattened order
  for (ParamSet* ps : SetsIn(layers)) {
    const int64_t size = ps->Size();
    fn(*ps, start, size);
    start += size;
  }
}

void TransformerBackend::ReleaseParameters(Range layers, ElementRange keep) {
  Release(layers, keep, &ParamSet::weight);
}

void TransformerBackend::ReleaseGradients(Range layers, ElementRange keep) {
  Release(layers, keep, &ParamSet::grad);
}

void TransformerBackend::Release(Range layers, ElementRange keep, Arrays arrays) {
  device_->Enter();
  const bool grad = arrays == &ParamSet::grad;
  ForEachSet(layers, [&](ParamSet& ps, int64_t start, int64_t) {
    bool& released = grad ? ps.grad_released : ps.released;
    if (released) return;
    ElementRange& kept = grad ? ps.grad_kept : ps.kept;
    kept = {keep.begin - start, keep.end == INT64_MAX ? INT64_MAX : keep.end - start};
    (grad ? ps.grad_kept_values : ps.kept_values) = CopyKept(ps, arrays, kept);
    for (auto& a : ps.*arrays) a = DeviceArray();  // the frees are queued after the copies
    released = true;
  });
  device_->Synchronize();
}

StateBytes TransformerBackend::ResidentState() const {
  StateBytes bytes;
  constexpr int64_t kFloat = sizeof(float);
  for (const ParamSet* ps : SetsIn(Range{0, card_.layers})) {
    for (const auto& w : ps->weight) bytes.parameters += kFloat * w.size();
    for (const auto& g : ps->grad) bytes.gradients += kFloat * g.size();
    bytes.parameters += kFloat * ps->kept_values.size();
    bytes.gradients += kFloat * ps->grad_kept_values.size();
    bytes.moments += kFloat * (ps->adam_m.size() + ps->adam_v.size());
  }
  return bytes;
}

void TransformerBackend::SnapshotGradients(Range layers, ElementRange valid) {
  device_->Enter();
  ForEachSet(layers, [&](ParamSet& ps, int64_t start, int64_t) {
    if (ps.snapped) return;
    ps.snapshot.clear();
    int64_t local = 0;
    for (size_t i = 0; i < ps.sizes.size(); ++i) {
      std::vector<float> host(static_cast<size_t>(ps.sizes[i]));
      DownloadTensor(ps, &ParamSet::grad, i, local, host);
      local += ps.sizes[i];
      ps.snapshot.push_back(std::move(host));
    }
    ps.snapshot_valid = {valid.begin - start, valid.end - start};
    ps.snapped = true;
  });
}

void TransformerBackend::GatherSnapshot(FullTensors& full) const {
  for (const ParamSet* ps : SetsIn(Range{0, card_.layers})) {
    if (!ps->snapped) continue;
    int64_t start = 0;  // the tensor's first element in the set's flattened order
    for (size_t i = 0; i < ps->specs.size(); ++i) {
      const ParamSpec& spec = ps->specs[i];
      const std::string name = ParamName(ps->set, spec);
      const size_t total = static_cast<size_t>(spec.rows) * spec.cols;
      auto& values = full.values[name];
      auto& covered = full.covered[name];
      values.resize(total, 0.0f);
      covered.resize(total, 0);
      const int rows = ShardRows(spec, shard_.tp);
      const int cols = ShardCols(spec, shard_.tp);
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
          const int64_t local = static_cast<int64_t>(r) * cols + c;
          if (!ps->snapshot_valid.Contains(start + local)) continue;
          int fr = 0;
          int fc = 0;
          FullIndex(spec, shard_.tp_rank, shard_.tp, r, c, fr, fc);
          const size_t at = static_cast<size_t>(fr) * spec.cols + fc;
          if (covered[at]) continue;
          values[at] = ps->snapshot[i][static_cast<size_t>(local)];
          covered[at] = 1;
        }
      }
      start += static_cast<int64_t>(rows) * cols;
    }
  }
}

void TransformerBackend::OptimizerStep(Range layers, const AdamOptions& adam, ElementRange shard) {
  device_->Enter();
  int64_t at = 0;  // the tensor's first element in the flattened order
  for (ParamSet* ps : SetsIn(layers)) {
    const int64_t set_start = at;
    ps->adam_step += 1;
    const double bc1 = 1.0 - std::pow(static_cast<double>(adam.beta1), ps->adam_step);
    const double bc2 = 1.0 - std::pow(static_cast<double>(adam.beta2), ps->adam_step);
    const float step = static_cast<float>(adam.lr * std::sqrt(bc2) / bc1);
    // The set's elements this step covers; its moments are those of the first step's (the
    // shard of a ZeRO device: 2 x 4 bytes x params / D).
    const int64_t size = ps->Size();
    const ElementRange mine{std::clamp<int64_t>(shard.begin - set_start, 0, size),
                            std::clamp<int64_t>(shard.end - set_start, 0, size)};
    if (ps->adam_m.empty() && ps->moments.begin == ps->moments.end) {
      ps->moments = mine;
      ps->adam_m = Zeros(mine.end - mine.begin);
      ps->adam_v = Zeros(mine.end - mine.begin);
    }
    TERASIM_CHECK(
        mine.begin >= mine.end || (mine.begin >= ps->moments.begin && mine.end <= ps->moments.end),
        "optimizer step of elements {}-{} of a set whose moments hold {}-{}", mine.begin, mine.end,
        ps->moments.begin, ps->moments.end);
    for (size_t i = 0; i < ps->sizes.size(); ++i) {
      const int64_t n = ps->sizes[i];
      const int64_t lo = std::max<int64_t>(shard.begin - at, 0);
      const int64_t hi = std::min<int64_t>(shard.end - at, n);
      if (lo < hi) {
        const int64_t local = at - set_start + lo;  // in the set's flattened order
        float* w = ps->weight[i].data() + lo;
        if (ps->released) {  // only the kept elements are there
          TERASIM_CHECK(local >= ps->kept.begin && local + (hi - lo) <= ps->kept.end,
                        "optimizer step of released parameters outside the kept shard");
          w = ps->kept_values.data() + (local - ps->kept.begin);
        }
        const float* g = ps->grad[i].data() + lo;
        if (ps->grad_released) {
          TERASIM_CHECK(local >= ps->grad_kept.begin && local + (hi - lo) <= ps->grad_kept.end,
                        "optimizer step of released gradients outside the kept shard");
          g = ps->grad_kept_values.data() + (local - ps->grad_kept.begin);
        }
        const int64_t m = local - ps->moments.begin;
        device_->AdamStep(hi - lo, adam.beta1, adam.beta2, adam.eps, step, g, ps->adam_m.data() + m,
                          ps->adam_v.data() + m, w);
      }
      at += n;
    }
  }
  device_->Synchronize();
}

double TransformerBackend::LayerFlops(LayerPart part, const SliceRef& slice, bool backward) const {
  const double tokens = static_cast<double>(slice.rows) * slice.Tokens();
  const double h = hidden_;
  const double hl = local_hidden_;
  // QKV and out-proj GEMMs plus scores and context over the slice's l x (c + l) block.
  const double attn = 2.0 * tokens * h * 4.0 * hl + 4.0 * tokens * slice.t1 * hl;
  const double mlp = 4.0 * tokens * h * local_ffn_;
  double forward = part == LayerPart::kAttention ? attn
                   : part == LayerPart::kMlp     ? mlp
                                                 : attn + mlp;
  return backward ? 2.0 * forward : forward;
}

const TransformerBackend::ParamSet* TransformerBackend::FindSet(const std::string& name,
                                                                size_t& index) const {
  for (const ParamSet* ps : SetsIn(Range{0, card_.layers})) {
    for (size_t i = 0; i < ps->specs.size(); ++i) {
      if (ParamName(ps->set, ps->specs[i]) == name) {
        index = i;
        return ps;
      }
    }
  }
  return nullptr;
}

int64_t TransformerBackend::ShardIndex(const ParamSpec& spec, int full_row, int full_col) const {
  const int rows = ShardRows(spec, shard_.tp);
  const int cols = ShardCols(spec, shard_.tp);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      int fr = 0;
      int fc = 0;
      FullIndex(spec, shard_.tp_rank, shard_.tp, r, c, fr, fc);
      if (fr == full_row && fc == full_col) return static_cast<int64_t>(r) * cols + c;
    }
  }
  return -1;
}

std::optional<float> TransformerBackend::ParameterValue(const std::string& name, int full_row,
                                                        int full_col) const {
  size_t i = 0;
  const ParamSet* ps = FindSet(name, i);
  if (ps == nullptr) return std::nullopt;
  TERASIM_CHECK(!ps->released, "{}: released (ZeRO-3)", name);
  const int64_t at = ShardIndex(ps->specs[i], full_row, full_col);
  if (at < 0) return std::nullopt;
  device_->Enter();
  float value = 0;
  device_->Download(ps->weight[i].data() + at, std::span<float>(&value, 1));
  return value;
}

void TransformerBackend::AddToParameter(const std::string& name, int full_row, int full_col,
                                        float delta) {
  size_t i = 0;
  ParamSet* ps = const_cast<ParamSet*>(FindSet(name, i));
  if (ps == nullptr) return;
  TERASIM_CHECK(!ps->released, "{}: released (ZeRO-3)", name);
  const int64_t at = ShardIndex(ps->specs[i], full_row, full_col);
  if (at < 0) return;
  device_->Enter();
  float value = 0;
  float* w = ps->weight[i].data() + at;
  device_->Download(w, std::span<float>(&value, 1));
  value += delta;
  device_->Upload(std::span<const float>(&value, 1), w);
  device_->Synchronize();
}

}  // namespace terasim

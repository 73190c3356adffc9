// Host side of the CUDA back end (exec/cuda/cuda_backend.h). Plain C++: the device code is in
// exec/cuda/cuda_kernels.cu, so this file builds with the host compiler (and its sanitizers).
#include "exec/cuda/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "exec/synthetic_data.h"
#include "models/errors.h"

namespace terasim {

namespace {

// Makes the device current before any member that allocates on it is constructed.
CudaBackendOptions OnDevice(CudaBackendOptions options) {
  UseDevice(options.device);
  return options;
}

}  // namespace

gpu::GemmPrecision ParseGemmPrecision(const std::string& name, const std::string& context) {
  if (name == "fp32") return gpu::GemmPrecision::kFp32;
  if (name == "bf16") return gpu::GemmPrecision::kBf16;
  ThrowInput("{}: --precision: unknown '{}' (known: fp32, bf16)", context, name);
}

CudaBackend::CudaBackend(const ModelCard& card, ShardSpec shard, uint64_t seed,
                         CudaBackendOptions options)
    : card_(card),
      shard_(std::move(shard)),
      seed_(seed),
      options_(OnDevice(options)),
      hidden_(card.hidden),
      local_hidden_(card.hidden / std::max(1, shard_.tp)),
      local_heads_(card.heads / std::max(1, shard_.tp)),
      head_dim_(card.HeadDim()),
      local_ffn_(card.ffn / std::max(1, shard_.tp)),
      cublas_(stream_.get()) {
  ValidateTensorParallel(card_, shard_.tp, "exec");
  for (int layer : shard_.layers) {
    TERASIM_CHECK(layer >= 0 && layer < card_.layers, "layer {} out of range", layer);
    layers_.emplace(layer, MakeSet(layer, LayerParamSpecs(card_)));
  }
  const bool first = layers_.count(0) > 0;
  const bool last = layers_.count(card_.layers - 1) > 0;
  if (first && card_.embedding_in_stack) embed_ = MakeSet(kEmbedSet, EmbedParamSpecs(card_));
  if (last && card_.lm_head_in_stack) head_ = MakeSet(kHeadSet, HeadParamSpecs(card_));
  stream_.Synchronize();  // the initial weights are uploaded before their host copies die
}

CudaBackend::ParamSet CudaBackend::MakeSet(int set, std::vector<ParamSpec> specs) const {
  ParamSet ps;
  ps.set = set;
  ps.specs = std::move(specs);
  for (const ParamSpec& spec : ps.specs) {
    const std::vector<float> init = InitShard(spec, set, seed_, shard_.tp_rank, shard_.tp);
    ps.weight.push_back(Upload(init));
    const int64_t n = static_cast<int64_t>(init.size());
    ps.grad.push_back(Zeros(n));
    ps.adam_m.push_back(Zeros(n));
    ps.adam_v.push_back(Zeros(n));
    stream_.Synchronize();  // `init` dies at the end of this iteration
  }
  return ps;
}

CudaBackend::Buffer CudaBackend::Upload(std::span<const float> host) const {
  return Buffer::FromHost(host, stream_.get());
}

void CudaBackend::Download(const Buffer& device, std::span<float> host) const {
  TERASIM_CHECK(static_cast<int64_t>(host.size()) <= device.size(), "download of {} from {}",
                host.size(), device.size());
  device.CopyToHost(host);
}

void CudaBackend::Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                       int lda, const float* b, int ldb, float beta, float* c, int ldc, int batch,
                       int64_t stride_a, int64_t stride_b, int64_t stride_c) const {
  gpu::Gemm(cublas_.get(), options_.precision, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
            beta, c, ldc, batch, stride_a, stride_b, stride_c);
}

CudaBackend::ParamSet& CudaBackend::Layer(int layer) {
  auto it = layers_.find(layer);
  TERASIM_CHECK(it != layers_.end(), "layer {} is not held by this device", layer);
  return it->second;
}

CudaBackend::SliceState& CudaBackend::State(int layer, const SliceRef& slice) {
  return slices_[SliceKey(slice.microbatch, layer, slice.t0)];
}

CudaBackend::KvBuffer& CudaBackend::Kv(int layer, const SliceRef& slice) {
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

std::pair<DeviceBuffer<int>, DeviceBuffer<int>> CudaBackend::TokenIds(const SliceRef& slice) const {
  const int n = slice.Tokens();
  std::vector<int> tokens;
  std::vector<int> positions;
  for (int r = 0; r < slice.rows; ++r) {
    for (int i = 0; i < n; ++i) {
      tokens.push_back(SyntheticToken(seed_, slice.first_sequence + r, slice.t0 + i, card_.vocab));
      positions.push_back(slice.t0 + i);
    }
  }
  auto ids = std::make_pair(DeviceBuffer<int>::FromHost(tokens, stream_.get()),
                            DeviceBuffer<int>::FromHost(positions, stream_.get()));
  stream_.Synchronize();  // the host vectors die here
  return ids;
}

void CudaBackend::BeginIteration() {
  UseDevice(options_.device);
  kv_.clear();
  slices_.clear();
  loss_sum_ = 0;
  auto zero = [](ParamSet& ps) {
    for (auto& g : ps.grad) g.Zero();
  };
  for (auto& [layer, ps] : layers_) zero(ps);
  if (embed_) zero(*embed_);
  if (head_) zero(*head_);
}

void CudaBackend::Input(const SliceRef& slice, std::span<float> x) {
  UseDevice(options_.device);
  const int n = slice.Tokens();
  TERASIM_CHECK(static_cast<int64_t>(x.size()) == slice.Values(hidden_), "input size {}", x.size());
  if (!embed_) {
    // Synthetic activations are generated on the host, as in CpuBackend.
    for (int r = 0; r < slice.rows; ++r) {
      for (int i = 0; i < n; ++i) {
        float* xr = x.data() + (static_cast<int64_t>(r) * n + i) * hidden_;
        for (int c = 0; c < hidden_; ++c) {
          xr[c] = SyntheticInput(seed_, slice.first_sequence + r, slice.t0 + i, c);
        }
      }
    }
    return;
  }
  auto [tokens, positions] = TokenIds(slice);
  Buffer out = Uninitialized(slice.Values(hidden_));
  gpu::EmbedForward(stream_.get(), slice.rows * n, hidden_, tokens.data(), positions.data(),
                    embed_->weight[kTokenTable].data(), embed_->weight[kPositionTable].data(),
                    out.data());
  Download(out, x);
}

void CudaBackend::InputBackward(const SliceRef& slice, std::span<const float> grad_x) {
  if (!embed_) return;
  UseDevice(options_.device);
  auto [tokens, positions] = TokenIds(slice);
  Buffer g = Upload(grad_x);
  gpu::EmbedBackward(stream_.get(), slice.rows * slice.Tokens(), hidden_, tokens.data(),
                     positions.data(), g.data(), embed_->grad[kTokenTable].data(),
                     embed_->grad[kPositionTable].data());
  stream_.Synchronize();  // grad_x is the caller's
}

void CudaBackend::AttentionForward(int layer, const SliceRef& slice, float* partial) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  KvBuffer& kv = Kv(layer, slice);
  cudaStream_t st = stream_.get();
  const int n = slice.Tokens();
  const int rows_tokens = slice.rows * n;
  const int h = hidden_;
  const int hl = local_hidden_;
  const int hd = head_dim_;
  const int heads = local_heads_;
  const int ctx_len = slice.t1;  // keys [0, t1)
  const int seq = card_.sequence;
  s.mean1 = Uninitialized(rows_tokens);
  s.rstd1 = Uninitialized(rows_tokens);
  s.a = Uninitialized(static_cast<int64_t>(rows_tokens) * h);
  gpu::LayerNormForward(st, rows_tokens, h, s.x.data(), p.weight[kLn1Gain].data(),
                        p.weight[kLn1Bias].data(), s.a.data(), s.mean1.data(), s.rstd1.data());
  s.qkv = Uninitialized(static_cast<int64_t>(rows_tokens) * 3 * hl);
  gpu::FillRows(st, rows_tokens, 3 * hl, p.weight[kQkvBias].data(), s.qkv.data());
  Gemm(false, false, rows_tokens, 3 * hl, h, 1.0f, s.a.data(), h, p.weight[kQkvWeight].data(),
       3 * hl, 1.0f, s.qkv.data(), 3 * hl);
  // Append this slice's keys and values to the buffer: n rows of hl floats per sequence.
  for (int r = 0; r < slice.rows; ++r) {
    const float* src = s.qkv.data() + static_cast<int64_t>(r) * n * 3 * hl;
    const int64_t dst = (static_cast<int64_t>(r) * seq + slice.t0) * hl;
    const size_t width = static_cast<size_t>(hl) * sizeof(float);
    TERASIM_CUDA(cudaMemcpy2DAsync(kv.k.data() + dst, width, src + hl, 3 * width, width, n,
                                   cudaMemcpyDeviceToDevice, st));
    TERASIM_CUDA(cudaMemcpy2DAsync(kv.v.data() + dst, width, src + 2 * hl, 3 * width, width, n,
                                   cudaMemcpyDeviceToDevice, st));
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t block = static_cast<int64_t>(n) * ctx_len;  // one head's scores
  s.probs = Uninitialized(static_cast<int64_t>(slice.rows) * heads * block);
  s.ctx = Uninitialized(static_cast<int64_t>(rows_tokens) * hl);
  for (int r = 0; r < slice.rows; ++r) {
    const float* q = s.qkv.data() + static_cast<int64_t>(r) * n * 3 * hl;
    const float* k = kv.k.data() + static_cast<int64_t>(r) * seq * hl;
    float* pr = s.probs.data() + static_cast<int64_t>(r) * heads * block;
    // Per head: scores = scale * q k^T.
    Gemm(false, true, n, ctx_len, hd, scale, q, 3 * hl, k, hl, 0.0f, pr, ctx_len, heads, hd, hd,
         block);
  }
  gpu::CausalSoftmax(st, slice.rows * heads, n, ctx_len, slice.t0, s.probs.data());
  for (int r = 0; r < slice.rows; ++r) {
    const float* v = kv.v.data() + static_cast<int64_t>(r) * seq * hl;
    const float* pr = s.probs.data() + static_cast<int64_t>(r) * heads * block;
    float* c = s.ctx.data() + static_cast<int64_t>(r) * n * hl;
    // Per head: context = probs v.
    Gemm(false, false, n, hd, ctx_len, 1.0f, pr, ctx_len, v, hl, 0.0f, c, hl, heads, block, hd, hd);
  }
  Gemm(false, false, rows_tokens, h, hl, 1.0f, s.ctx.data(), hl, p.weight[kOutWeight].data(), h,
       0.0f, partial, h);
}

void CudaBackend::FinishAttention(int layer, const SliceRef& slice, const float* summed) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  const int64_t values = slice.Values(hidden_);
  s.y = Uninitialized(values);
  gpu::AddBiasResidual(stream_.get(), values, hidden_, summed, s.x.data(),
                       p.weight[kOutBias].data(), s.y.data());
}

void CudaBackend::MlpForward(int layer, const SliceRef& slice, float* partial) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  cudaStream_t st = stream_.get();
  const int rows_tokens = slice.rows * slice.Tokens();
  const int h = hidden_;
  const int fl = local_ffn_;
  TERASIM_CHECK(!s.y.empty(), "layer {} mlp before its attention finished", layer);
  s.mean2 = Uninitialized(rows_tokens);
  s.rstd2 = Uninitialized(rows_tokens);
  s.b = Uninitialized(static_cast<int64_t>(rows_tokens) * h);
  gpu::LayerNormForward(st, rows_tokens, h, s.y.data(), p.weight[kLn2Gain].data(),
                        p.weight[kLn2Bias].data(), s.b.data(), s.mean2.data(), s.rstd2.data());
  s.u = Uninitialized(static_cast<int64_t>(rows_tokens) * fl);
  gpu::FillRows(st, rows_tokens, fl, p.weight[kFc1Bias].data(), s.u.data());
  Gemm(false, false, rows_tokens, fl, h, 1.0f, s.b.data(), h, p.weight[kFc1Weight].data(), fl, 1.0f,
       s.u.data(), fl);
  s.g = Uninitialized(s.u.size());
  gpu::GeluForward(st, s.u.size(), s.u.data(), s.g.data());
  Gemm(false, false, rows_tokens, h, fl, 1.0f, s.g.data(), fl, p.weight[kFc2Weight].data(), h, 0.0f,
       partial, h);
}

void CudaBackend::FinishMlp(int layer, const SliceRef& slice, const float* summed, float* out) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  gpu::AddBiasResidual(stream_.get(), slice.Values(hidden_), hidden_, summed, s.y.data(),
                       p.weight[kFc2Bias].data(), out);
}

void CudaBackend::Forward(int layer, LayerPart part, const SliceRef& slice,
                          std::span<const float> input, std::span<float> output) {
  UseDevice(options_.device);
  const int64_t values = slice.Values(hidden_);
  Buffer partial = Uninitialized(values);
  switch (part) {
    case LayerPart::kAttention:
      State(layer, slice).x = Upload(input);
      AttentionForward(layer, slice, partial.data());
      break;
    case LayerPart::kMlp:
      MlpForward(layer, slice, partial.data());
      break;
    case LayerPart::kWhole:
      State(layer, slice).x = Upload(input);
      AttentionForward(layer, slice, partial.data());
      FinishAttention(layer, slice, partial.data());
      MlpForward(layer, slice, partial.data());
      FinishMlp(layer, slice, partial.data(), partial.data());
      break;
  }
  Download(partial, output);
}

void CudaBackend::FinishForward(int layer, LayerPart part, const SliceRef& slice,
                                std::span<const float> summed, std::span<float> output) {
  UseDevice(options_.device);
  TERASIM_CHECK(part != LayerPart::kWhole, "FinishForward of a whole layer");
  Buffer in = Upload(summed);
  if (part == LayerPart::kAttention) {
    FinishAttention(layer, slice, in.data());
    stream_.Synchronize();  // `summed` is the caller's
  } else {
    FinishMlp(layer, slice, in.data(), in.data());
    Download(in, output);
  }
}

void CudaBackend::MlpBackward(int layer, const SliceRef& slice, float* partial) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  cudaStream_t st = stream_.get();
  TERASIM_CHECK(!s.g.empty(), "layer {} mlp backward before its forward", layer);
  const int rows_tokens = slice.rows * slice.Tokens();
  const int h = hidden_;
  const int fl = local_ffn_;
  const float* dz = s.dz.data();
  gpu::AddColumnSums(st, rows_tokens, h, dz, p.grad[kFc2Bias].data());
  Buffer dg = Uninitialized(static_cast<int64_t>(rows_tokens) * fl);
  Gemm(false, true, rows_tokens, fl, h, 1.0f, dz, h, p.weight[kFc2Weight].data(), h, 0.0f,
       dg.data(), fl);
  Gemm(true, false, fl, h, rows_tokens, 1.0f, s.g.data(), fl, dz, h, 1.0f,
       p.grad[kFc2Weight].data(), h);
  gpu::GeluBackward(st, dg.size(), s.u.data(), dg.data(), dg.data());  // du
  Gemm(true, false, h, fl, rows_tokens, 1.0f, s.b.data(), h, dg.data(), fl, 1.0f,
       p.grad[kFc1Weight].data(), fl);
  gpu::AddColumnSums(st, rows_tokens, fl, dg.data(), p.grad[kFc1Bias].data());
  Gemm(false, true, rows_tokens, h, fl, 1.0f, dg.data(), fl, p.weight[kFc1Weight].data(), fl, 0.0f,
       partial, h);
}

void CudaBackend::FinishMlpBackward(int layer, const SliceRef& slice, const float* summed) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  const int rows_tokens = slice.rows * slice.Tokens();
  s.dy = Uninitialized(slice.Values(hidden_));
  gpu::LayerNormBackward(stream_.get(), rows_tokens, hidden_, s.y.data(), s.mean2.data(),
                         s.rstd2.data(), p.weight[kLn2Gain].data(), summed, s.dy.data(),
                         p.grad[kLn2Gain].data(), p.grad[kLn2Bias].data());
  gpu::AddInPlace(stream_.get(), s.dy.size(), s.dz.data(), s.dy.data());
}

void CudaBackend::AttentionBackward(int layer, const SliceRef& slice, float* partial) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  KvBuffer& kv = Kv(layer, slice);
  cudaStream_t st = stream_.get();
  TERASIM_CHECK(!s.dy.empty(), "layer {} attention backward before the mlp's finished", layer);
  const int n = slice.Tokens();
  const int rows_tokens = slice.rows * n;
  const int h = hidden_;
  const int hl = local_hidden_;
  const int hd = head_dim_;
  const int heads = local_heads_;
  const int ctx_len = slice.t1;
  const int seq = card_.sequence;
  const float* dy = s.dy.data();
  gpu::AddColumnSums(st, rows_tokens, h, dy, p.grad[kOutBias].data());
  Buffer dctx = Uninitialized(static_cast<int64_t>(rows_tokens) * hl);
  Gemm(false, true, rows_tokens, hl, h, 1.0f, dy, h, p.weight[kOutWeight].data(), h, 0.0f,
       dctx.data(), hl);
  Gemm(true, false, hl, h, rows_tokens, 1.0f, s.ctx.data(), hl, dy, h, 1.0f,
       p.grad[kOutWeight].data(), h);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t block = static_cast<int64_t>(n) * ctx_len;
  Buffer dqkv = Zeros(static_cast<int64_t>(rows_tokens) * 3 * hl);
  Buffer dp = Uninitialized(static_cast<int64_t>(slice.rows) * heads * block);
  for (int r = 0; r < slice.rows; ++r) {
    const int64_t kv_off = static_cast<int64_t>(r) * seq * hl;
    const float* pr = s.probs.data() + static_cast<int64_t>(r) * heads * block;
    const float* dc = dctx.data() + static_cast<int64_t>(r) * n * hl;
    float* dpr = dp.data() + static_cast<int64_t>(r) * heads * block;
    // Per head: dprobs = dctx v^T; dv += probs^T dctx.
    Gemm(false, true, n, ctx_len, hd, 1.0f, dc, hl, kv.v.data() + kv_off, hl, 0.0f, dpr, ctx_len,
         heads, hd, hd, block);
    Gemm(true, false, ctx_len, hd, n, 1.0f, pr, ctx_len, dc, hl, 1.0f, kv.dv.data() + kv_off, hl,
         heads, block, hd, hd);
  }
  gpu::SoftmaxBackward(st, slice.rows * heads * n, ctx_len, scale, s.probs.data(), dp.data());
  for (int r = 0; r < slice.rows; ++r) {
    const int64_t kv_off = static_cast<int64_t>(r) * seq * hl;
    const float* q = s.qkv.data() + static_cast<int64_t>(r) * n * 3 * hl;
    const float* dpr = dp.data() + static_cast<int64_t>(r) * heads * block;
    float* dq = dqkv.data() + static_cast<int64_t>(r) * n * 3 * hl;
    // Per head: dq = dscores k; dk += dscores^T q.
    Gemm(false, false, n, hd, ctx_len, 1.0f, dpr, ctx_len, kv.k.data() + kv_off, hl, 0.0f, dq,
         3 * hl, heads, block, hd, hd);
    Gemm(true, false, ctx_len, hd, n, 1.0f, dpr, ctx_len, q, 3 * hl, 1.0f, kv.dk.data() + kv_off,
         hl, heads, block, hd, hd);
  }
  // Later slices have already added their contributions: this slice's keys and values are
  // complete now.
  for (int r = 0; r < slice.rows; ++r) {
    float* dst = dqkv.data() + static_cast<int64_t>(r) * n * 3 * hl;
    const int64_t src = (static_cast<int64_t>(r) * seq + slice.t0) * hl;
    const size_t width = static_cast<size_t>(hl) * sizeof(float);
    TERASIM_CUDA(cudaMemcpy2DAsync(dst + hl, 3 * width, kv.dk.data() + src, width, width, n,
                                   cudaMemcpyDeviceToDevice, st));
    TERASIM_CUDA(cudaMemcpy2DAsync(dst + 2 * hl, 3 * width, kv.dv.data() + src, width, width, n,
                                   cudaMemcpyDeviceToDevice, st));
  }
  Gemm(true, false, h, 3 * hl, rows_tokens, 1.0f, s.a.data(), h, dqkv.data(), 3 * hl, 1.0f,
       p.grad[kQkvWeight].data(), 3 * hl);
  gpu::AddColumnSums(st, rows_tokens, 3 * hl, dqkv.data(), p.grad[kQkvBias].data());
  Gemm(false, true, rows_tokens, h, 3 * hl, 1.0f, dqkv.data(), 3 * hl, p.weight[kQkvWeight].data(),
       3 * hl, 0.0f, partial, h);
}

void CudaBackend::FinishAttentionBackward(int layer, const SliceRef& slice, const float* summed,
                                          float* grad_input) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  const int rows_tokens = slice.rows * slice.Tokens();
  gpu::LayerNormBackward(stream_.get(), rows_tokens, hidden_, s.x.data(), s.mean1.data(),
                         s.rstd1.data(), p.weight[kLn1Gain].data(), summed, grad_input,
                         p.grad[kLn1Gain].data(), p.grad[kLn1Bias].data());
  gpu::AddInPlace(stream_.get(), slice.Values(hidden_), s.dy.data(), grad_input);
}

void CudaBackend::Backward(int layer, LayerPart part, const SliceRef& slice,
                           std::span<const float> grad_output, std::span<float> grad_input) {
  UseDevice(options_.device);
  Buffer partial = Uninitialized(slice.Values(hidden_));
  switch (part) {
    case LayerPart::kMlp:
      State(layer, slice).dz = Upload(grad_output);
      MlpBackward(layer, slice, partial.data());
      break;
    case LayerPart::kAttention:
      AttentionBackward(layer, slice, partial.data());
      break;
    case LayerPart::kWhole: {
      State(layer, slice).dz = Upload(grad_output);
      MlpBackward(layer, slice, partial.data());
      FinishMlpBackward(layer, slice, partial.data());
      AttentionBackward(layer, slice, partial.data());
      Buffer gin = Uninitialized(partial.size());
      FinishAttentionBackward(layer, slice, partial.data(), gin.data());
      Download(gin, grad_input);
      slices_.erase(SliceKey(slice.microbatch, layer, slice.t0));
      return;
    }
  }
  Download(partial, grad_input);
}

void CudaBackend::FinishBackward(int layer, LayerPart part, const SliceRef& slice,
                                 std::span<const float> summed, std::span<float> grad_input) {
  UseDevice(options_.device);
  TERASIM_CHECK(part != LayerPart::kWhole, "FinishBackward of a whole layer");
  Buffer in = Upload(summed);
  if (part == LayerPart::kMlp) {
    FinishMlpBackward(layer, slice, in.data());
    stream_.Synchronize();  // `summed` is the caller's
  } else {
    Buffer gin = Uninitialized(in.size());
    FinishAttentionBackward(layer, slice, in.data(), gin.data());
    Download(gin, grad_input);
    slices_.erase(SliceKey(slice.microbatch, layer, slice.t0));  // this slice is done here
  }
}

double CudaBackend::Loss(const SliceRef& slice, std::span<const float> output,
                         std::span<float> grad_output, int64_t global_tokens) {
  UseDevice(options_.device);
  const int n = slice.Tokens();
  const int rows_tokens = slice.rows * n;
  const int h = hidden_;
  const float inv_tokens = 1.0f / static_cast<float>(global_tokens);
  double loss = 0;
  if (!head_) {
    // Sum of every output feature over the global token count: host arithmetic, as CpuBackend.
    for (int64_t i = 0; i < static_cast<int64_t>(rows_tokens) * h; ++i) {
      loss += output[i];
      grad_output[i] = inv_tokens;
    }
    loss /= static_cast<double>(global_tokens);
    loss_sum_ += loss;
    return loss;
  }
  ParamSet& hp = *head_;
  cudaStream_t st = stream_.get();
  const int vocab = card_.vocab;
  std::vector<int> targets;
  for (int r = 0; r < slice.rows; ++r) {
    for (int i = 0; i < n; ++i) {
      targets.push_back(SyntheticToken(seed_, slice.first_sequence + r, slice.t0 + i + 1, vocab));
    }
  }
  DeviceBuffer<int> d_targets = DeviceBuffer<int>::FromHost(targets, st);
  Buffer x = Upload(output);
  Buffer mean = Uninitialized(rows_tokens);
  Buffer rstd = Uninitialized(rows_tokens);
  Buffer hf = Uninitialized(static_cast<int64_t>(rows_tokens) * h);
  gpu::LayerNormForward(st, rows_tokens, h, x.data(), hp.weight[kLnfGain].data(),
                        hp.weight[kLnfBias].data(), hf.data(), mean.data(), rstd.data());
  Buffer logits = Uninitialized(static_cast<int64_t>(rows_tokens) * vocab);
  Gemm(false, true, rows_tokens, vocab, h, 1.0f, hf.data(), h, hp.weight[kLmWeight].data(), h, 0.0f,
       logits.data(), vocab);
  DeviceBuffer<double> row_loss(rows_tokens, st);
  gpu::CrossEntropy(st, rows_tokens, vocab, d_targets.data(), inv_tokens, logits.data(),
                    row_loss.data());
  Gemm(true, false, vocab, h, rows_tokens, 1.0f, logits.data(), vocab, hf.data(), h, 1.0f,
       hp.grad[kLmWeight].data(), h);
  Buffer dhf = Uninitialized(static_cast<int64_t>(rows_tokens) * h);
  Gemm(false, false, rows_tokens, h, vocab, 1.0f, logits.data(), vocab, hp.weight[kLmWeight].data(),
       h, 0.0f, dhf.data(), h);
  Buffer grad = Uninitialized(x.size());
  gpu::LayerNormBackward(st, rows_tokens, h, x.data(), mean.data(), rstd.data(),
                         hp.weight[kLnfGain].data(), dhf.data(), grad.data(),
                         hp.grad[kLnfGain].data(), hp.grad[kLnfBias].data());
  Download(grad, grad_output);
  for (double l : row_loss.ToHost()) loss += l;  // rows in order, as CpuBackend
  loss /= static_cast<double>(global_tokens);
  loss_sum_ += loss;
  return loss;
}

std::vector<const CudaBackend::ParamSet*> CudaBackend::SetsIn(Range layers) const {
  std::vector<const ParamSet*> sets;
  if (embed_ && layers.begin <= 0 && layers.end > 0) sets.push_back(&*embed_);
  for (const auto& [layer, ps] : layers_) {
    if (layer >= layers.begin && layer < layers.end) sets.push_back(&ps);
  }
  if (head_ && layers.begin < card_.layers && layers.end >= card_.layers) sets.push_back(&*head_);
  return sets;
}

std::vector<CudaBackend::ParamSet*> CudaBackend::SetsIn(Range layers) {
  std::vector<ParamSet*> sets;
  for (const ParamSet* ps : std::as_const(*this).SetsIn(layers)) {
    sets.push_back(const_cast<ParamSet*>(ps));
  }
  return sets;
}

std::vector<float> CudaBackend::Gradients(Range layers) const {
  UseDevice(options_.device);
  std::vector<float> out;
  for (const ParamSet* ps : SetsIn(layers)) {
    for (const auto& g : ps->grad) {
      const std::vector<float> host = g.ToHost();
      out.insert(out.end(), host.begin(), host.end());
    }
  }
  return out;
}

void CudaBackend::SetGradients(Range layers, std::span<const float> values) {
  UseDevice(options_.device);
  size_t pos = 0;
  for (ParamSet* ps : SetsIn(layers)) {
    for (auto& g : ps->grad) {
      const size_t n = static_cast<size_t>(g.size());
      TERASIM_CHECK(pos + n <= values.size(), "gradient buffer too small: {}", values.size());
      g.CopyFromHost(values.subspan(pos, n));
      pos += n;
    }
  }
  TERASIM_CHECK(pos == values.size(), "gradient buffer size {} != {}", values.size(), pos);
  stream_.Synchronize();  // `values` is the caller's
}

void CudaBackend::SnapshotGradients(Range layers) {
  UseDevice(options_.device);
  for (ParamSet* ps : SetsIn(layers)) {
    if (ps->snapped) continue;
    ps->snapshot.clear();
    for (const auto& g : ps->grad) ps->snapshot.push_back(g.ToHost());
    ps->snapped = true;
  }
}

void CudaBackend::GatherSnapshot(FullTensors& full) const {
  for (const ParamSet* ps : SetsIn(Range{0, card_.layers})) {
    if (!ps->snapped) continue;
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
          int fr = 0;
          int fc = 0;
          FullIndex(spec, shard_.tp_rank, shard_.tp, r, c, fr, fc);
          const size_t at = static_cast<size_t>(fr) * spec.cols + fc;
          if (covered[at]) continue;
          values[at] = ps->snapshot[i][static_cast<size_t>(r) * cols + c];
          covered[at] = 1;
        }
      }
    }
  }
}

void CudaBackend::OptimizerStep(Range layers, const AdamOptions& adam) {
  UseDevice(options_.device);
  for (ParamSet* ps : SetsIn(layers)) {
    ps->adam_step += 1;
    const double bc1 = 1.0 - std::pow(static_cast<double>(adam.beta1), ps->adam_step);
    const double bc2 = 1.0 - std::pow(static_cast<double>(adam.beta2), ps->adam_step);
    const float step = static_cast<float>(adam.lr * std::sqrt(bc2) / bc1);
    for (size_t i = 0; i < ps->weight.size(); ++i) {
      gpu::AdamStep(stream_.get(), ps->weight[i].size(), adam.beta1, adam.beta2, adam.eps, step,
                    ps->grad[i].data(), ps->adam_m[i].data(), ps->adam_v[i].data(),
                    ps->weight[i].data());
    }
  }
  stream_.Synchronize();
}

double CudaBackend::LayerFlops(LayerPart part, const SliceRef& slice, bool backward) const {
  const double tokens = static_cast<double>(slice.rows) * slice.Tokens();
  const double h = hidden_;
  const double hl = local_hidden_;
  // As CpuBackend: QKV and out-proj GEMMs, scores and context over l x (c + l), the MLP.
  const double attn = 2.0 * tokens * h * 4.0 * hl + 4.0 * tokens * slice.t1 * hl;
  const double mlp = 4.0 * tokens * h * local_ffn_;
  const double forward = part == LayerPart::kAttention ? attn
                         : part == LayerPart::kMlp     ? mlp
                                                       : attn + mlp;
  return backward ? 2.0 * forward : forward;
}

}  // namespace terasim

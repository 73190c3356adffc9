#include "exec/cpu_backend.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <utility>

#include "exec/cpu_kernels.h"
#include "exec/synthetic_data.h"
#include "models/errors.h"

namespace terasim {

namespace {

std::vector<float> Zeros(int64_t n) { return std::vector<float>(static_cast<size_t>(n), 0.0f); }

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

CpuBackend::CpuBackend(const ModelCard& card, ShardSpec shard, uint64_t seed)
    : card_(card), shard_(std::move(shard)), seed_(seed) {
  KeepActivationMemoryMapped();
  ValidateTensorParallel(card_, shard_.tp, "exec");
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

CpuBackend::ParamSet CpuBackend::MakeSet(int set, std::vector<ParamSpec> specs) const {
  ParamSet ps;
  ps.set = set;
  ps.specs = std::move(specs);
  for (const ParamSpec& spec : ps.specs) {
    ps.weight.push_back(InitShard(spec, set, seed_, shard_.tp_rank, shard_.tp));
    const int64_t n = static_cast<int64_t>(ps.weight.back().size());
    ps.grad.push_back(Zeros(n));
    ps.adam_m.push_back(Zeros(n));
    ps.adam_v.push_back(Zeros(n));
  }
  return ps;
}

CpuBackend::ParamSet& CpuBackend::Layer(int layer) {
  auto it = layers_.find(layer);
  TERASIM_CHECK(it != layers_.end(), "layer {} is not held by this device", layer);
  return it->second;
}

CpuBackend::SliceState& CpuBackend::State(int layer, const SliceRef& slice) {
  return slices_[SliceKey(slice.microbatch, layer, slice.t0)];
}

CpuBackend::KvBuffer& CpuBackend::Kv(int layer, const SliceRef& slice) {
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

void CpuBackend::BeginIteration() {
  kv_.clear();
  slices_.clear();
  loss_sum_ = 0;
  auto zero = [](ParamSet& ps) {
    for (auto& g : ps.grad) std::fill(g.begin(), g.end(), 0.0f);
  };
  for (auto& [layer, ps] : layers_) zero(ps);
  if (embed_) zero(*embed_);
  if (head_) zero(*head_);
}

void CpuBackend::Input(const SliceRef& slice, std::span<float> x) {
  const int n = slice.Tokens();
  TERASIM_CHECK(static_cast<int64_t>(x.size()) == slice.Values(hidden_), "input size {}", x.size());
  for (int r = 0; r < slice.rows; ++r) {
    const int64_t sequence = slice.first_sequence + r;
    for (int i = 0; i < n; ++i) {
      const int t = slice.t0 + i;
      float* xr = x.data() + (static_cast<int64_t>(r) * n + i) * hidden_;
      if (embed_) {
        const int token = SyntheticToken(seed_, sequence, t, card_.vocab);
        const float* te =
            embed_->weight[kTokenTable].data() + static_cast<int64_t>(token) * hidden_;
        const float* pe = embed_->weight[kPositionTable].data() + static_cast<int64_t>(t) * hidden_;
        for (int c = 0; c < hidden_; ++c) xr[c] = te[c] + pe[c];
      } else {
        for (int c = 0; c < hidden_; ++c) xr[c] = SyntheticInput(seed_, sequence, t, c);
      }
    }
  }
}

void CpuBackend::InputBackward(const SliceRef& slice, std::span<const float> grad_x) {
  if (!embed_) return;
  const int n = slice.Tokens();
  for (int r = 0; r < slice.rows; ++r) {
    const int64_t sequence = slice.first_sequence + r;
    for (int i = 0; i < n; ++i) {
      const int t = slice.t0 + i;
      const int token = SyntheticToken(seed_, sequence, t, card_.vocab);
      const float* gr = grad_x.data() + (static_cast<int64_t>(r) * n + i) * hidden_;
      float* gt = embed_->grad[kTokenTable].data() + static_cast<int64_t>(token) * hidden_;
      float* gp = embed_->grad[kPositionTable].data() + static_cast<int64_t>(t) * hidden_;
      for (int c = 0; c < hidden_; ++c) {
        gt[c] += gr[c];
        gp[c] += gr[c];
      }
    }
  }
}

void CpuBackend::AttentionForward(int layer, const SliceRef& slice, std::span<const float> x,
                                  std::span<float> partial) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  KvBuffer& kv = Kv(layer, slice);
  const int n = slice.Tokens();
  const int rows_tokens = slice.rows * n;
  const int h = hidden_;
  const int hl = local_hidden_;
  const int ctx_len = slice.t1;  // keys [0, t1)
  const int seq = card_.sequence;
  s.x.assign(x.begin(), x.end());
  s.mean1 = Zeros(rows_tokens);
  s.rstd1 = Zeros(rows_tokens);
  s.a = Zeros(static_cast<int64_t>(rows_tokens) * h);
  cpu::LayerNormForward(rows_tokens, h, s.x.data(), p.weight[kLn1Gain].data(),
                        p.weight[kLn1Bias].data(), s.a.data(), s.mean1.data(), s.rstd1.data());
  s.qkv = Zeros(static_cast<int64_t>(rows_tokens) * 3 * hl);
  for (int r = 0; r < rows_tokens; ++r) {
    std::copy_n(p.weight[kQkvBias].data(), 3 * hl, s.qkv.data() + static_cast<int64_t>(r) * 3 * hl);
  }
  cpu::Gemm(false, false, rows_tokens, 3 * hl, h, 1.0f, s.a.data(), h, p.weight[kQkvWeight].data(),
            3 * hl, 1.0f, s.qkv.data(), 3 * hl);
  // Append this slice's keys and values to the buffer.
  for (int r = 0; r < slice.rows; ++r) {
    for (int i = 0; i < n; ++i) {
      const float* src = s.qkv.data() + (static_cast<int64_t>(r) * n + i) * 3 * hl;
      const int64_t dst = (static_cast<int64_t>(r) * seq + slice.t0 + i) * hl;
      std::copy_n(src + hl, hl, kv.k.data() + dst);
      std::copy_n(src + 2 * hl, hl, kv.v.data() + dst);
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  s.probs = Zeros(static_cast<int64_t>(slice.rows) * local_heads_ * n * ctx_len);
  s.ctx = Zeros(static_cast<int64_t>(rows_tokens) * hl);
  for (int r = 0; r < slice.rows; ++r) {
    for (int hd = 0; hd < local_heads_; ++hd) {
      const float* q = s.qkv.data() + static_cast<int64_t>(r) * n * 3 * hl + hd * head_dim_;
      const float* k = kv.k.data() + static_cast<int64_t>(r) * seq * hl + hd * head_dim_;
      const float* v = kv.v.data() + static_cast<int64_t>(r) * seq * hl + hd * head_dim_;
      float* pr = s.probs.data() + (static_cast<int64_t>(r) * local_heads_ + hd) * n * ctx_len;
      cpu::Gemm(false, true, n, ctx_len, head_dim_, scale, q, 3 * hl, k, hl, 0.0f, pr, ctx_len);
      for (int i = 0; i < n; ++i) {
        float* row = pr + static_cast<int64_t>(i) * ctx_len;
        const int valid = slice.t0 + i + 1;  // causal: keys [0, t0 + i]
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
      float* c = s.ctx.data() + static_cast<int64_t>(r) * n * hl + hd * head_dim_;
      cpu::Gemm(false, false, n, head_dim_, ctx_len, 1.0f, pr, ctx_len, v, hl, 0.0f, c, hl);
    }
  }
  cpu::Gemm(false, false, rows_tokens, h, hl, 1.0f, s.ctx.data(), hl, p.weight[kOutWeight].data(),
            h, 0.0f, partial.data(), h);
}

void CpuBackend::MlpForward(int layer, const SliceRef& slice, std::span<float> partial) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  const int rows_tokens = slice.rows * slice.Tokens();
  const int h = hidden_;
  const int fl = local_ffn_;
  TERASIM_CHECK(!s.y.empty(), "layer {} mlp before its attention finished", layer);
  s.mean2 = Zeros(rows_tokens);
  s.rstd2 = Zeros(rows_tokens);
  s.b = Zeros(static_cast<int64_t>(rows_tokens) * h);
  cpu::LayerNormForward(rows_tokens, h, s.y.data(), p.weight[kLn2Gain].data(),
                        p.weight[kLn2Bias].data(), s.b.data(), s.mean2.data(), s.rstd2.data());
  s.u = Zeros(static_cast<int64_t>(rows_tokens) * fl);
  for (int r = 0; r < rows_tokens; ++r) {
    std::copy_n(p.weight[kFc1Bias].data(), fl, s.u.data() + static_cast<int64_t>(r) * fl);
  }
  cpu::Gemm(false, false, rows_tokens, fl, h, 1.0f, s.b.data(), h, p.weight[kFc1Weight].data(), fl,
            1.0f, s.u.data(), fl);
  s.g = Zeros(static_cast<int64_t>(rows_tokens) * fl);
  cpu::GeluForward(static_cast<int64_t>(s.u.size()), s.u.data(), s.g.data());
  cpu::Gemm(false, false, rows_tokens, h, fl, 1.0f, s.g.data(), fl, p.weight[kFc2Weight].data(), h,
            0.0f, partial.data(), h);
}

void CpuBackend::Forward(int layer, LayerPart part, const SliceRef& slice,
                         std::span<const float> input, std::span<float> output) {
  const int64_t values = slice.Values(hidden_);
  switch (part) {
    case LayerPart::kAttention:
      AttentionForward(layer, slice, input, output);
      return;
    case LayerPart::kMlp:
      MlpForward(layer, slice, output);
      return;
    case LayerPart::kWhole: {
      std::vector<float> partial = Zeros(values);
      AttentionForward(layer, slice, input, partial);
      FinishForward(layer, LayerPart::kAttention, slice, partial, {});
      MlpForward(layer, slice, partial);
      FinishForward(layer, LayerPart::kMlp, slice, partial, output);
      return;
    }
  }
}

void CpuBackend::FinishForward(int layer, LayerPart part, const SliceRef& slice,
                               std::span<const float> summed, std::span<float> output) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  const int rows_tokens = slice.rows * slice.Tokens();
  const int h = hidden_;
  TERASIM_CHECK(part != LayerPart::kWhole, "FinishForward of a whole layer");
  if (part == LayerPart::kAttention) {
    s.y.assign(summed.begin(), summed.end());
    cpu::AddRowBias(rows_tokens, h, p.weight[kOutBias].data(), s.y.data());
    for (size_t i = 0; i < s.y.size(); ++i) s.y[i] += s.x[i];
  } else {
    for (int64_t i = 0; i < static_cast<int64_t>(rows_tokens) * h; ++i) {
      output[i] = summed[i] + s.y[i];
    }
    cpu::AddRowBias(rows_tokens, h, p.weight[kFc2Bias].data(), output.data());
  }
}

void CpuBackend::MlpBackward(int layer, const SliceRef& slice, std::span<const float> dz,
                             std::span<float> partial) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  TERASIM_CHECK(!s.g.empty(), "layer {} mlp backward before its forward", layer);
  const int rows_tokens = slice.rows * slice.Tokens();
  const int h = hidden_;
  const int fl = local_ffn_;
  s.dz.assign(dz.begin(), dz.end());
  cpu::AddColumnSums(rows_tokens, h, dz.data(), p.grad[kFc2Bias].data());
  std::vector<float> dg = Zeros(static_cast<int64_t>(rows_tokens) * fl);
  cpu::Gemm(false, true, rows_tokens, fl, h, 1.0f, dz.data(), h, p.weight[kFc2Weight].data(), h,
            0.0f, dg.data(), fl);
  cpu::Gemm(true, false, fl, h, rows_tokens, 1.0f, s.g.data(), fl, dz.data(), h, 1.0f,
            p.grad[kFc2Weight].data(), h);
  cpu::GeluBackward(static_cast<int64_t>(dg.size()), s.u.data(), dg.data(), dg.data());  // du
  cpu::Gemm(true, false, h, fl, rows_tokens, 1.0f, s.b.data(), h, dg.data(), fl, 1.0f,
            p.grad[kFc1Weight].data(), fl);
  cpu::AddColumnSums(rows_tokens, fl, dg.data(), p.grad[kFc1Bias].data());
  cpu::Gemm(false, true, rows_tokens, h, fl, 1.0f, dg.data(), fl, p.weight[kFc1Weight].data(), fl,
            0.0f, partial.data(), h);
}

void CpuBackend::AttentionBackward(int layer, const SliceRef& slice, std::span<float> partial) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  KvBuffer& kv = Kv(layer, slice);
  TERASIM_CHECK(!s.dy.empty(), "layer {} attention backward before the mlp's finished", layer);
  const int n = slice.Tokens();
  const int rows_tokens = slice.rows * n;
  const int h = hidden_;
  const int hl = local_hidden_;
  const int ctx_len = slice.t1;
  const int seq = card_.sequence;
  const float* dy = s.dy.data();
  cpu::AddColumnSums(rows_tokens, h, dy, p.grad[kOutBias].data());
  std::vector<float> dctx = Zeros(static_cast<int64_t>(rows_tokens) * hl);
  cpu::Gemm(false, true, rows_tokens, hl, h, 1.0f, dy, h, p.weight[kOutWeight].data(), h, 0.0f,
            dctx.data(), hl);
  cpu::Gemm(true, false, hl, h, rows_tokens, 1.0f, s.ctx.data(), hl, dy, h, 1.0f,
            p.grad[kOutWeight].data(), h);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  std::vector<float> dqkv = Zeros(static_cast<int64_t>(rows_tokens) * 3 * hl);
  std::vector<float> dp = Zeros(static_cast<int64_t>(n) * ctx_len);
  for (int r = 0; r < slice.rows; ++r) {
    for (int hd = 0; hd < local_heads_; ++hd) {
      const int64_t kv_off = static_cast<int64_t>(r) * seq * hl + hd * head_dim_;
      const float* q = s.qkv.data() + static_cast<int64_t>(r) * n * 3 * hl + hd * head_dim_;
      const float* k = kv.k.data() + kv_off;
      const float* v = kv.v.data() + kv_off;
      float* dk = kv.dk.data() + kv_off;
      float* dv = kv.dv.data() + kv_off;
      const float* pr =
          s.probs.data() + (static_cast<int64_t>(r) * local_heads_ + hd) * n * ctx_len;
      const float* dc = dctx.data() + static_cast<int64_t>(r) * n * hl + hd * head_dim_;
      cpu::Gemm(false, true, n, ctx_len, head_dim_, 1.0f, dc, hl, v, hl, 0.0f, dp.data(), ctx_len);
      cpu::Gemm(true, false, ctx_len, head_dim_, n, 1.0f, pr, ctx_len, dc, hl, 1.0f, dv, hl);
      for (int i = 0; i < n; ++i) {
        const float* prow = pr + static_cast<int64_t>(i) * ctx_len;
        float* drow = dp.data() + static_cast<int64_t>(i) * ctx_len;
        float dot = 0;
        for (int j = 0; j < ctx_len; ++j) dot += prow[j] * drow[j];
        for (int j = 0; j < ctx_len; ++j) drow[j] = prow[j] * (drow[j] - dot) * scale;
      }
      float* dq = dqkv.data() + static_cast<int64_t>(r) * n * 3 * hl + hd * head_dim_;
      cpu::Gemm(false, false, n, head_dim_, ctx_len, 1.0f, dp.data(), ctx_len, k, hl, 0.0f, dq,
                3 * hl);
      cpu::Gemm(true, false, ctx_len, head_dim_, n, 1.0f, dp.data(), ctx_len, q, 3 * hl, 1.0f, dk,
                hl);
    }
  }
  // Later slices have already added their contributions: this slice's keys and values are
  // complete now.
  for (int r = 0; r < slice.rows; ++r) {
    for (int i = 0; i < n; ++i) {
      float* dst = dqkv.data() + (static_cast<int64_t>(r) * n + i) * 3 * hl;
      const int64_t src = (static_cast<int64_t>(r) * seq + slice.t0 + i) * hl;
      std::copy_n(kv.dk.data() + src, hl, dst + hl);
      std::copy_n(kv.dv.data() + src, hl, dst + 2 * hl);
    }
  }
  cpu::Gemm(true, false, h, 3 * hl, rows_tokens, 1.0f, s.a.data(), h, dqkv.data(), 3 * hl, 1.0f,
            p.grad[kQkvWeight].data(), 3 * hl);
  cpu::AddColumnSums(rows_tokens, 3 * hl, dqkv.data(), p.grad[kQkvBias].data());
  cpu::Gemm(false, true, rows_tokens, h, 3 * hl, 1.0f, dqkv.data(), 3 * hl,
            p.weight[kQkvWeight].data(), 3 * hl, 0.0f, partial.data(), h);
}

void CpuBackend::Backward(int layer, LayerPart part, const SliceRef& slice,
                          std::span<const float> grad_output, std::span<float> grad_input) {
  switch (part) {
    case LayerPart::kMlp:
      MlpBackward(layer, slice, grad_output, grad_input);
      return;
    case LayerPart::kAttention:
      AttentionBackward(layer, slice, grad_input);
      return;
    case LayerPart::kWhole: {
      std::vector<float> partial = Zeros(slice.Values(hidden_));
      MlpBackward(layer, slice, grad_output, partial);
      FinishBackward(layer, LayerPart::kMlp, slice, partial, {});
      AttentionBackward(layer, slice, partial);
      FinishBackward(layer, LayerPart::kAttention, slice, partial, grad_input);
      return;
    }
  }
}

void CpuBackend::FinishBackward(int layer, LayerPart part, const SliceRef& slice,
                                std::span<const float> summed, std::span<float> grad_input) {
  ParamSet& p = Layer(layer);
  SliceState& s = State(layer, slice);
  const int rows_tokens = slice.rows * slice.Tokens();
  const int h = hidden_;
  TERASIM_CHECK(part != LayerPart::kWhole, "FinishBackward of a whole layer");
  if (part == LayerPart::kMlp) {
    s.dy = Zeros(static_cast<int64_t>(rows_tokens) * h);
    cpu::LayerNormBackward(rows_tokens, h, s.y.data(), s.mean2.data(), s.rstd2.data(),
                           p.weight[kLn2Gain].data(), summed.data(), s.dy.data(),
                           p.grad[kLn2Gain].data(), p.grad[kLn2Bias].data());
    for (size_t i = 0; i < s.dy.size(); ++i) s.dy[i] += s.dz[i];
  } else {
    cpu::LayerNormBackward(rows_tokens, h, s.x.data(), s.mean1.data(), s.rstd1.data(),
                           p.weight[kLn1Gain].data(), summed.data(), grad_input.data(),
                           p.grad[kLn1Gain].data(), p.grad[kLn1Bias].data());
    for (int64_t i = 0; i < static_cast<int64_t>(rows_tokens) * h; ++i) grad_input[i] += s.dy[i];
    slices_.erase(SliceKey(slice.microbatch, layer, slice.t0));  // this slice is done here
  }
}

double CpuBackend::Loss(const SliceRef& slice, std::span<const float> output,
                        std::span<float> grad_output, int64_t global_tokens) {
  const int n = slice.Tokens();
  const int rows_tokens = slice.rows * n;
  const int h = hidden_;
  const float inv_tokens = 1.0f / static_cast<float>(global_tokens);
  double loss = 0;
  if (!head_) {
    // Sum of every output feature of every token, over the global token count.
    for (int64_t i = 0; i < static_cast<int64_t>(rows_tokens) * h; ++i) {
      loss += output[i];
      grad_output[i] = inv_tokens;
    }
    loss /= static_cast<double>(global_tokens);
    loss_sum_ += loss;
    return loss;
  }
  ParamSet& hp = *head_;
  const int vocab = card_.vocab;
  std::vector<float> mean = Zeros(rows_tokens);
  std::vector<float> rstd = Zeros(rows_tokens);
  std::vector<float> hf = Zeros(static_cast<int64_t>(rows_tokens) * h);
  cpu::LayerNormForward(rows_tokens, h, output.data(), hp.weight[kLnfGain].data(),
                        hp.weight[kLnfBias].data(), hf.data(), mean.data(), rstd.data());
  std::vector<float> logits = Zeros(static_cast<int64_t>(rows_tokens) * vocab);
  cpu::Gemm(false, true, rows_tokens, vocab, h, 1.0f, hf.data(), h, hp.weight[kLmWeight].data(), h,
            0.0f, logits.data(), vocab);
  for (int r = 0; r < slice.rows; ++r) {
    for (int i = 0; i < n; ++i) {
      const int target = SyntheticToken(seed_, slice.first_sequence + r, slice.t0 + i + 1, vocab);
      float* row = logits.data() + (static_cast<int64_t>(r) * n + i) * vocab;
      float mx = -std::numeric_limits<float>::infinity();
      for (int c = 0; c < vocab; ++c) mx = std::max(mx, row[c]);
      double sum = 0;
      for (int c = 0; c < vocab; ++c) sum += std::exp(static_cast<double>(row[c] - mx));
      const double log_z = std::log(sum) + mx;
      loss += log_z - row[target];
      // dlogits = (softmax - onehot) / global tokens
      for (int c = 0; c < vocab; ++c) {
        row[c] = static_cast<float>(std::exp(static_cast<double>(row[c]) - log_z)) * inv_tokens;
      }
      row[target] -= inv_tokens;
    }
  }
  loss /= static_cast<double>(global_tokens);
  cpu::Gemm(true, false, vocab, h, rows_tokens, 1.0f, logits.data(), vocab, hf.data(), h, 1.0f,
            hp.grad[kLmWeight].data(), h);
  std::vector<float> dhf = Zeros(static_cast<int64_t>(rows_tokens) * h);
  cpu::Gemm(false, false, rows_tokens, h, vocab, 1.0f, logits.data(), vocab,
            hp.weight[kLmWeight].data(), h, 0.0f, dhf.data(), h);
  cpu::LayerNormBackward(rows_tokens, h, output.data(), mean.data(), rstd.data(),
                         hp.weight[kLnfGain].data(), dhf.data(), grad_output.data(),
                         hp.grad[kLnfGain].data(), hp.grad[kLnfBias].data());
  loss_sum_ += loss;
  return loss;
}

std::vector<const CpuBackend::ParamSet*> CpuBackend::SetsIn(Range layers) const {
  std::vector<const ParamSet*> sets;
  if (embed_ && layers.begin <= 0 && layers.end > 0) sets.push_back(&*embed_);
  for (const auto& [layer, ps] : layers_) {
    if (layer >= layers.begin && layer < layers.end) sets.push_back(&ps);
  }
  if (head_ && layers.begin < card_.layers && layers.end >= card_.layers) sets.push_back(&*head_);
  return sets;
}

std::vector<CpuBackend::ParamSet*> CpuBackend::SetsIn(Range layers) {
  std::vector<ParamSet*> sets;
  for (const ParamSet* ps : std::as_const(*this).SetsIn(layers)) {
    sets.push_back(const_cast<ParamSet*>(ps));
  }
  return sets;
}

std::vector<float> CpuBackend::Gradients(Range layers) const {
  std::vector<float> out;
  for (const ParamSet* ps : SetsIn(layers)) {
    for (const auto& g : ps->grad) out.insert(out.end(), g.begin(), g.end());
  }
  return out;
}

void CpuBackend::SetGradients(Range layers, std::span<const float> values) {
  size_t pos = 0;
  for (ParamSet* ps : SetsIn(layers)) {
    for (auto& g : ps->grad) {
      TERASIM_CHECK(pos + g.size() <= values.size(), "gradient buffer too small: {}",
                    values.size());
      std::copy_n(values.data() + pos, g.size(), g.data());
      pos += g.size();
    }
  }
  TERASIM_CHECK(pos == values.size(), "gradient buffer size {} != {}", values.size(), pos);
}

void CpuBackend::SnapshotGradients(Range layers) {
  for (ParamSet* ps : SetsIn(layers)) {
    if (ps->snapped) continue;
    ps->snapshot = ps->grad;
    ps->snapped = true;
  }
}

void CpuBackend::GatherSnapshot(FullTensors& full) const {
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

void CpuBackend::OptimizerStep(Range layers, const AdamOptions& adam) {
  for (ParamSet* ps : SetsIn(layers)) {
    ps->adam_step += 1;
    const double bc1 = 1.0 - std::pow(static_cast<double>(adam.beta1), ps->adam_step);
    const double bc2 = 1.0 - std::pow(static_cast<double>(adam.beta2), ps->adam_step);
    const float step = static_cast<float>(adam.lr * std::sqrt(bc2) / bc1);
    for (size_t i = 0; i < ps->weight.size(); ++i) {
      std::vector<float>& w = ps->weight[i];
      const std::vector<float>& g = ps->grad[i];
      std::vector<float>& m = ps->adam_m[i];
      std::vector<float>& v = ps->adam_v[i];
      for (size_t j = 0; j < w.size(); ++j) {
        m[j] = adam.beta1 * m[j] + (1.0f - adam.beta1) * g[j];
        v[j] = adam.beta2 * v[j] + (1.0f - adam.beta2) * g[j] * g[j];
        w[j] -= step * m[j] / (std::sqrt(v[j]) + adam.eps);
      }
    }
  }
}

double CpuBackend::LayerFlops(LayerPart part, const SliceRef& slice, bool backward) const {
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

CpuBackend::ParamSet* CpuBackend::FindSet(const std::string& name, size_t& index) {
  return const_cast<ParamSet*>(std::as_const(*this).FindSet(name, index));
}

const CpuBackend::ParamSet* CpuBackend::FindSet(const std::string& name, size_t& index) const {
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

std::optional<float> CpuBackend::ParameterValue(const std::string& name, int full_row,
                                                int full_col) const {
  size_t i = 0;
  const ParamSet* ps = FindSet(name, i);
  if (ps == nullptr) return std::nullopt;
  const ParamSpec& spec = ps->specs[i];
  const int rows = ShardRows(spec, shard_.tp);
  const int cols = ShardCols(spec, shard_.tp);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      int fr = 0;
      int fc = 0;
      FullIndex(spec, shard_.tp_rank, shard_.tp, r, c, fr, fc);
      if (fr == full_row && fc == full_col) return ps->weight[i][static_cast<size_t>(r) * cols + c];
    }
  }
  return std::nullopt;
}

void CpuBackend::AddToParameter(const std::string& name, int full_row, int full_col, float delta) {
  size_t i = 0;
  ParamSet* ps = FindSet(name, i);
  if (ps == nullptr) return;
  const ParamSpec& spec = ps->specs[i];
  const int rows = ShardRows(spec, shard_.tp);
  const int cols = ShardCols(spec, shard_.tp);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      int fr = 0;
      int fc = 0;
      FullIndex(spec, shard_.tp_rank, shard_.tp, r, c, fr, fc);
      if (fr == full_row && fc == full_col)
        ps->weight[i][static_cast<size_t>(r) * cols + c] += delta;
    }
  }
}

}  // namespace terasim

#include "models/layer_operators.h"

#include <algorithm>
#include <string_view>

#include "models/errors.h"
#include "models/memory_model.h"

namespace terasim {
namespace {

constexpr int64_t kFp16 = 2;  // bytes per activation element
constexpr int64_t kFp32 = 4;  // the eager softmax's output

// The memory operators that reduce along rows, broadcast, or permute / read strided views
// (LayerOperator::layout); every other one streams contiguous tensors (elementwise adds, bias
// adds, activations, casts, the key/value cache's zero-fill and adds, the accumulation).
bool IsLayout(std::string_view name) {
  for (std::string_view layout :
       {"ln1", "ln2", "ln1.bwd", "ln2.bwd", "scale_mask_softmax", "scale_mask_softmax.bwd",
        "softmax", "softmax.bwd", "mask", "causal_mask", "q_scale", "q_scale.bwd", "kv_cache_write",
        "context_layout", "context_layout.bwd", "qkv_layout.bwd", "mlp_bias_grads",
        "attn_bias_grads"}) {
    if (name == layout) return true;
  }
  return false;
}

// Appends the operators of one layer block; the shapes of the header's table.
class OperatorList {
 public:
  OperatorList(const ModelCard& model, const SliceWork& work, const LayerOperatorOptions& options)
      : options_(options) {
    TERASIM_CHECK(work.rows >= 1 && work.tokens >= 0 && work.context >= 0 && work.tp >= 1 &&
                      model.heads % work.tp == 0,
                  "bad SliceWork: rows {} tokens {} context {} tp {} heads {}", work.rows,
                  work.tokens, work.context, work.tp, model.heads);
    const int64_t t = work.tp;
    t_ = t;
    b_ = work.rows;
    l_ = work.tokens;
    c_ = work.context;
    h_ = model.hidden;
    d_ = model.HeadDim();
    heads_ = model.heads / t;
    h_t_ = model.hidden / t;
    f_t_ = model.ffn / t;
    bl_ = b_ * l_;
    // LayerNorm, dropout and residual tensors: split t ways under sequence parallelism.
    x_ = bl_ * h_ / (options.sequence_parallel ? t : 1);
    score_ = b_ * heads_ * l_ * (c_ + l_);
    sequence_ = model.sequence;
    TERASIM_CHECK(options.fused || options.kv_cache || c_ == 0,
                  "eager layer without its key/value cache at context {}", c_);
  }

  void Gemm(const char* name, int64_t batch, int64_t m, int64_t n, int64_t k) {
    LayerOperator op;
    op.name = name;
    op.kind = OperatorKind::kGemm;
    op.batch = batch;
    op.m = m;
    op.n = n;
    op.k = k;
    op.flops = 2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) *
               static_cast<double>(k);
    op.bytes = kFp16 * batch * (m * k + k * n + m * n);
    ops_.push_back(op);
  }

  void Memory(const char* name, Bytes bytes, int kernels = 1) {
    LayerOperator op;
    op.name = name;
    op.bytes = bytes;
    op.kernels = kernels;
    op.layout = IsLayout(name);
    ops_.push_back(op);
  }

  // The attention block, forward (or its selective recomputation: the core only).
  void AttentionForward(bool core_only) {
    if (!options_.fused) {
      EagerAttentionForward(core_only);
      return;
    }
    if (!core_only) {
      Memory("ln1", 2 * kFp16 * x_);
      Gemm("qkv", 1, bl_, 3 * h_t_, h_);
    }
    Gemm("scores", b_ * heads_, l_, c_ + l_, d_);
    Memory("scale_mask_softmax", 2 * kFp16 * score_);
    Memory("attn_dropout", 2 * kFp16 * score_ + score_);  // in, out, 1-byte mask
    Gemm("attn_v", b_ * heads_, l_, d_, c_ + l_);
    if (core_only) return;
    Gemm("proj", 1, bl_, h_, h_t_);
    Collective("proj.allreduce");
    Memory("bias_dropout_add1", 3 * kFp16 * x_ + x_);  // two inputs, one output, the mask
  }

  void MlpForward() {
    if (!options_.fused) {
      EagerMlpForward();
      return;
    }
    Memory("ln2", 2 * kFp16 * x_);
    Gemm("fc1", 1, bl_, f_t_, h_);
    Memory("bias_gelu", 2 * kFp16 * bl_ * f_t_);
    Gemm("fc2", 1, bl_, h_, f_t_);
    Collective("fc2.allreduce");
    Memory("bias_dropout_add2", 3 * kFp16 * x_ + x_);
  }

  void MlpBackwardInput() {
    const bool fused = options_.fused;
    if (fused) Memory("bias_dropout_add2.bwd", 2 * kFp16 * x_ + x_);  // eager: no dropout
    Gemm("fc2.dX", 1, bl_, f_t_, h_);
    Memory(fused ? "gelu.bwd" : "relu.bwd", 3 * kFp16 * bl_ * f_t_);
    Gemm("fc1.dX", 1, bl_, h_, f_t_);
    Collective("fc1.dX.allreduce");
    // Eager: PyTorch 1.x LayerNorm backward in four kernels (internal gradients, fused
    // parameters, dX, gamma / beta), reading dY and X twice.
    Memory("ln2.bwd", (fused ? 3 : 5) * kFp16 * x_, fused ? 2 : 4);
    Memory("grad_add2", 3 * kFp16 * x_);  // the residual's two gradients summed
  }

  void AttentionBackwardInput() {
    if (!options_.fused) {
      EagerAttentionBackwardInput();
      return;
    }
    Memory("bias_dropout_add1.bwd", 2 * kFp16 * x_ + x_);
    Gemm("proj.dX", 1, bl_, h_t_, h_);
    Gemm("attn_v.dP", b_ * heads_, l_, c_ + l_, d_);
    Gemm("attn_v.dV", b_ * heads_, c_ + l_, d_, l_);
    Memory("attn_dropout.bwd", 2 * kFp16 * score_ + score_);
    Memory("scale_mask_softmax.bwd", 3 * kFp16 * score_);
    Gemm("scores.dQ", b_ * heads_, l_, d_, c_ + l_);
    Gemm("scores.dK", b_ * heads_, c_ + l_, d_, l_);
    Gemm("qkv.dX", 1, bl_, h_, 3 * h_t_);
    Collective("qkv.dX.allreduce");
    Memory("ln1.bwd", 3 * kFp16 * x_, 2);
    Memory("grad_add1", 3 * kFp16 * x_);
  }

  void MlpBackwardWeight(Bytes accumulate_bytes) {
    Gemm("fc2.dW", 1, f_t_, h_, bl_);
    Gemm("fc1.dW", 1, h_, f_t_, bl_);
    Memory("mlp_bias_grads", kFp16 * bl_ * (h_ + f_t_), 2);
    Accumulate("mlp_grad_accumulate", accumulate_bytes);
  }

  void AttentionBackwardWeight(Bytes accumulate_bytes) {
    Gemm("proj.dW", 1, h_t_, h_, bl_);
    Gemm("qkv.dW", 1, h_, 3 * h_t_, bl_);
    Memory("attn_bias_grads", kFp16 * bl_ * (h_ + 3 * h_t_), 2);
    Accumulate("attn_grad_accumulate", accumulate_bytes);
  }

  // The host's call of a tensor-parallel collective (tp > 1 and tp_collectives only).
  void Collective(const char* name) {
    if (!options_.tp_collectives || t_ == 1) return;
    LayerOperator op;
    op.name = name;
    op.kind = OperatorKind::kCollective;
    op.kernels = 0;
    ops_.push_back(op);
  }

  std::vector<LayerOperator> Take() { return std::move(ops_); }
  int64_t score_elements() const { return score_; }

 private:
  // Accumulation of a block's weight gradients across slices. Fused: one pass over the
  // gradient buffer per extra pass (two kernels). Eager (TeraPipe): `w.grad += grad_w` for
  // each of the block's six tensors (LayerNorm, two linears, weights and biases), which reads
  // both gradients and writes one: three times the bytes.
  void Accumulate(const char* name, Bytes bytes) {
    if (bytes <= 0) return;
    if (options_.fused) {
      Memory(name, bytes, 2);
    } else {
      Memory(name, 3 * bytes, 6);
    }
  }

  // The eager variant follows TeraPipe's PyTorch layer (github.com/zhuohan123/terapipe,
  // transformer_models.py, mpu/layers.py; the code of the paper's runs): nn.LayerNorm (two
  // kernels in PyTorch 1.x: moments, then normalize), each linear a GEMM plus a separate bias
  // add (F.linear on a 3-D input), q scaled by its own kernel, the causal mask built per slice
  // (fill, triu, zeros for the context, cat) and added in place, softmax in fp32 then cast
  // back to fp16, no dropout, ReLU in place, residual adds in place. Keys and values go into
  // a preallocated cache of the whole sequence; the backward of reading its first c + l rows
  // zero-fills a sequence-long gradient and copies the c + l rows into it, for keys and values
  // (so a slice's backward moves sequence-long tensors whatever its length); the pipeline adds
  // its first c rows into the gradient it passes to the earlier slices.
  void EagerAttentionForward(bool core_only) {
    if (!core_only) {
      Memory("ln1", 3 * kFp16 * x_, 2);
      Gemm("qkv", 1, bl_, 3 * h_t_, h_);
      Memory("qkv_bias", 2 * kFp16 * 3 * bl_ * h_t_);
      Memory("q_scale", 2 * kFp16 * bl_ * h_t_);
      if (!options_.kv_cache) {
        Memory("causal_mask", kFp16 * 3 * l_ * l_, 2);  // new_full, triu_
      } else {
        // new_full, triu_, new_zeros(l, c), cat; new_zeros of the first slice (c = 0) is an
        // empty tensor, whose fill launches no kernel.
        Memory("causal_mask", kFp16 * (3 * l_ * l_ + l_ * c_ + 2 * l_ * (c_ + l_)), c_ > 0 ? 4 : 3);
        Memory("kv_cache_write", 2 * kFp16 * 2 * bl_ * h_t_, 2);
      }
    }
    Gemm("scores", b_ * heads_, l_, c_ + l_, d_);
    Memory("mask", 2 * kFp16 * score_ + kFp16 * l_ * (c_ + l_));  // in place, mask broadcast
    Memory("softmax", (kFp16 + kFp32) * score_);                  // fp16 in, fp32 out
    Memory("softmax_cast", (kFp32 + kFp16) * score_);             // .type_as: back to fp16
    Gemm("attn_v", b_ * heads_, l_, d_, c_ + l_);
    if (core_only) return;
    Memory("context_layout", 2 * kFp16 * bl_ * h_t_);  // transpose(0, 1).contiguous()
    Gemm("proj", 1, bl_, h_, h_t_);
    Collective("proj.allreduce");
    Memory("proj_bias", 2 * kFp16 * bl_ * h_);  // after the row-parallel reduce
    Memory("residual1", 3 * kFp16 * x_);
  }

  void EagerMlpForward() {
    Memory("ln2", 3 * kFp16 * x_, 2);
    Gemm("fc1", 1, bl_, f_t_, h_);
    Memory("fc1_bias", 2 * kFp16 * bl_ * f_t_);
    Memory("relu", 2 * kFp16 * bl_ * f_t_);
    Gemm("fc2", 1, bl_, h_, f_t_);
    Collective("fc2.allreduce");
    Memory("fc2_bias", 2 * kFp16 * bl_ * h_);
    Memory("residual2", 3 * kFp16 * x_);
  }

  void EagerAttentionBackwardInput() {
    Gemm("proj.dX", 1, bl_, h_t_, h_);
    Memory("context_layout.bwd", 2 * kFp16 * bl_ * h_t_);
    Gemm("attn_v.dP", b_ * heads_, l_, c_ + l_, d_);
    Gemm("attn_v.dV", b_ * heads_, c_ + l_, d_, l_);
    Memory("softmax_cast.bwd", (kFp16 + kFp32) * score_);
    Memory("softmax.bwd", (2 * kFp32 + kFp16) * score_);  // output and gradient in fp32
    Gemm("scores.dQ", b_ * heads_, l_, d_, c_ + l_);
    Gemm("scores.dK", b_ * heads_, c_ + l_, d_, l_);
    if (options_.kv_cache) KvCacheBackward();
    Memory("q_scale.bwd", 2 * kFp16 * bl_ * h_t_);
    Memory("qkv_layout.bwd", 2 * kFp16 * 3 * bl_ * h_t_, 2);  // chunk's cat, then a copy
    Gemm("qkv.dX", 1, bl_, h_, 3 * h_t_);
    Collective("qkv.dX.allreduce");
    Memory("ln1.bwd", 5 * kFp16 * x_, 4);
    Memory("grad_add1", 3 * kFp16 * x_);
  }

  // The key/value cache's gradient in a slice's backward, for keys and values each
  // (test_transformer_pipemegatron.py backward_step and transformer_models.py _AssignCache at
  // github.com/zhuohan123/terapipe commit bd366b5, February 2021): autograd's backward of
  // cache[:, :c + l] zero-fills the s-row cache gradient and copies the c + l rows in (two
  // kernels); when later slices passed a gradient for this slice's new l rows (c + l < s),
  // autograd sums it with the cache's (read two, write one: one kernel); after the call, when
  // c > 0, `grad[:, :c] += update[:, :c]` adds the first c rows into the gradient handed to the
  // earlier slices (one kernel). So the first slice moves s + 2 l + 3 l rows and the last
  // s + 2 s + 3 c: the cost grows with the context.
  void KvCacheBackward() {
    const int64_t s = std::max<int64_t>(sequence_, c_ + l_);
    const bool later = c_ + l_ < s;
    const bool earlier = c_ > 0;
    const int64_t rows = s + 2 * (c_ + l_) + (later ? 3 * l_ : 0) + (earlier ? 3 * c_ : 0);
    const int kernels = 2 + (later ? 1 : 0) + (earlier ? 1 : 0);
    Memory("kv_cache.bwd", 2 * kFp16 * b_ * h_t_ * rows, 2 * kernels);
  }

  LayerOperatorOptions options_;
  int64_t b_ = 0, l_ = 0, c_ = 0, h_ = 0, d_ = 0, heads_ = 0, h_t_ = 0, f_t_ = 0, bl_ = 0;
  int64_t x_ = 0;
  int64_t t_ = 1;
  int64_t sequence_ = 0;  // the key/value cache's rows (eager variant)
  int64_t score_ = 0;
  std::vector<LayerOperator> ops_;
};

}  // namespace

const char* OperatorPassName(OperatorPass pass) {
  switch (pass) {
    case OperatorPass::kForward:
      return "forward";
    case OperatorPass::kBackwardInput:
      return "backward_input";
    case OperatorPass::kBackwardWeight:
      return "backward_weight";
    case OperatorPass::kRecompute:
      return "recompute";
    case OperatorPass::kRecomputeSelective:
      return "recompute_selective";
  }
  return "?";
}

const char* OperatorKindName(OperatorKind kind) {
  switch (kind) {
    case OperatorKind::kGemm:
      return "gemm";
    case OperatorKind::kMemory:
      return "memory";
    case OperatorKind::kCollective:
      return "collective";
  }
  return "?";
}

std::vector<LayerOperator> LayerOperators(const ModelCard& model, const SliceWork& work,
                                          OperatorPass pass, const LayerOperatorOptions& options) {
  OperatorList list(model, work, options);
  const bool attention = work.block != Block::kMlp;
  const bool mlp = work.block != Block::kAttention;
  // Accumulation moves a weight-sized fp16 gradient (passes - 1) more times.
  auto accumulate = [&](Block block) -> Bytes {
    return (options.weight_gradient_passes - 1) * kFp16 * LayerShardParams(model, work.tp, block);
  };
  switch (pass) {
    case OperatorPass::kForward:
    case OperatorPass::kRecompute:
      if (attention) list.AttentionForward(false);
      if (mlp) list.MlpForward();
      break;
    case OperatorPass::kRecomputeSelective:
      if (attention) list.AttentionForward(true);
      break;
    case OperatorPass::kBackwardInput:
      if (mlp) list.MlpBackwardInput();
      if (attention) list.AttentionBackwardInput();
      break;
    case OperatorPass::kBackwardWeight:
      if (mlp) list.MlpBackwardWeight(accumulate(Block::kMlp));
      if (attention) list.AttentionBackwardWeight(accumulate(Block::kAttention));
      break;
  }
  return list.Take();
}

std::vector<LayerOperator> LayerBackwardOperators(const ModelCard& model, const SliceWork& work,
                                                  const LayerOperatorOptions& options) {
  std::vector<LayerOperator> input =
      LayerOperators(model, work, OperatorPass::kBackwardInput, options);
  std::vector<LayerOperator> weight =
      LayerOperators(model, work, OperatorPass::kBackwardWeight, options);
  if (options.fused) {
    input.insert(input.end(), weight.begin(), weight.end());
    return input;
  }
  std::vector<bool> taken(weight.size(), false);
  std::vector<LayerOperator> out;
  out.reserve(input.size() + weight.size());
  // Moves the weight operators whose name is `stem` + `suffix` to `out` (no string is built:
  // the names are static).
  auto take = [&](std::string_view stem, std::string_view suffix) {
    for (size_t i = 0; i < weight.size(); ++i) {
      const std::string_view name = weight[i].name;
      if (!taken[i] && name.size() == stem.size() + suffix.size() && name.starts_with(stem) &&
          name.ends_with(suffix)) {
        taken[i] = true;
        out.push_back(weight[i]);
      }
    }
  };
  for (const LayerOperator& op : input) {
    const std::string_view name = op.name;
    // A block's bias gradients are the first nodes autograd runs in it (the bias add is the
    // linear's last forward op).
    if (name == "fc2.dX") take("mlp_bias_grads", "");
    if (name == "proj.dX") take("attn_bias_grads", "");
    out.push_back(op);
    // Each linear's weight gradient (X.dW) right after its input gradient (X.dX).
    if (name.size() > 3 && name.ends_with(".dX")) take(name.substr(0, name.size() - 3), ".dW");
  }
  // What is left: the accumulation `w.grad += grad_w`, after autograd.grad returns.
  for (size_t i = 0; i < weight.size(); ++i) {
    if (!taken[i]) out.push_back(weight[i]);
  }
  return out;
}

int64_t ScoreElements(const ModelCard& model, const SliceWork& work) {
  return work.rows * (model.heads / work.tp) * work.tokens * (work.context + work.tokens);
}

}  // namespace terasim

#include "models/layer_operators.h"

#include "models/errors.h"
#include "models/memory_model.h"

namespace terasim {
namespace {

constexpr int64_t kFp16 = 2;  // bytes per activation element

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
    ops_.push_back(op);
  }

  // The attention block, forward (or its selective recomputation: the core only).
  void AttentionForward(bool core_only) {
    const bool fused = options_.fused;
    if (!core_only) {
      Memory("ln1", 2 * kFp16 * x_);
      Gemm("qkv", 1, bl_, 3 * h_t_, h_);
      if (!fused) Memory("qkv_layout", 2 * kFp16 * 3 * bl_ * h_t_, 3);
      // The slice's keys and values joined to the context's: a copy of all c + l of them.
      if (!fused && c_ > 0) Memory("kv_concat", 2 * kFp16 * 2 * b_ * (c_ + l_) * h_t_, 2);
    }
    Gemm("scores", b_ * heads_, l_, c_ + l_, d_);
    if (fused) {
      Memory("scale_mask_softmax", 2 * kFp16 * score_);
    } else {
      Memory("scale", 2 * kFp16 * score_);
      Memory("mask", 2 * kFp16 * score_);
      Memory("softmax", 2 * kFp16 * score_);
    }
    Memory("attn_dropout", 2 * kFp16 * score_ + score_);  // in, out, 1-byte mask
    Gemm("attn_v", b_ * heads_, l_, d_, c_ + l_);
    if (core_only) return;
    if (!fused) Memory("context_layout", 2 * kFp16 * bl_ * h_t_);
    Gemm("proj", 1, bl_, h_, h_t_);
    DropoutResidual("dropout1", "residual1", "bias_dropout_add1");
  }

  void MlpForward() {
    Memory("ln2", 2 * kFp16 * x_);
    Gemm("fc1", 1, bl_, f_t_, h_);
    Memory(options_.fused ? "bias_gelu" : "gelu", 2 * kFp16 * bl_ * f_t_);
    Gemm("fc2", 1, bl_, h_, f_t_);
    DropoutResidual("dropout2", "residual2", "bias_dropout_add2");
  }

  void MlpBackwardInput() {
    Memory(options_.fused ? "bias_dropout_add2.bwd" : "dropout2.bwd", 2 * kFp16 * x_ + x_);
    Gemm("fc2.dX", 1, bl_, f_t_, h_);
    Memory("gelu.bwd", 3 * kFp16 * bl_ * f_t_);
    Gemm("fc1.dX", 1, bl_, h_, f_t_);
    Memory("ln2.bwd", 3 * kFp16 * x_, 2);
    Memory("grad_add2", 3 * kFp16 * x_);  // the residual's two gradients summed
  }

  void AttentionBackwardInput() {
    const bool fused = options_.fused;
    Memory(fused ? "bias_dropout_add1.bwd" : "dropout1.bwd", 2 * kFp16 * x_ + x_);
    Gemm("proj.dX", 1, bl_, h_t_, h_);
    if (!fused) Memory("context_layout.bwd", 2 * kFp16 * bl_ * h_t_);
    Gemm("attn_v.dP", b_ * heads_, l_, c_ + l_, d_);
    Gemm("attn_v.dV", b_ * heads_, c_ + l_, d_, l_);
    Memory("attn_dropout.bwd", 2 * kFp16 * score_ + score_);
    if (fused) {
      Memory("scale_mask_softmax.bwd", 3 * kFp16 * score_);
    } else {
      Memory("softmax.bwd", 3 * kFp16 * score_);
      Memory("mask.bwd", 2 * kFp16 * score_);
      Memory("scale.bwd", 2 * kFp16 * score_);
    }
    Gemm("scores.dQ", b_ * heads_, l_, d_, c_ + l_);
    Gemm("scores.dK", b_ * heads_, c_ + l_, d_, l_);
    // The gradients of the context's keys and values added into theirs.
    if (!fused && c_ > 0) Memory("kv_concat.bwd", 2 * kFp16 * 2 * b_ * (c_ + l_) * h_t_, 2);
    if (!fused) Memory("qkv_layout.bwd", 2 * kFp16 * 3 * bl_ * h_t_, 3);
    Gemm("qkv.dX", 1, bl_, h_, 3 * h_t_);
    Memory("ln1.bwd", 3 * kFp16 * x_, 2);
    Memory("grad_add1", 3 * kFp16 * x_);
  }

  void MlpBackwardWeight(Bytes accumulate_bytes) {
    Gemm("fc2.dW", 1, f_t_, h_, bl_);
    Gemm("fc1.dW", 1, h_, f_t_, bl_);
    Memory("mlp_bias_grads", kFp16 * bl_ * (h_ + f_t_), 2);
    if (accumulate_bytes > 0) Memory("mlp_grad_accumulate", accumulate_bytes, 2);
  }

  void AttentionBackwardWeight(Bytes accumulate_bytes) {
    Gemm("proj.dW", 1, h_t_, h_, bl_);
    Gemm("qkv.dW", 1, h_, 3 * h_t_, bl_);
    Memory("attn_bias_grads", kFp16 * bl_ * (h_ + 3 * h_t_), 2);
    if (accumulate_bytes > 0) Memory("attn_grad_accumulate", accumulate_bytes, 2);
  }

  std::vector<LayerOperator> Take() { return std::move(ops_); }
  int64_t score_elements() const { return score_; }

 private:
  void DropoutResidual(const char* dropout, const char* residual, const char* fused_name) {
    if (options_.fused) {
      Memory(fused_name, 3 * kFp16 * x_ + x_);  // two inputs, one output, the mask
    } else {
      Memory(dropout, 2 * kFp16 * x_ + x_);
      Memory(residual, 3 * kFp16 * x_);
    }
  }

  LayerOperatorOptions options_;
  int64_t b_ = 0, l_ = 0, c_ = 0, h_ = 0, d_ = 0, heads_ = 0, h_t_ = 0, f_t_ = 0, bl_ = 0;
  int64_t x_ = 0;
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

int64_t ScoreElements(const ModelCard& model, const SliceWork& work) {
  return work.rows * (model.heads / work.tp) * work.tokens * (work.context + work.tokens);
}

}  // namespace terasim

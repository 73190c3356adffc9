// The operators of one transformer layer: every GEMM and memory-bound kernel of a pass, with
// its shape, FLOPs and bytes moved, for one rank of a tensor-parallel group (DESIGN.md
// section 4; FACTS.md "Transformer arithmetic").
//
// A pre-LayerNorm GPT layer for b rows of a slice of l tokens after c tokens of context,
// hidden h, a heads of size d = h / a, MLP size f, tensor-parallel degree t (each rank holds
// a / t heads and f / t MLP columns):
//     attention  ln1, qkv (bl x 3h/t x h), scores (b a/t batches of l x (c+l) x d),
//                scale+mask, softmax, dropout (score-sized: b a/t l (c+l) elements),
//                attn_v (b a/t batches of l x d x (c+l)), proj (bl x h x h/t),
//                dropout + residual add
//     mlp        ln2, fc1 (bl x f/t x h), gelu, fc2 (bl x h x f/t), dropout + residual add
// The matmul FLOPs sum to 24 b l h^2 / t + 4 b l (c + l) h / t with f = 4h (memory-bound
// operators count no FLOPs, as the layer formula does). The fused variant is Megatron-LM's:
// scale-mask-softmax, bias-GeLU and bias-dropout-add fused, strided batched GEMMs instead of
// layout copies, a preallocated key/value buffer. The unfused ("eager") variant is
// TeraPipe's PyTorch layer as the paper's runs used it (layer_operators.cpp names the
// source): one kernel per PyTorch op, separate bias adds, LayerNorm in two kernels, the
// causal mask built per slice, softmax in fp32 and a cast back, no dropout, ReLU, and a
// sequence-long key/value cache whose gradient every slice's backward zero-fills and adds.
//
// Backward-input holds the input-gradient GEMMs (dX = dY W^T), both products of each
// attention matmul (they have no weights) and the backward of every memory-bound operator;
// backward-weight the weight-gradient GEMMs (dW = X^T dY), the bias gradients and, when
// weight_gradient_passes > 1, the accumulation of the weight gradients (fused: a pass over the
// buffer per extra pass; eager: `w.grad += grad_w` per tensor, three times the bytes). kRecompute
// is the forward again (full recomputation); kRecomputeSelective the attention core only (scores,
// softmax, dropout, attn_v: Korthikanti et al. 2022). Sequence parallelism divides the
// LayerNorm, dropout and residual tensors by t.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "models/compute_cost.h"
#include "models/model_card.h"
#include "models/units.h"

namespace terasim {

enum class OperatorPass {
  kForward,
  kBackwardInput,
  kBackwardWeight,
  kRecompute,           // full recomputation: the forward again before the backward
  kRecomputeSelective,  // the attention core again (scores, softmax, dropout, attn_v)
};

// "forward", "backward_input", "backward_weight", "recompute", "recompute_selective".
const char* OperatorPassName(OperatorPass pass);

enum class OperatorKind {
  kGemm,    // a (batched) matrix multiply: tensor cores, tile and wave quantization
  kMemory,  // elementwise, reduction or copy: bytes over the memory bandwidth
  // A tensor-parallel collective's call on the host (LayerOperatorOptions::tp_collectives):
  // no kernel on the compute stream, no FLOPs, no bytes (the network model costs the
  // collective itself); the host pays OperatorModelParams::collective_host_ns to issue it.
  kCollective,
};

// "gemm", "memory", "collective".
const char* OperatorKindName(OperatorKind kind);

struct LayerOperator {
  const char* name = "";  // e.g. "qkv", "softmax", "fc1.dW"; static storage
  OperatorKind kind = OperatorKind::kMemory;
  // GEMM shape: `batch` independent products of (m x k) by (k x n); 0 for memory operators.
  int64_t batch = 0;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  Flops flops = 0;  // 2 batch m n k for GEMMs, 0 otherwise
  Bytes bytes = 0;  // read and written from device memory, fp16 tensors, 1-byte masks
  int kernels = 1;  // kernel launches it takes (0 for kCollective)
  // Memory operators that do not stream contiguous tensors: a row reduction (LayerNorm,
  // softmax, bias gradients), a broadcast over heads (the mask), or a copy that permutes or
  // reads a strided view (layout copies, the chunked q, the causal mask's triu and cat, writes
  // into the key/value cache). They run at OperatorModelParams::layout_memory_efficiency.
  bool layout = false;
};

struct LayerOperatorOptions {
  bool fused = false;
  bool sequence_parallel = false;
  int weight_gradient_passes = 1;  // see ComputeModelParams::weight_gradient_passes
  // Eager only: false runs TeraPipe's layer without its key/value cache (full_cache=None, as
  // its single-device latency script times a layer at context 0): keys and values straight
  // from the QKV output, the mask without the context's zeros, no cache writes and no
  // sequence-long cache gradient. Precondition when false: context 0.
  bool kv_cache = true;
  // At tp > 1, the host's calls of the tensor-parallel collectives (kCollective), two per
  // pass as Megatron-LM's layers issue them: forward, the row-parallel reduce after proj and
  // after fc2 ("proj.allreduce", "fc2.allreduce"); backward-input, the column-parallel
  // input gradient's after qkv.dX and fc1.dX ("qkv.dX.allreduce", "fc1.dX.allreduce").
  // False: none listed (a device without collective_host_ns).
  bool tp_collectives = false;
};

// The operators of one layer (or one block of it: work.block) for `pass` on one rank, in the
// order they run. work.pass and work.layers are ignored. Preconditions: work.rows >= 1,
// tokens >= 0, context >= 0, tp >= 1 divides the heads.
std::vector<LayerOperator> LayerOperators(const ModelCard& model, const SliceWork& work,
                                          OperatorPass pass, const LayerOperatorOptions& options);

// The backward-input and backward-weight operators of one layer (or block) in the order a
// whole backward issues them. Fused (Megatron-LM): backward-input, then backward-weight, as
// LayerOperators gives them. Eager (TeraPipe: one torch.autograd.grad over the stage, then
// `w.grad += grad_w` per tensor): autograd's order, each linear's bias gradient before and
// its weight gradient (X.dW) right after its input gradient (X.dX); the accumulation last.
// The same operators either way, reordered.
std::vector<LayerOperator> LayerBackwardOperators(const ModelCard& model, const SliceWork& work,
                                                  const LayerOperatorOptions& options);

// The elements of one score-sized tensor on one rank: b (a / t) l (c + l).
int64_t ScoreElements(const ModelCard& model, const SliceWork& work);

}  // namespace terasim

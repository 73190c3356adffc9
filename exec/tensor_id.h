// TensorId: the parsed form of the tensor identities the executor moves (schedule/README.md,
// "Tensor identities"): act.l{L}.m{mb}.t{t0}-{t1}, grad.l{L}..., tpf.l{L}.{attn|mlp}.m.t,
// tpb..., wgrad.s{stage}.r{tp}; act and grad may carry a per-tp-rank copy suffix .r{tp}.
// A RECOMPUTE split over a tp group: tpr.* (its all-reduce), tprg / tprs (sp), as tpf.
// Today's recipes (schedule/generator.cpp names them): sequence parallelism's gathers
// tpfg / tpbg and scatters tpfs / tpbs (as tpf), and spgrad.s{stage}.d{replica} (the tp sum
// of the replicated parameters' gradients); ZeRO's wgrad.l{L}.u{unit}.t{t0}-{t1}.r{tp} (one
// layer's gradients of one unit), param.l{L}.{F|B}.u.t.r{tp} (one layer's parameters) and
// step.s{stage}.r{tp} (a stage's parameters after the optimizer step).
#pragma once

#include <string>
#include <string_view>

#include "schedule/op.h"

namespace terasim {

enum class TensorKind {
  kActivation,      // act.*: input activation of layer L
  kGradient,        // grad.*: its gradient
  kTpForward,       // tpf.*: tp sum of a block's forward partial outputs
  kTpBackward,      // tpb.*: tp sum of a block's backward partial input gradients
  kWeightGradient,  // wgrad.s*: a stage shard's weight gradients
  kSpGather,        // tpfg.* / tpbg.*: a sequence-parallel block's gathered input
  kSpScatter,       // tpfs.* / tpbs.*: its partial output, reduce-scattered
  kSpGradient,      // spgrad.s*: a stage's replicated parameters' gradients
  kLayerGradient,   // wgrad.l*: one layer's weight gradients of one unit (ZeRO-3)
  kLayerParams,     // param.l*: one layer's parameters (ZeRO-3)
  kStageParams,     // step.s*: a stage's parameters (ZeRO-1 and 2)
  kBarrier,         // barrier.*: the flattened dp step's barrier (one element, summed)
  kOther,           // anything else: moved as an opaque buffer
};

struct TensorId {
  TensorKind kind = TensorKind::kOther;
  int layer = -1;
  LayerPart part = LayerPart::kWhole;
  int microbatch = -1;
  Range tokens;
  int stage = -1;          // wgrad.s, spgrad, step
  int bucket = -1;         // wgrad.s{S}.b{k}.r{tp}: a dp bucket (the op's layers of stage S)
  bool backward = false;   // tpb, tpbg, tpbs
  bool recompute = false;  // tpr, tprg, tprs: the recomputed forward (kind as tpf's)
  int tp_copy = -1;        // the .r{tp} suffix, -1 without one
  std::string store_key;   // the identity in a device's tensor store (act/grad copies stripped)
};

// Parses an identity; never throws (an unrecognized one is kOther with store_key = text).
TensorId ParseTensorId(const std::string& text);

// "act.l{layer}.m{mb}.t{t0}-{t1}" and friends, without copy suffix.
std::string ActivationKey(int layer, int microbatch, Range tokens);
std::string GradientKey(int layer, int microbatch, Range tokens);
// "tpf.l{layer}.{attn|mlp}.m{mb}.t{t0}-{t1}" (backward: "tpb...").
std::string TpSumKey(bool backward, int layer, LayerPart part, int microbatch, Range tokens);
// Sequence parallelism: "tpfg..." (the gathered input; `gather` false: "tpfs...", the
// partial output), backward "tpbg..." / "tpbs...".
std::string SpKey(bool gather, bool backward, int layer, LayerPart part, int microbatch,
                  Range tokens);
// A split RECOMPUTE's: "tpr..." (`sp` empty), "tprg..." (`sp` "g"), "tprs..." (`sp` "s").
std::string RecomputeKey(std::string_view sp, int layer, LayerPart part, int microbatch,
                         Range tokens);

}  // namespace terasim

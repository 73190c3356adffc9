// TensorId: the parsed form of the tensor identities the executor moves (schedule/README.md,
// "Tensor identities"): act.l{L}.m{mb}.t{t0}-{t1}, grad.l{L}..., tpf.l{L}.{attn|mlp}.m.t,
// tpb..., wgrad.s{stage}.r{tp}; act and grad may carry a per-tp-rank copy suffix .r{tp}.
#pragma once

#include <string>

#include "schedule/op.h"

namespace terasim {

enum class TensorKind {
  kActivation,      // act.*: input activation of layer L
  kGradient,        // grad.*: its gradient
  kTpForward,       // tpf.*: tp sum of a block's forward partial outputs
  kTpBackward,      // tpb.*: tp sum of a block's backward partial input gradients
  kWeightGradient,  // wgrad.*: a stage shard's weight gradients
  kOther,           // anything else: moved as an opaque buffer
};

struct TensorId {
  TensorKind kind = TensorKind::kOther;
  int layer = -1;
  LayerPart part = LayerPart::kWhole;
  int microbatch = -1;
  Range tokens;
  int stage = -1;         // wgrad only
  int tp_copy = -1;       // the .r{tp} suffix, -1 without one
  std::string store_key;  // the identity in a device's tensor store (act/grad copies stripped)
};

// Parses an identity; never throws (an unrecognized one is kOther with store_key = text).
TensorId ParseTensorId(const std::string& text);

// "act.l{layer}.m{mb}.t{t0}-{t1}" and friends, without copy suffix.
std::string ActivationKey(int layer, int microbatch, Range tokens);
std::string GradientKey(int layer, int microbatch, Range tokens);
// "tpf.l{layer}.{attn|mlp}.m{mb}.t{t0}-{t1}" (backward: "tpb...").
std::string TpSumKey(bool backward, int layer, LayerPart part, int microbatch, Range tokens);

}  // namespace terasim

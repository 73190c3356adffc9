#include "exec/tensor_id.h"

#include <charconv>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "schedule/key_fields.h"

namespace terasim {

namespace {

bool ParseTokens(std::string_view field, Range& tokens) {
  if (field.size() < 4 || field[0] != 't') return false;
  const size_t dash = field.find('-');
  if (dash == std::string_view::npos) return false;
  const char* end = field.data() + field.size();
  auto r1 = std::from_chars(field.data() + 1, field.data() + dash, tokens.begin);
  auto r2 = std::from_chars(field.data() + dash + 1, end, tokens.end);
  return r1.ec == std::errc() && r1.ptr == field.data() + dash && r2.ec == std::errc() &&
         r2.ptr == end;
}

std::string_view PartName(LayerPart part) { return part == LayerPart::kMlp ? "mlp" : "attn"; }

}  // namespace

TensorId ParseTensorId(const std::string& text) {
  TensorId id;
  id.store_key = text;
  const std::vector<std::string_view> f = SplitDots(text);
  if (f.empty()) return id;
  if (f[0] == "act" || f[0] == "grad") {
    if (f.size() != 4 && f.size() != 5) return id;
    TensorId parsed;
    parsed.kind = f[0] == "act" ? TensorKind::kActivation : TensorKind::kGradient;
    if (!ParseTagged(f[1], 'l', parsed.layer) || !ParseTagged(f[2], 'm', parsed.microbatch) ||
        !ParseTokens(f[3], parsed.tokens)) {
      return id;
    }
    if (f.size() == 5 && !ParseTagged(f[4], 'r', parsed.tp_copy)) return id;
    parsed.store_key = parsed.kind == TensorKind::kActivation
                           ? ActivationKey(parsed.layer, parsed.microbatch, parsed.tokens)
                           : GradientKey(parsed.layer, parsed.microbatch, parsed.tokens);
    return parsed;
  }
  const bool sp_gather = f[0] == "tpfg" || f[0] == "tpbg" || f[0] == "tprg";
  const bool sp_scatter = f[0] == "tpfs" || f[0] == "tpbs" || f[0] == "tprs";
  if (f[0] == "tpf" || f[0] == "tpb" || f[0] == "tpr" || sp_gather || sp_scatter) {
    if (f.size() != 5) return id;
    TensorId parsed;
    parsed.backward = f[0][2] == 'b';
    parsed.recompute = f[0][2] == 'r';
    parsed.kind = sp_gather         ? TensorKind::kSpGather
                  : sp_scatter      ? TensorKind::kSpScatter
                  : parsed.backward ? TensorKind::kTpBackward
                                    : TensorKind::kTpForward;
    if (f[2] == "attn") {
      parsed.part = LayerPart::kAttention;
    } else if (f[2] == "mlp") {
      parsed.part = LayerPart::kMlp;
    } else {
      return id;
    }
    if (!ParseTagged(f[1], 'l', parsed.layer) || !ParseTagged(f[3], 'm', parsed.microbatch) ||
        !ParseTokens(f[4], parsed.tokens)) {
      return id;
    }
    parsed.store_key = text;
    return parsed;
  }
  if ((f[0] == "wgrad" || f[0] == "param") && f.size() == (f[0] == "wgrad" ? 5u : 6u)) {
    // wgrad.l{L}.u{unit}.t{t0}-{t1}.r{tp}, param.l{L}.{F|B}.u{unit}.t{t0}-{t1}.r{tp}
    TensorId parsed;
    parsed.kind = f[0] == "wgrad" ? TensorKind::kLayerGradient : TensorKind::kLayerParams;
    if (!ParseTagged(f[1], 'l', parsed.layer) || !ParseTagged(f.back(), 'r', parsed.tp_copy)) {
      return id;
    }
    parsed.store_key = text;
    return parsed;
  }
  if (f[0] == "spgrad" || f[0] == "step") {
    // spgrad.s{stage}.d{replica}, step.s{stage}.r{tp}
    TensorId parsed;
    parsed.kind = f[0] == "spgrad" ? TensorKind::kSpGradient : TensorKind::kStageParams;
    if (f.size() != 3 || !ParseTagged(f[1], 's', parsed.stage)) return id;
    parsed.store_key = text;
    return parsed;
  }
  if (f[0] == "wgrad") {
    // wgrad.s{S}[.r{tp}], a bucket wgrad.s{S}.b{k}.r{tp}
    if (f.size() < 2 || f.size() > 4) return id;
    TensorId parsed;
    parsed.kind = TensorKind::kWeightGradient;
    if (!ParseTagged(f[1], 's', parsed.stage)) return id;
    if (f.size() == 4 && !ParseTagged(f[2], 'b', parsed.bucket)) return id;
    if (f.size() >= 3 && !ParseTagged(f.back(), 'r', parsed.tp_copy)) return id;
    parsed.store_key = text;
    return parsed;
  }
  if (f[0] == "barrier") {
    TensorId parsed;
    parsed.kind = TensorKind::kBarrier;
    parsed.store_key = text;
    return parsed;
  }
  return id;
}

std::string ActivationKey(int layer, int microbatch, Range tokens) {
  return fmt::format("act.l{}.m{}.t{}-{}", layer, microbatch, tokens.begin, tokens.end);
}

std::string GradientKey(int layer, int microbatch, Range tokens) {
  return fmt::format("grad.l{}.m{}.t{}-{}", layer, microbatch, tokens.begin, tokens.end);
}

std::string SpKey(bool gather, bool backward, int layer, LayerPart part, int microbatch,
                  Range tokens) {
  return fmt::format("tp{}{}.l{}.{}.m{}.t{}-{}", backward ? 'b' : 'f', gather ? 'g' : 's', layer,
                     PartName(part), microbatch, tokens.begin, tokens.end);
}

std::string RecomputeKey(std::string_view sp, int layer, LayerPart part, int microbatch,
                         Range tokens) {
  return fmt::format("tpr{}.l{}.{}.m{}.t{}-{}", sp, layer, PartName(part), microbatch, tokens.begin,
                     tokens.end);
}

std::string TpSumKey(bool backward, int layer, LayerPart part, int microbatch, Range tokens) {
  return fmt::format("{}.l{}.{}.m{}.t{}-{}", backward ? "tpb" : "tpf", layer, PartName(part),
                     microbatch, tokens.begin, tokens.end);
}

}  // namespace terasim

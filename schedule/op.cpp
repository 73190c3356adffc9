#include "schedule/op.h"

#include <array>
#include <utility>

namespace terasim {
namespace {

constexpr std::array<std::pair<OpKind, std::string_view>, 12> kKindNames = {{
    {OpKind::kFwd, "FWD"},
    {OpKind::kBwd, "BWD"},
    {OpKind::kBwdInput, "BWD_INPUT"},
    {OpKind::kBwdWeight, "BWD_WEIGHT"},
    {OpKind::kSend, "SEND"},
    {OpKind::kRecv, "RECV"},
    {OpKind::kAllReduce, "ALLREDUCE"},
    {OpKind::kAllGather, "ALLGATHER"},
    {OpKind::kReduceScatter, "REDUCE_SCATTER"},
    {OpKind::kBroadcast, "BROADCAST"},
    {OpKind::kOptimizer, "OPTIMIZER"},
    {OpKind::kRecompute, "RECOMPUTE"},
}};

}  // namespace

std::string_view OpKindName(OpKind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "?";
}

std::optional<OpKind> ParseOpKind(std::string_view name) {
  for (const auto& [k, n] : kKindNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

bool IsLayerCompute(OpKind kind) {
  return kind == OpKind::kFwd || kind == OpKind::kBwd || kind == OpKind::kBwdInput ||
         kind == OpKind::kBwdWeight || kind == OpKind::kRecompute;
}

bool IsCompute(OpKind kind) { return IsLayerCompute(kind) || kind == OpKind::kOptimizer; }

bool IsPointToPoint(OpKind kind) { return kind == OpKind::kSend || kind == OpKind::kRecv; }

bool IsCollective(OpKind kind) {
  return kind == OpKind::kAllReduce || kind == OpKind::kAllGather ||
         kind == OpKind::kReduceScatter || kind == OpKind::kBroadcast;
}

bool IsBackwardCoverage(OpKind kind) { return kind == OpKind::kBwd || kind == OpKind::kBwdInput; }

std::string_view LayerPartName(LayerPart part) {
  switch (part) {
    case LayerPart::kWhole:
      return "";
    case LayerPart::kAttention:
      return "attn";
    case LayerPart::kMlp:
      return "mlp";
  }
  return "?";
}

std::string RecipeFeature(const Op& op) {
  if (op.kind == OpKind::kRecompute) return "RECOMPUTE";
  if (op.recompute != Recompute::kNone)
    return "recompute=" + std::string(RecomputeName(op.recompute));
  if (op.sequence_parallel) return "sp=1";
  if (op.zero > 0) return "zero=" + std::to_string(op.zero);
  return "";
}

}  // namespace terasim

#include "sim/op_work.h"

#include <algorithm>

#include "models/errors.h"

namespace terasim {

SliceWork SliceWorkOf(const Schedule& schedule, const Op& op) {
  TERASIM_CHECK(IsCompute(op.kind), "{} is not a compute op", op.key);
  SliceWork work;
  switch (op.kind) {
    case OpKind::kFwd:
    case OpKind::kRecompute:  // full recomputation: one forward again
      work.pass = Pass::kForward;
      break;
    case OpKind::kBwd:
      work.pass = Pass::kBackward;
      break;
    case OpKind::kBwdInput:
      work.pass = Pass::kBackwardInput;
      break;
    case OpKind::kBwdWeight:
      work.pass = Pass::kBackwardWeight;
      break;
    default:
      work.pass = Pass::kOptimizer;
      break;
  }
  work.layers = std::max(1, op.layers.Length());
  work.block = op.part == LayerPart::kAttention ? Block::kAttention
               : op.part == LayerPart::kMlp     ? Block::kMlp
                                                : Block::kWhole;
  work.rows = std::max(1, op.rows);
  work.tokens = op.tokens.Length();
  work.context = op.tokens.begin;
  work.tp = 1;
  work.recompute_attention = op.recompute == Recompute::kSelective &&
                             (op.kind == OpKind::kBwd || op.kind == OpKind::kBwdInput);
  if (op.kind == OpKind::kOptimizer && op.zero > 0) {
    // A ZeRO optimizer updates its 1 / D share of the stage's tp shard.
    const int group = schedule.FindGroup(op.group);
    const int dp = group < 0 ? 1 : static_cast<int>(schedule.groups[group].ranks.size());
    work.tp = std::max(1, schedule.shape.tp) * std::max(1, dp);
    return work;
  }
  if (!op.group.empty()) {
    const int group = schedule.FindGroup(op.group);
    if (group >= 0) work.tp = static_cast<int>(schedule.groups[group].ranks.size());
  } else if (op.kind == OpKind::kOptimizer) {
    work.tp = std::max(1, schedule.shape.tp);
  }
  return work;
}

}  // namespace terasim

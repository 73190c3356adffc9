#include "schedule/pipeline_order.h"

#include <algorithm>

namespace terasim {
namespace {

struct Unit {
  int microbatch;
  int slice;
};

// Units in forward order: micro-batches ascending, slices ascending.
std::vector<Unit> ForwardUnits(const std::vector<int>& slices_per_microbatch) {
  std::vector<Unit> units;
  for (int m = 0; m < static_cast<int>(slices_per_microbatch.size()); ++m) {
    for (int i = 0; i < slices_per_microbatch[m]; ++i) units.push_back({m, i});
  }
  return units;
}

// Units in 1F1B backward order: micro-batches ascending, slices descending.
std::vector<Unit> BackwardUnits(const std::vector<int>& slices_per_microbatch) {
  std::vector<Unit> units;
  for (int m = 0; m < static_cast<int>(slices_per_microbatch.size()); ++m) {
    for (int i = slices_per_microbatch[m] - 1; i >= 0; --i) units.push_back({m, i});
  }
  return units;
}

// Megatron-LM's step k (forward or backward) of the interleaved schedule with micro-batch
// groups of `group` (G in pipeline_order.h).
PipelineStep InterleavedStep(int group, int virtual_stages, int k, bool forward) {
  const int span = group * virtual_stages;  // steps per group: G micro-batches x V chunks
  const int in_group = k % span;
  int chunk = in_group / group;
  if (!forward) chunk = virtual_stages - 1 - chunk;
  return {forward, (k / span) * group + k % group, 0, chunk};
}

}  // namespace

int OneFOneBWarmup(int pp, int rank, const std::vector<int>& slices_per_microbatch) {
  int units = 0;
  int max_slices = 1;
  for (int n : slices_per_microbatch) {
    units += n;
    max_slices = std::max(max_slices, n);
  }
  return std::min(pp - rank - 1 + max_slices - 1, units);
}

int InterleavedRounds(int pp, int microbatches) { return std::max(1, microbatches / pp); }

bool InterleavedSupports(int pp, int microbatches) {
  return microbatches < pp || microbatches % InterleavedRounds(pp, microbatches) == 0;
}

int InterleavedGroup(int pp, int microbatches) {
  return microbatches < pp ? microbatches : microbatches / InterleavedRounds(pp, microbatches);
}

int InterleavedWarmup(int pp, int virtual_stages, int rank, int microbatches) {
  const int total = microbatches * virtual_stages;
  if (microbatches < pp) return total;
  const int group = InterleavedGroup(pp, microbatches);
  return std::min((virtual_stages - 1) * group + 2 * (pp - rank - 1), total);
}

std::vector<PipelineStep> FlushOrder(const std::vector<int>& slices_per_microbatch,
                                     bool backward_in_forward_order) {
  std::vector<Unit> units = ForwardUnits(slices_per_microbatch);
  std::vector<PipelineStep> steps;
  for (const Unit& u : units) steps.push_back({true, u.microbatch, u.slice, 0});
  if (backward_in_forward_order) {
    for (const Unit& u : BackwardUnits(slices_per_microbatch)) {
      steps.push_back({false, u.microbatch, u.slice, 0});
    }
    return steps;
  }
  for (auto it = units.rbegin(); it != units.rend(); ++it) {
    steps.push_back({false, it->microbatch, it->slice, 0});
  }
  return steps;
}

int ZeroBubbleWarmup(ZeroBubble variant, int pp, int rank, int microbatches) {
  const int warmup = variant == ZeroBubble::kH1 ? pp - rank - 1 : 2 * (pp - rank - 1);
  return std::min(warmup, microbatches);
}

int ZeroBubbleLag(ZeroBubble variant, int rank) {
  return variant == ZeroBubble::kH1 ? rank : 2 * rank;
}

std::vector<PipelineStep> ZeroBubbleOrder(ZeroBubble variant, int pp, int rank, int microbatches) {
  const int warmup = ZeroBubbleWarmup(variant, pp, rank, microbatches);
  const int lag = ZeroBubbleLag(variant, rank);
  std::vector<PipelineStep> steps;
  for (int m = 0; m < warmup; ++m) steps.push_back({true, m, 0, 0});
  int next_forward = warmup;
  int next_weight = 0;
  for (int b = 0; b < microbatches; ++b) {
    if (next_forward < microbatches) steps.push_back({true, next_forward++, 0, 0});
    steps.push_back({false, b, 0, 0, BackwardPart::kInput});
    while (b + 1 - next_weight > lag) {
      steps.push_back({false, next_weight++, 0, 0, BackwardPart::kWeight});
    }
  }
  while (next_weight < microbatches) {
    steps.push_back({false, next_weight++, 0, 0, BackwardPart::kWeight});
  }
  return steps;
}

std::vector<PipelineStep> LoopedBfsOrder(int virtual_stages, int microbatches) {
  std::vector<PipelineStep> steps;
  for (int c = 0; c < virtual_stages; ++c) {
    for (int m = 0; m < microbatches; ++m) steps.push_back({true, m, 0, c});
  }
  for (int c = virtual_stages - 1; c >= 0; --c) {
    for (int m = microbatches - 1; m >= 0; --m) steps.push_back({false, m, 0, c});
  }
  return steps;
}

std::vector<PipelineStep> OneFOneBOrder(int pp, int rank,
                                        const std::vector<int>& slices_per_microbatch) {
  const std::vector<Unit> forward = ForwardUnits(slices_per_microbatch);
  const std::vector<Unit> backward = BackwardUnits(slices_per_microbatch);
  const int units = static_cast<int>(forward.size());
  const int warmup = OneFOneBWarmup(pp, rank, slices_per_microbatch);
  std::vector<PipelineStep> steps;
  for (int k = 0; k < warmup; ++k) steps.push_back({true, forward[k].microbatch, forward[k].slice});
  for (int k = 0; k < units - warmup; ++k) {
    const Unit& f = forward[warmup + k];
    steps.push_back({true, f.microbatch, f.slice, 0});
    steps.push_back({false, backward[k].microbatch, backward[k].slice, 0});
  }
  for (int k = units - warmup; k < units; ++k) {
    steps.push_back({false, backward[k].microbatch, backward[k].slice, 0});
  }
  return steps;
}

std::vector<PipelineStep> InterleavedOrder(int pp, int virtual_stages, int rank, int microbatches) {
  const int total = microbatches * virtual_stages;
  const int warmup = InterleavedWarmup(pp, virtual_stages, rank, microbatches);
  const int group = InterleavedGroup(pp, microbatches);
  std::vector<PipelineStep> steps;
  for (int k = 0; k < warmup; ++k) steps.push_back(InterleavedStep(group, virtual_stages, k, true));
  for (int k = 0; k < total - warmup; ++k) {
    steps.push_back(InterleavedStep(group, virtual_stages, warmup + k, true));
    steps.push_back(InterleavedStep(group, virtual_stages, k, false));
  }
  for (int k = total - warmup; k < total; ++k) {
    steps.push_back(InterleavedStep(group, virtual_stages, k, false));
  }
  return steps;
}

}  // namespace terasim

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

int InterleavedZeroBubbleWarmup(int pp, int virtual_stages, int rank, int microbatches) {
  const int group = InterleavedGroup(pp, microbatches);
  return std::min((virtual_stages - 1) * group + pp - rank - 1, microbatches * virtual_stages);
}

std::vector<PipelineStep> InterleavedZeroBubbleOrder(int pp, int virtual_stages, int rank,
                                                     int microbatches) {
  const int total = microbatches * virtual_stages;
  const int warmup = InterleavedZeroBubbleWarmup(pp, virtual_stages, rank, microbatches);
  const int group = InterleavedGroup(pp, microbatches);
  auto backward = [&](int k, BackwardPart part) {
    PipelineStep step = InterleavedStep(group, virtual_stages, k, false);
    step.part = part;
    return step;
  };
  std::vector<PipelineStep> steps;
  for (int k = 0; k < warmup; ++k) steps.push_back(InterleavedStep(group, virtual_stages, k, true));
  int next_weight = 0;
  for (int k = 0; k < total; ++k) {
    if (warmup + k < total)
      steps.push_back(InterleavedStep(group, virtual_stages, warmup + k, true));
    steps.push_back(backward(k, BackwardPart::kInput));
    if (k >= rank) steps.push_back(backward(next_weight++, BackwardPart::kWeight));
  }
  while (next_weight < total) steps.push_back(backward(next_weight++, BackwardPart::kWeight));
  return steps;
}

int VShapeRank(int pp, int stage) { return stage < pp ? stage : 2 * pp - 1 - stage; }

namespace {

// Per-chunk counters of a V schedule: each action takes the next micro-batch of its chunk and
// kind; the split backwards queue their weight gradients.
class VSteps {
 public:
  void Forward(int chunk) { steps_.push_back({true, forwards_[chunk]++, 0, chunk}); }
  // A whole backward, or its input-gradient half (its W queued).
  void Backward(int chunk, bool split) {
    const int mb = backwards_[chunk]++;
    steps_.push_back({false, mb, 0, chunk, split ? BackwardPart::kInput : BackwardPart::kWhole});
    if (split) pending_.push_back({false, mb, 0, chunk, BackwardPart::kWeight});
  }
  // The oldest queued weight gradient (of any chunk), if any.
  void OldestWeight() {
    if (pending_.empty()) return;
    steps_.push_back(pending_.front());
    pending_.erase(pending_.begin());
  }
  // The oldest queued weight gradient of `chunk`; false when it has none.
  bool OldestWeight(int chunk) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->chunk == chunk) {
        steps_.push_back(*it);
        pending_.erase(it);
        return true;
      }
    }
    return false;
  }
  int Forwards(int chunk) const { return forwards_[chunk]; }
  std::vector<PipelineStep> Take() { return std::move(steps_); }

 private:
  int forwards_[2] = {0, 0};
  int backwards_[2] = {0, 0};
  std::vector<PipelineStep> pending_;
  std::vector<PipelineStep> steps_;
};

}  // namespace

std::vector<PipelineStep> ZbvOrder(int pp, int rank, int microbatches) {
  const int n = std::max(microbatches, 2 * pp - 1);
  VSteps v;
  for (int i = 0; i < 2 * (pp - rank) - 1; ++i) v.Forward(0);
  for (int i = 0; i < rank; ++i) {
    v.Forward(1);
    v.Forward(0);
  }
  for (int i = 0; i < pp - rank; ++i) {
    v.Forward(1);
    v.Backward(1, true);
    v.OldestWeight(1);
  }
  while (v.Forwards(1) < v.Forwards(0) || v.Forwards(0) < n) {
    if (v.Forwards(0) < n) v.Forward(0);
    v.Backward(0, true);
    v.OldestWeight(0);
    v.Forward(1);
    v.Backward(1, true);
    v.OldestWeight(1);
  }
  for (int i = 0; i < rank; ++i) {
    v.Backward(0, true);
    v.Backward(1, true);
  }
  for (int i = 0; i < pp - rank; ++i) {
    v.Backward(0, true);
    v.OldestWeight(0);
  }
  while (v.OldestWeight(1)) {
  }
  while (v.OldestWeight(0)) {
  }
  // The padding micro-batches of n > M.
  std::vector<PipelineStep> steps = v.Take();
  std::erase_if(steps, [&](const PipelineStep& s) { return s.microbatch >= microbatches; });
  return steps;
}

bool DualPipeVSupports(int pp, int microbatches) { return microbatches >= 2 * pp; }

std::vector<PipelineStep> DualPipeVOrder(int pp, int rank, int microbatches) {
  VSteps v;
  const int before = pp - rank - 1;  // ranks after this one
  for (int i = 0; i < 2 * before; ++i) v.Forward(0);
  for (int i = 0; i <= rank; ++i) {
    v.Forward(0);
    v.Forward(1);
  }
  for (int i = 0; i < before; ++i) {
    v.Backward(1, true);
    v.OldestWeight();
    v.Forward(1);
  }
  // Main step: each pair (a forward, a whole backward of the other chunk) in that order.
  for (int i = 0; i < microbatches - 2 * pp + rank + 1; ++i) {
    v.Forward(0);
    v.Backward(1, false);
    v.Forward(1);
    v.Backward(0, false);
  }
  for (int i = 0; i < before; ++i) {
    v.Backward(1, false);
    v.Forward(1);
    v.Backward(0, false);
  }
  // From the middle of these on, backwards are split and their Ws deferred; an odd rank
  // splits its chunk-1 backward of the middle pair too, an even rank only the chunk-0 one.
  bool split = false;
  const int middle = (rank + 1) / 2;
  for (int i = 0; i <= rank; ++i) {
    if (i == middle && rank % 2 == 1) split = true;
    v.Backward(1, split);
    if (i == middle && rank % 2 == 0) split = true;
    v.Backward(0, split);
  }
  for (int i = 0; i < before; ++i) {
    v.OldestWeight();
    v.Backward(0, split);
  }
  for (int i = 0; i <= rank; ++i) v.OldestWeight();
  return v.Take();
}

int PeakChunksInFlight(const std::vector<PipelineStep>& steps) {
  int now = 0;
  int peak = 0;
  for (const PipelineStep& step : steps) {
    if (step.forward) {
      peak = std::max(peak, ++now);
    } else if (step.part != BackwardPart::kInput) {
      --now;
    }
  }
  return peak;
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

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

int InterleavedGroup(int pp, int microbatches) { return microbatches < pp ? microbatches : pp; }

int InterleavedWarmup(int pp, int virtual_stages, int rank, int microbatches) {
  const int total = microbatches * virtual_stages;
  if (microbatches <= pp) return total;
  return std::min((pp - rank - 1) * 2 + (virtual_stages - 1) * pp, total);
}

std::vector<PipelineStep> FlushOrder(const std::vector<int>& slices_per_microbatch) {
  std::vector<Unit> units = ForwardUnits(slices_per_microbatch);
  std::vector<PipelineStep> steps;
  for (const Unit& u : units) steps.push_back({true, u.microbatch, u.slice, 0});
  for (auto it = units.rbegin(); it != units.rend(); ++it) {
    steps.push_back({false, it->microbatch, it->slice, 0});
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

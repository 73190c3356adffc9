// The compute cost interface: how long a piece of layer math takes on one device.
//
// models/ cannot see the schedule IR, so the simulator and planners describe an op as a
// SliceWork. Implementations (the roofline model, the calibration-table model, test fakes)
// sit behind ComputeCostModel; they are immutable after construction and thread-safe.
#pragma once

#include <string>

#include "models/units.h"

namespace terasim {

enum class Pass {
  kForward,
  kBackward,        // input and weight gradients together
  kBackwardInput,   // input gradients only
  kBackwardWeight,  // weight gradients only
  kOptimizer,       // the optimizer step over the layers' parameters (tokens, rows unused)
};

enum class Block {
  kWhole,      // whole layers
  kAttention,  // the attention half of one layer (tensor-parallel split)
  kMlp,        // the MLP half of one layer
};

// One compute op: `layers` consecutive layers (1 when block != kWhole) of a token slice of
// `tokens` tokens after `context` tokens, for `rows` sequences, sharded `tp` ways.
struct SliceWork {
  Pass pass = Pass::kForward;
  int layers = 1;
  Block block = Block::kWhole;
  int rows = 1;
  int64_t tokens = 0;
  int64_t context = 0;
  int tp = 1;
  // Selective activation recomputation: a backward (kBackward, kBackwardInput) first recomputes
  // the attention core's forward (scores and their product with V) that its forward dropped.
  bool recompute_attention = false;
};

class ComputeCostModel {
 public:
  virtual ~ComputeCostModel() = default;
  // Time of `work` on one device; > 0 for any work with layers > 0.
  virtual TimeNs Time(const SliceWork& work) const = 0;
  // A short description for reports ("roofline v100-sxm2-16gb", "calib calib.json").
  virtual std::string Name() const = 0;
};

}  // namespace terasim

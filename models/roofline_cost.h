// RooflineCostModel: compute time from FLOPs and bytes with a size-dependent efficiency, the
// fitted parameters coming from the device spec (models/device_spec.h).
//
// One layer (or block) of one pass takes
//     overhead + max(compute, memory)
//     compute  = s (1 + (F / s)^k)^(1/k) / (peak * efficiency_max)
//     memory   = LayerBytes / (memory bandwidth * memory_efficiency)
// (a backward-weight pass adds weight_gradient_passes - 1 more fp16 weight-sized gradient
// tensors: accumulation across micro-batches or slices)
// where F is the pass's FLOPs on this rank (models/layer_flops.h), s the saturation FLOPs and
// k the sharpness. Small ops cannot fill the GPU and take about s / (peak * efficiency_max)
// whatever their size (the small-slice floor of FACTS.md's calibration points); large ones
// approach F / (peak * efficiency_max). Overhead is the per-layer kernel overhead for a
// forward; backward runs as backward-input plus backward-weight, each with its own floor and
// overhead, so backward is about twice the forward at every size. A block (kAttention, kMlp)
// pays the share of overhead and saturation that its projection and MLP FLOPs are of the
// layer's (1/3 and 2/3 for f = 4h), so the two halves of a split layer cost about one layer.
// Work of several layers costs layers x one layer. The optimizer is memory traffic only:
// 28 bytes per parameter of the shard over the memory bandwidth.
//
// Two optional fields of the compute model change this (both off unless the data file sets them):
// host_overlap_sharpness q makes a pass cost (overhead^q + (compute + memory)^q)^(1/q), the
// host's issue time overlapping the GPU's work as eager PyTorch's asynchronous queue lets it;
// score_bytes_per_element adds that many bytes per score-sized element (b (a / t) l (c + l),
// models/layer_operators.h) to the memory of a forward and a backward-input pass (the eager
// scale / mask / softmax / dropout kernels), so a slice's cost grows with its context;
// score_kernels_serial moves that traffic out of the max: the pass costs
// overhead + max(compute, memory) + score bytes / bandwidth (the eager kernels run on the one
// stream after the GEMMs, so nothing hides them).
//
// When the device spec's "operator_model" says "default": true, Time() and Name() answer with
// the operator-level model instead (models/operator_cost.h), so every caller of the roofline
// picks it up from the data file.
//
// Immutable after construction; Time() is thread-safe.
#pragma once

#include <optional>
#include <string>

#include "models/compute_cost.h"
#include "models/device_spec.h"
#include "models/model_card.h"
#include "models/operator_cost.h"

namespace terasim {

class RooflineCostModel : public ComputeCostModel {
 public:
  RooflineCostModel(ModelCard model, DeviceSpec device);

  // Time of `work` on one device of this spec, >= 1 ns. Precondition: work.layers >= 1,
  // rows >= 1, tokens >= 0, context >= 0, tp >= 1.
  TimeNs Time(const SliceWork& work) const override;
  // "roofline DEVICE MODEL" (or the operator model's name when it answers).
  std::string Name() const override;

  const ModelCard& model() const { return model_; }
  const DeviceSpec& device() const { return device_; }

 private:
  // Seconds of one layer (or block) of `pass`, which is neither kBackward nor kOptimizer.
  double LayerSeconds(const SliceWork& work) const;
  // The fraction of a layer's weight-matmul FLOPs that `block` holds.
  double BlockShare(Block block) const;

  ModelCard model_;
  DeviceSpec device_;
  std::optional<OperatorCostModel> operator_;  // set when the spec makes it the default
  int sharpness_log2_ = 0;  // log2(k) when the sharpness k is 2, 4, ..., 64; else 0 (pow)
  int overlap_log2_ = 0;    // the same for host_overlap_sharpness
};

}  // namespace terasim

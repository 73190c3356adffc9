#include "models/roofline_cost.h"

#include <algorithm>
#include <cmath>

#include "models/errors.h"
#include "models/layer_flops.h"
#include "models/memory_model.h"

namespace terasim {

RooflineCostModel::RooflineCostModel(ModelCard model, DeviceSpec device)
    : model_(std::move(model)), device_(std::move(device)) {
  for (int i = 1; i <= 6; ++i) {
    if (device_.compute.sharpness == static_cast<double>(1 << i)) sharpness_log2_ = i;
  }
  if (device_.operator_model && device_.operator_model->is_default) {
    operator_.emplace(model_, device_);
  }
}

std::string RooflineCostModel::Name() const {
  if (operator_) return operator_->Name();
  return "roofline " + device_.name + " " + model_.name;
}

double RooflineCostModel::BlockShare(Block block) const {
  const double projections = 8.0 * model_.hidden * model_.hidden;
  const double mlp = 4.0 * model_.hidden * model_.ffn;
  switch (block) {
    case Block::kWhole:
      return 1.0;
    case Block::kAttention:
      return projections / (projections + mlp);
    case Block::kMlp:
      return mlp / (projections + mlp);
  }
  return 1.0;
}

double RooflineCostModel::LayerSeconds(const SliceWork& work) const {
  const ComputeModelParams& p = device_.compute;
  const double share = BlockShare(work.block);
  const double saturation = p.saturation_flops * share;
  const double flops = LayerPassFlops(model_, work);
  const double rate = device_.PeakFlops() * p.efficiency_max;
  // (1 + x^k)^(1/k). For k a power of two (the fitted values) it is squarings and square roots
  // instead of two pow calls: the slicing planner evaluates this millions of times.
  const double x = flops / saturation;
  double knee;
  if (sharpness_log2_ > 0) {
    double xk = x;
    for (int i = 0; i < sharpness_log2_; ++i) xk *= xk;
    knee = 1.0 + xk;
    for (int i = 0; i < sharpness_log2_; ++i) knee = std::sqrt(knee);
  } else {
    knee = std::pow(1.0 + std::pow(x, p.sharpness), 1.0 / p.sharpness);
  }
  const double compute_s = saturation * knee / rate;
  double bytes = static_cast<double>(LayerBytes(model_, work));
  if (work.pass == Pass::kBackwardWeight && p.weight_gradient_passes > 1) {
    // LayerBytes counts the gradient written once; accumulation moves it again.
    bytes += (p.weight_gradient_passes - 1) * 2.0 *
             static_cast<double>(LayerShardParams(model_, work.tp, work.block));
  }
  const double memory_s = bytes / (device_.memory_bw_bytes_per_s * p.memory_efficiency);
  const double overhead_s = NsToSeconds(p.kernel_overhead_ns_per_layer) * share;
  return overhead_s + std::max(compute_s, memory_s);
}

TimeNs RooflineCostModel::Time(const SliceWork& work) const {
  TERASIM_CHECK(
      work.layers >= 1 && work.rows >= 1 && work.tokens >= 0 && work.context >= 0 && work.tp >= 1,
      "bad SliceWork: layers {} rows {} tokens {} context {} tp {}", work.layers, work.rows,
      work.tokens, work.context, work.tp);
  if (operator_) return operator_->Time(work);
  double layer_s = 0;
  if (work.pass == Pass::kOptimizer) {
    layer_s = static_cast<double>(LayerBytes(model_, work)) /
              (device_.memory_bw_bytes_per_s * device_.compute.memory_efficiency);
  } else if (work.pass == Pass::kBackward) {
    SliceWork part = work;
    part.pass = Pass::kBackwardInput;
    layer_s = LayerSeconds(part);
    part.pass = Pass::kBackwardWeight;
    layer_s += LayerSeconds(part);
  } else {
    layer_s = LayerSeconds(work);
  }
  return std::max<TimeNs>(1, std::llround(layer_s * work.layers * 1e9));
}

}  // namespace terasim

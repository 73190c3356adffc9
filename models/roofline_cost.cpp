#include "models/roofline_cost.h"

#include <algorithm>
#include <cmath>

#include "models/errors.h"
#include "models/layer_flops.h"

namespace terasim {

RooflineCostModel::RooflineCostModel(ModelCard model, DeviceSpec device)
    : model_(std::move(model)), device_(std::move(device)) {}

std::string RooflineCostModel::Name() const {
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
  // (1 + x^k)^(1/k); the fitted k = 4 takes two square roots instead of two pow calls (the
  // slicing planner evaluates this millions of times).
  const double x = flops / saturation;
  double knee;
  if (p.sharpness == 4.0) {
    const double x2 = x * x;
    knee = std::sqrt(std::sqrt(1.0 + x2 * x2));
  } else {
    knee = std::pow(1.0 + std::pow(x, p.sharpness), 1.0 / p.sharpness);
  }
  const double compute_s = saturation * knee / rate;
  const double memory_s = static_cast<double>(LayerBytes(model_, work)) /
                          (device_.memory_bw_bytes_per_s * p.memory_efficiency);
  const double overhead_s = NsToSeconds(p.kernel_overhead_ns_per_layer) * share;
  return overhead_s + std::max(compute_s, memory_s);
}

TimeNs RooflineCostModel::Time(const SliceWork& work) const {
  TERASIM_CHECK(
      work.layers >= 1 && work.rows >= 1 && work.tokens >= 0 && work.context >= 0 && work.tp >= 1,
      "bad SliceWork: layers {} rows {} tokens {} context {} tp {}", work.layers, work.rows,
      work.tokens, work.context, work.tp);
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

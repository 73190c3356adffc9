#include "models/roofline_cost.h"

#include <algorithm>
#include <cmath>

#include "models/errors.h"
#include "models/layer_flops.h"
#include "models/layer_operators.h"
#include "models/memory_model.h"

namespace terasim {

namespace {

// log2(k) when k is 2, 4, ..., 64; else 0.
int PowerOfTwoLog2(double k) {
  for (int i = 1; i <= 6; ++i) {
    if (k == static_cast<double>(1 << i)) return i;
  }
  return 0;
}

// (1 + x^k)^(1/k), x >= 0. For k = 2^k_log2 (k_log2 > 0) it is squarings and square roots
// instead of two pow calls: the slicing planner evaluates this millions of times.
double SmoothKnee(double x, double k, int k_log2) {
  if (k_log2 > 0) {
    double xk = x;
    for (int i = 0; i < k_log2; ++i) xk *= xk;
    double knee = 1.0 + xk;
    for (int i = 0; i < k_log2; ++i) knee = std::sqrt(knee);
    return knee;
  }
  return std::pow(1.0 + std::pow(x, k), 1.0 / k);
}

}  // namespace

RooflineCostModel::RooflineCostModel(ModelCard model, DeviceSpec device)
    : model_(std::move(model)), device_(std::move(device)) {
  sharpness_log2_ = PowerOfTwoLog2(device_.compute.sharpness);
  overlap_log2_ = PowerOfTwoLog2(device_.compute.host_overlap_sharpness);
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
  const double compute_s =
      saturation * SmoothKnee(flops / saturation, p.sharpness, sharpness_log2_) / rate;
  double bytes = static_cast<double>(LayerBytes(model_, work));
  if (work.pass == Pass::kBackwardWeight && p.weight_gradient_passes > 1) {
    // LayerBytes counts the gradient written once; accumulation moves it again.
    bytes += (p.weight_gradient_passes - 1) * 2.0 *
             static_cast<double>(LayerShardParams(model_, work.tp, work.block));
  }
  double score_bytes = 0;
  if (p.score_bytes_per_element > 0 && work.block != Block::kMlp &&
      (work.pass == Pass::kForward || work.pass == Pass::kBackwardInput)) {
    score_bytes = p.score_bytes_per_element * static_cast<double>(ScoreElements(model_, work));
  }
  const double bandwidth = device_.memory_bw_bytes_per_s * p.memory_efficiency;
  // Serial score kernels run after the GEMMs; otherwise their traffic joins the pass's memory.
  const double serial_s = p.score_kernels_serial ? score_bytes / bandwidth : 0.0;
  if (!p.score_kernels_serial) bytes += score_bytes;
  const double memory_s = bytes / bandwidth;
  const double overhead_s = NsToSeconds(p.kernel_overhead_ns_per_layer) * share;
  if (p.host_overlap_sharpness > 0) {
    // The host's issue time and the GPU's work overlap: their smooth maximum, as the larger
    // times the knee of the ratio (<= 1, so the power cannot overflow).
    const double gpu_s = compute_s + memory_s + serial_s;
    const double high = std::max(gpu_s, overhead_s);
    if (high <= 0) return 0;
    return high *
           SmoothKnee(std::min(gpu_s, overhead_s) / high, p.host_overlap_sharpness, overlap_log2_);
  }
  return overhead_s + std::max(compute_s, memory_s) + serial_s;
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

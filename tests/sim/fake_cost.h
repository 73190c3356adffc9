// FakeCost: a ComputeCostModel for tests whose times are easy to write down: a forward of
// `layers` layers of a slice of `tokens` tokens for `rows` rows takes
// layers x tokens x rows x fwd_ns_per_layer_token, a backward (or each backward half) the same
// with bwd_ns_per_layer_token; context and tp do not matter. The optimizer takes optimizer_ns.
#pragma once

#include <string>

#include "models/compute_cost.h"

namespace terasim::testing {

class FakeCost : public ComputeCostModel {
 public:
  FakeCost(TimeNs fwd_ns_per_layer_token, TimeNs bwd_ns_per_layer_token, TimeNs optimizer_ns = 0)
      : fwd_(fwd_ns_per_layer_token), bwd_(bwd_ns_per_layer_token), optimizer_(optimizer_ns) {}

  TimeNs Time(const SliceWork& work) const override {
    if (work.pass == Pass::kOptimizer) return optimizer_;
    const TimeNs per = work.pass == Pass::kForward ? fwd_ : bwd_;
    return per * work.layers * work.tokens * work.rows;
  }
  std::string Name() const override { return "fake"; }

 private:
  TimeNs fwd_, bwd_, optimizer_;
};

}  // namespace terasim::testing

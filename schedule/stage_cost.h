// StageCost: what one unit of pipeline work (a micro-batch of `rows` sequences, a token slice
// of `tokens` tokens after `context`) costs on one pipeline stage of a real cluster, for the
// slicing planner (schedule/slicing_planner.h) and the strategy search's bounds.
//
// The unit's per-stage time is the stage's forward and backward of its layers (from the
// compute cost model; with tensor parallelism the attention and MLP blocks separately), plus
// the tp all-reduces (two forward, two backward per layer; ring all-reduce over the in-node
// rings of the stage's GPUs, alpha-beta), plus the stage-boundary transfers (the activation
// forward and its gradient back, over the slowest boundary route of the pipeline, and the
// in-node broadcast with the broadcast boundary). Counting communication inside the stage
// time is conservative: the simulator overlaps it with the next unit's compute.
//
// Borrows the model, cost model and cluster (they must outlive it). Thread-safe.
#pragma once

#include "models/compute_cost.h"
#include "models/model_card.h"
#include "schedule/generator.h"
#include "schedule/slicing_planner.h"
#include "topologies/topology.h"

namespace terasim {

struct StageShape {
  int pp = 1;
  int tp = 1;
  Boundary boundary = Boundary::kPointToPoint;
};

class StageCost {
 public:
  // Throws InputError when pp * tp exceeds the cluster's GPUs or the stage shape does not fit
  // the model (pp > layers, tp not dividing the heads).
  StageCost(const ModelCard& model, const ComputeCostModel& compute, const Cluster& cluster,
            StageShape shape);

  // Forward + backward compute of the largest stage for one unit, in ns.
  double ComputeNs(int rows, int tokens, int context) const;
  // The unit's tp all-reduces and boundary transfers, in ns.
  double CommunicationNs(int rows, int tokens) const;
  // ComputeNs + CommunicationNs.
  double UnitNs(int rows, int tokens, int context) const;
  // UnitNs as a planner cost callback (borrowing this object).
  SliceCostFn AsSliceCost() const;

  int LayersPerStage() const { return layers_per_stage_; }

 private:
  const ModelCard& model_;
  const ComputeCostModel& compute_;
  StageShape shape_;
  int layers_per_stage_ = 1;
  // Alpha-beta parameters of the paths this stage uses.
  double tp_alpha_ns_ = 0, tp_bw_ = 0;              // tp all-reduce ring
  double boundary_alpha_ns_ = 0, boundary_bw_ = 0;  // slowest stage-to-stage route
};

}  // namespace terasim

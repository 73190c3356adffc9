// SliceWorkOf: how the compute cost model sees a schedule op (models/compute_cost.h).
//
// The IR names the work (kind, layers, part, rows, tokens, tp group); the cost model wants a
// SliceWork. The context of a causal slice is its first token t0; the tp degree is the size of
// the op's group (1 without one; OPTIMIZER ops take the schedule's tp degree).
#pragma once

#include "models/compute_cost.h"
#include "schedule/schedule_ir.h"

namespace terasim {

// The SliceWork of compute op `op` of `schedule`. Precondition: IsCompute(op.kind).
SliceWork SliceWorkOf(const Schedule& schedule, const Op& op);

}  // namespace terasim

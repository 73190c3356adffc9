// SliceWorkOf: how the compute cost model sees a schedule op (models/compute_cost.h).
//
// The IR names the work (kind, layers, part, rows, tokens, tp group); the cost model wants a
// SliceWork. The context of a causal slice is its first token t0; the tp degree is the size of
// the op's group (1 without one; OPTIMIZER ops take the schedule's tp degree).
#pragma once

#include <vector>

#include "models/compute_cost.h"
#include "schedule/schedule_ir.h"

namespace terasim {

// The SliceWork of compute op `op` of `schedule`. Precondition: IsCompute(op.kind).
// Looks the op's group up by name (linear in the groups): for many ops, use the two below.
SliceWork SliceWorkOf(const Schedule& schedule, const Op& op);

// The tp degree of each op's work, by position: the size of its group when it has one that is
// declared, the schedule's tp degree for an OPTIMIZER without one, 1 otherwise. Each group name
// is resolved once (a hash index), so this is linear in the ops.
std::vector<int> WorkTpDegrees(const Schedule& schedule);

// The SliceWork of compute op `op` whose tp degree is `tp` (from WorkTpDegrees).
SliceWork SliceWorkOf(const Op& op, int tp);

}  // namespace terasim

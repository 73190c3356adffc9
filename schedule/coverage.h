// The work a schedule does: every micro-batch's layers x tokens computed exactly once forward
// and once backward, with token slices in pipeline order. Part of CheckSchedule
// (schedule/checker.h, conventions in schedule/README.md).
#pragma once

#include <vector>

#include "schedule/checker.h"
#include "schedule/schedule_index.h"

namespace terasim {

// For every micro-batch: all its ops agree on rows, and the rows of all micro-batches add up
// to the header's batch (when it is > 0); for each tp rank (index.tp_rank), FWD ops cover each
// (layer, part, token) of [0, layers) x {attn, mlp} x [0, sequence) exactly once, BWD and
// BWD_INPUT ops likewise, and, when the micro-batch splits its backward (BWD_INPUT or
// BWD_WEIGHT), BWD and BWD_WEIGHT ops likewise. Appends the first gap or overlap of each,
// e.g. "micro-batch 3: layer 2 tokens 16-32 forward covered twice (F.x, F.y)". RECOMPUTE ops
// do not count as forward; each must follow the FWD of the same (micro-batch, slice, first
// layer, part) on its device and precede a backward (BWD, BWD_INPUT) covering that layer
// (CheckRecompute).
// Precondition: stage 2 of CheckSchedule found nothing.
void CheckCoverage(const CompactSchedule& schedule, const ScheduleIndex& index,
                   std::vector<Diagnostic>& diagnostics);

// Appends a diagnostic for each RECOMPUTE op without its forward before it or its backward
// after it on its device.
void CheckRecompute(const CompactSchedule& schedule, std::vector<Diagnostic>& diagnostics);

// On each device and stage, for each micro-batch: forward ops' token slices ascend in issue
// order and backward (BWD, BWD_INPUT) slices descend. Appends the first violation of each.
void CheckSliceOrder(const CompactSchedule& schedule, std::vector<Diagnostic>& diagnostics);

}  // namespace terasim

// TraceDurations: compute durations taken from a measured trace instead of the cost model,
// for trace-driven replay (`terasim simulate --durations-from TRACE`, `terasim validate`).
//
// Each compute op of the schedule gets the median over the trace's iterations of the duration
// (end - start) of the rows with its key; the replay then uses it in place of
// ComputeCostModel::Time (SimOptions::compute_ns). Communication keeps the network model, so
// replaying a measured run this way separates the schedule / network model's error from the
// compute model's. TraceSpeedFactors gives how each device's speed varied between iterations.
//
// Thread safety: a pure function.
#pragma once

#include <string>
#include <vector>

#include "models/units.h"
#include "schedule/schedule_ir.h"
#include "traces/trace.h"

namespace terasim {

// Per op of `schedule` (by position): the median measured duration of a compute op, at least
// 1 ns; -1 for the other ops. `origin` names the trace in errors. Throws InputError
// "ORIGIN: no row for compute op KEY of SCHEDULE" when the trace lacks a compute op (a trace of
// another schedule).
std::vector<TimeNs> TraceComputeDurations(const Schedule& schedule, const Trace& trace,
                                          const std::string& origin);

// How fast each device ran in each iteration of `trace`, against the medians above: per
// iteration (in order) in which every device of `schedule` ran all its compute ops, one factor
// per device, (its compute time in that iteration) / (the sum of its ops' median durations).
// The rows for a jittered replay (sim/jitter.h). Same errors as TraceComputeDurations.
std::vector<std::vector<double>> TraceSpeedFactors(const Schedule& schedule, const Trace& trace,
                                                   const std::string& origin);

}  // namespace terasim

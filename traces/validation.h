// Validation: compares two traces of the same schedule, typically a measured one (exec) and a
// predicted one (sim), for `terasim validate` (DESIGN.md section 5, "sim-vs-real comparison").
//
// Both traces are read the same way: one iteration's rows, its span (last end - first start)
// as the iteration time, per device the bubble fraction (1 - the union of its compute ops'
// intervals / the span), and a critical path recovered from the rows and the schedule's
// dependencies: from the op that ends last, repeatedly step to the predecessor that ended last
// (its stream predecessor, its `after` deps, and for a RECV the matching SEND, for a
// collective the other members' ops of the same instance). Op durations are compared per op
// and per group of (kind, slice length, context).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "models/units.h"
#include "schedule/schedule_ir.h"
#include "traces/trace.h"

namespace terasim {

struct TraceSummary {
  TimeNs iteration_ns = 0;                 // span of the iteration's rows
  double bubble_fraction = 0;              // mean over devices
  std::vector<double> device_bubble;       // per schedule device
  std::vector<std::string> critical_path;  // op keys, first to last
};

// Duration error of one group of ops of the same kind, slice length and context.
struct DurationGroup {
  OpKind kind = OpKind::kFwd;
  int64_t tokens = 0;       // slice length (0 for ops without tokens)
  int64_t context = 0;      // first token of the slice
  int count = 0;            // ops in the group
  double measured_ns = 0;   // mean
  double predicted_ns = 0;  // mean
  double rel_error = 0;     // (predicted - measured) / measured of the means (0 if measured is 0)
};

// One op in both traces (for the scatter plot).
struct OpPair {
  std::string key;
  OpKind kind = OpKind::kFwd;
  double measured_ns = 0;
  double predicted_ns = 0;
};

struct TraceComparison {
  TraceSummary measured;
  TraceSummary predicted;
  double iteration_error = 0;  // (predicted - measured) / measured iteration time
  double bubble_error = 0;     // predicted - measured mean bubble fraction (absolute)
  // |intersection| / |union| of the two critical paths' op keys, in [0, 1].
  double critical_path_agreement = 0;
  // Mean |predicted - measured| / measured over compute ops (layer math and optimizer).
  double compute_mean_abs_rel_error = 0;
  std::vector<DurationGroup> groups;  // by kind, then tokens, then context
  std::vector<OpPair> ops;            // every op of the schedule present in both, schedule order
};

// The rows of `iteration`, shifted so that the first starts at 0 (other fields unchanged).
Trace IterationTrace(const Trace& trace, int iteration);

// The iterations present in `trace`, ascending.
std::vector<int> TraceIterations(const Trace& trace);

// Summary of one iteration (rows of other iterations are ignored). Rows whose key is not in
// the schedule are ignored; schedule ops without a row are left out of the critical path.
TraceSummary SummarizeTrace(const Schedule& schedule, const Trace& trace, int iteration = 0);

// Compares iteration `measured_iteration` of `measured` with iteration 0 of `predicted`.
// Throws InputError "validate: the measured trace has no rows for iteration N" when it is
// empty, and "validate: op KEY is missing from the PREDICTED|MEASURED trace" when a compute op
// of the schedule has no row in either.
TraceComparison CompareTraces(const Schedule& schedule, const Trace& measured,
                              int measured_iteration, const Trace& predicted);

}  // namespace terasim

// The search for a dependency cycle: an order that no execution can satisfy. Part of
// CheckSchedule (schedule/checker.h).
//
// The graph: each stream's order, each `after` edge, each SEND -> its RECV, and each
// collective instance as one node (its members complete together). A cycle through ops of
// one device is a contradiction in its program; one through several devices is a deadlock
// (the dry run, schedule/dry_run.h, then says which device waits for what).
#pragma once

#include <vector>

#include "schedule/checker.h"
#include "schedule/schedule_index.h"

namespace terasim {

// Appends one diagnostic when the graph has a cycle: on the cycle's first op in file order,
// listing the cycle's keys ("dependency cycle: A -> B -> C -> A"; members of one collective
// are joined by "=="). Returns how many devices the reported cycle passes through (0 when
// there is none). Precondition: index filled by MatchPointToPoint and MatchCollectives
// without diagnostics.
int CheckDependencyCycles(const CompactSchedule& schedule, const ScheduleIndex& index,
                          std::vector<Diagnostic>& diagnostics);

}  // namespace terasim

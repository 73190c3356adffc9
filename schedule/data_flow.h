// The data-flow check: every input an op reads is written, on its device, by an op that the
// schedule's order puts before it. Part of CheckSchedule (schedule/checker.h); the rules are
// those of docs/execution_rules.md, section "Data flow".
//
// The IR names its data implicitly (schedule/README.md, "Tensor identities"): a FWD of layers
// [a, b) reads act.l{a} and writes act.l{b} (the loss gradient grad.l{L} after the last layer),
// a BWD reads grad.l{b} and the saved activations of its own forward, a SEND reads its tensor,
// a RECV writes it, a tp ALLREDUCE reads its block's partial sum and finishes the block, the
// next token slice reads the previous one's keys and values, the dp ALLREDUCE of wgrad.s{S}
// reads every backward op of stage S, OPTIMIZER the backward ops before it and its stage's dp
// ALLREDUCE; a RECOMPUTE reads the layer input its recompute=full forward kept (and its tp
// collectives, as the forward's) and rebuilds what a recompute=full backward reads of its
// forward. The executor waits for such inputs (or finds them in its back end); the
// simulator does not see them at all. So a read is only allowed when the order already implies
// it ("happens before": stream order, `after`, a SEND with its RECV and the members of a
// collective starting and finishing together): then the executor never waits on data that the
// schedule's order has not delivered, and both time the same program.
//
// A producer ordered after its reader is a cycle of waits (the reader waits for the data, the
// producer for the reader): the diagnostic names the cycle. A producer that is not ordered
// either way, or none at all, is reported as such.
#pragma once

#include <vector>

#include "schedule/checker.h"
#include "schedule/dry_run.h"
#include "schedule/schedule_index.h"

namespace terasim {

// Appends one diagnostic per op whose inputs are not ordered before it (the first such input).
// Precondition: index filled by MatchPointToPoint and MatchCollectives without diagnostics,
// and `unit_run`, the schedule's dry run with one tick per op (what CheckDryRun returns,
// schedule/dry_run.h), completed.
void CheckDataFlow(const CompactSchedule& schedule, const ScheduleIndex& index,
                   const UnitRunResult& unit_run, std::vector<Diagnostic>& diagnostics);

}  // namespace terasim

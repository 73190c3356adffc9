// The dry run: a schedule executed in logical time, to prove that it cannot deadlock (part of
// CheckSchedule, schedule/checker.h) and to lay it out for `terasim show`.
//
// Semantics (those of CUDA streams with blocking NCCL calls): each stream runs its ops in
// order; an op starts once it heads its stream and its `after` deps have finished; a SEND and
// its RECV start together once both head their streams (a rendezvous, so two devices that each
// SEND before they RECV on one stream deadlock); a collective starts once every member heads
// its stream. An op finishes `duration` ticks after it starts (a SEND/RECV pair or a collective
// takes the longest of its members' durations).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "schedule/checker.h"
#include "schedule/schedule_index.h"

namespace terasim {

struct DryRunResult {
  std::vector<int64_t> start_tick;   // op -> when it started, -1 when it never did
  std::vector<int64_t> finish_tick;  // op -> when it finished, -1 when it never did
  int64_t finished = 0;              // ops that finished; all of them unless it deadlocked
};

// The run of CheckDryRun, one tick per op: an op that ran started one tick before it finished
// (a SEND/RECV pair or a collective also takes one tick), so only the finish ticks are held, in
// 32 bits (a tick is at most the op count, kMaxOps, models/limits.h): 4 bytes per op rather
// than DryRunResult's 16.
struct UnitRunResult {
  std::vector<int32_t> finish_tick;  // op -> when it finished, -1 when it never did
  int64_t finished = 0;              // ops that finished; all of them unless it deadlocked
  int32_t Start(int op) const { return finish_tick[op] < 0 ? -1 : finish_tick[op] - 1; }
  int32_t Finish(int op) const { return finish_tick[op]; }
};

// Runs `schedule` with `duration_ticks[op]` per op (size == ops). Never throws on a deadlock:
// the ops that could not run keep -1. Precondition: index filled by MatchPointToPoint and
// MatchCollectives without diagnostics.
DryRunResult DryRun(const CompactSchedule& schedule, const ScheduleIndex& index,
                    std::span<const int64_t> duration_ticks);

// Runs the schedule with one tick per op (which ops run does not depend on the durations); if
// some op never runs, appends one diagnostic on a blocked op: "deadlock: dev 0 waits at
// RB.s0... (peer 1 has not reached SB.s1...); dev 1 waits at ..." listing every device that
// has blocked ops and the op it waits at. Returns the run, which the data flow
// (schedule/data_flow.h) reuses.
UnitRunResult CheckDryRun(const CompactSchedule& schedule, const ScheduleIndex& index,
                          std::vector<Diagnostic>& diagnostics);

}  // namespace terasim

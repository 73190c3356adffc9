// Matching of communication across devices: each RECV with its SEND, and each member's
// collectives on a group with every other member's. Part of CheckSchedule (schedule/checker.h);
// the results fill ScheduleIndex::partner and ScheduleIndex::instance for the later passes.
#pragma once

#include <vector>

#include "schedule/checker.h"
#include "schedule/schedule_index.h"

namespace terasim {

// Pairs every RECV on dev d from peer p of tensor X with the one SEND on p to d of tensor X and
// sets index.partner both ways. Appends a diagnostic for a RECV without its SEND, a SEND
// without its RECV, a pair whose bytes differ (naming both lines), and a tensor identity sent
// (or received) twice between the same two devices. Precondition: stage 2 of CheckSchedule
// found nothing.
void MatchPointToPoint(const CompactSchedule& schedule, ScheduleIndex& index,
                       std::vector<Diagnostic>& diagnostics);

// For each group, compares the sequence of (kind, tensor, bytes, root) of the collectives
// every member issues on it, in issue order. Appends one diagnostic per member at its first
// divergence from the group's first rank (naming both devices), or when it issues fewer or
// more. When a group's members agree, the i-th collective of every member forms instance
// index.instance_ops[...], recorded in index.instance. Precondition as MatchPointToPoint.
void MatchCollectives(const CompactSchedule& schedule, ScheduleIndex& index,
                      std::vector<Diagnostic>& diagnostics);

}  // namespace terasim

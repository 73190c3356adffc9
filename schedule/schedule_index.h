// ScheduleIndex: a schedule's cross-references resolved to op positions, built once by the
// checker's passes and shared by the later ones (and by the grid renderer).
//
// Everything is indexed by op position in CompactSchedule::ops; stream names are views into the
// schedule's NamePool, so the schedule must outlive the index and stay unchanged. Streams are the
// in-order queues (device, stream name); `after` and its reverse are stored flat (CSR) so that a
// million-op schedule costs a few allocations, not millions. `partner` and `instance` are filled by
// the matching passes (schedule/comm_matching.h) and stay -1 until then.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "schedule/checker.h"
#include "schedule/compact_schedule.h"

namespace terasim {

struct StreamInfo {
  int device = 0;
  std::string_view name;
  std::vector<int> ops;  // positions in issue order
};

struct ScheduleIndex {
  std::vector<int> stream_of;           // op -> stream id (-1: device out of range)
  std::vector<int> position_in_stream;  // op -> index in streams[stream_of].ops
  std::vector<StreamInfo> streams;
  std::vector<int> group_of;          // op -> index in groups, -1 without one
  std::vector<int> tp_rank;           // op -> position of its device in its group (0 without one)
  std::vector<int> after_offset;      // size ops + 1; deps of op i: after_op[offset[i]..[i+1])
  std::vector<int> after_op;          // resolved `after` keys
  std::vector<int> dependent_offset;  // reverse of after: ops that wait for op i
  std::vector<int> dependent_op;
  std::vector<int> partner;                    // SEND <-> RECV match, -1 otherwise
  std::vector<int> instance;                   // collective instance id, -1 otherwise
  std::vector<std::vector<int>> instance_ops;  // instance -> member ops, in group rank order
  // The SENDs and RECVs, and the collectives, in op order (the matching passes walk these
  // rather than every op record).
  std::vector<int> p2p_ops;
  std::vector<int> collective_ops;

  std::span<const int> After(int op) const {
    return {after_op.data() + after_offset[op], after_op.data() + after_offset[op + 1]};
  }
  std::span<const int> Dependents(int op) const {
    return {dependent_op.data() + dependent_offset[op],
            dependent_op.data() + dependent_offset[op + 1]};
  }
};

// A diagnostic about one op: its line, key and `message`.
Diagnostic OpDiagnostic(const CompactSchedule& schedule, const CompactOp& op, std::string message);
// The same for op position `op`.
Diagnostic OpDiagnostic(const CompactSchedule& schedule, int op, std::string message);

// Position of `device` in `group`'s rank list, or -1.
int RankInGroup(const Group& group, int device);

// Resolves keys, streams, groups and `after` deps of `schedule`, appending a diagnostic for
// each duplicate key and each `after` key that is unknown, on another device or the op itself
// (such deps are left out of the index). An op whose device is out of range gets stream -1
// (the field checks report it); the later passes need a schedule that passed these checks.
ScheduleIndex IndexSchedule(const CompactSchedule& schedule, std::vector<Diagnostic>& diagnostics);

}  // namespace terasim

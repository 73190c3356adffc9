// ReplayGraph: the integer dependency graph a Replay runs on, built from a Schedule in one pass.
//
// The `after` deps come from Schedule::after_ops where the generator set them (AfterOpsMatch);
// other schedules (read from .pir, built by hand, edited) resolve their keys here. The other
// strings of the IR (stream names, group names, SEND/RECV tensor names) are read as the
// generator's integer names of them (Op::stream_id, group_id, tensor_id) when every op carries
// them, and otherwise resolved here once, through flat open-addressing indexes over the
// schedule's own strings (no per-op allocation); the replay's hot path then sees only integers:
// CSR successor lists, a predecessor count per op, the SEND <-> RECV partner of each
// point-to-point op and the collective instance of each collective op. Same resolution rules as
// the string maps it replaces: the first op of a duplicated key and the first declaration of a
// duplicated group win; the first SEND of a (source, destination, tensor) is the one a RECV
// matches. The two ways give the same graph for a generated schedule (tests/sim/after_ops_test).
#pragma once

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "models/compute_cost.h"
#include "models/units.h"
#include "schedule/schedule_ir.h"

namespace terasim {

// What the replay does with an op (IsCompute, IsPointToPoint, IsCollective of its kind).
enum class OpClass : uint8_t { kCompute, kPointToPoint, kCollective, kOther };

// The class of `kind`, from IsCompute / IsPointToPoint / IsCollective.
OpClass ClassifyKind(OpKind kind);
// ClassifyKind from a table filled once (a loop over every op asks it without a call per op).
inline OpClass ClassOf(OpKind kind) {
  constexpr unsigned kTableKinds = 32;
  static const struct Table {
    OpClass of[kTableKinds];
    Table() {
      for (unsigned k = 0; k < kTableKinds; ++k) of[k] = ClassifyKind(static_cast<OpKind>(k));
    }
  } table;
  const auto index = static_cast<unsigned>(kind);
  return index < kTableKinds ? table.of[index] : ClassifyKind(kind);
}

// What a declared fold reads of the ops (SymmetryFold::Declared, sim/symmetry_fold.h),
// collected while the graph is built so that the fold makes no pass over the ops of its own.
struct CommKeys {
  // The distinct (group, kind, bytes, root device) of the collective ops, the root the peer
  // of a BROADCAST in range and -1 otherwise; sorted.
  std::vector<std::tuple<int, int, Bytes, int>> plans;
  // The distinct (device, peer) of the SEND ops with a peer in range; sorted.
  std::vector<std::pair<int, int>> sends;
};

struct ReplayGraph {
  // One collective instance: the k-th collective on a group on each member.
  struct Instance {
    int group = -1;
    OpKind kind = OpKind::kAllReduce;
    Bytes bytes = 0;
    int root_gpu = -1;  // BROADCAST: the GPU of its root; -1 otherwise
    int expected = 0;   // members (the group's ranks)
    int members = 0;    // its ops in the schedule (those `instance` maps to it)
  };

  std::vector<int> pending;     // per op: predecessors (stream order + `after` deps)
  std::vector<int> succ_begin;  // CSR successor lists: succ[succ_begin[i], succ_begin[i + 1])
  std::vector<int> succ;
  std::vector<int> partner;   // per op: SEND <-> RECV, -1 none
  std::vector<int> instance;  // per op: its collective instance, -1 none
  std::vector<int> work_tp;   // per op: the tp degree of its compute work (sim/op_work.h)
  // Per op: the number of its compute work (SliceWorkOf(op, work_tp)) in `works`, -1 for an op
  // that is not compute; `works`: the distinct works (WorkIndex order).
  std::vector<int> work;
  std::vector<SliceWork> works;
  std::vector<OpClass> op_class;  // per op
  std::vector<int> gpu;           // per op: the GPU of its device (placement)
  std::vector<int> device;        // per op: its device (Op::device)
  // Per op, where the graph read the stream names: its stream's number on its device (0, 1, ...
  // in the order of the device's streams' first ops; equal for equal names). Empty where it
  // read the ops' integer names, whose Op::stream_id numbers the streams alike.
  std::vector<int> stream;
  std::vector<Instance> instances;
  std::vector<std::vector<int>> group_gpus;  // per group: the GPUs of its ranks
  CommKeys comm_keys;

  // What the closed-form analysis reads of the ops (sim/exclusive_links.h), collected here so
  // that a replay whose every device with ops runs (no fold, a declared one) makes no pass over
  // them of its own. Per group: the first device (in op order) issuing a collective on it, its
  // stream there (the number `stream` or Op::stream_id gives), how many it issues on the group
  // and whether all on that stream (ExclusiveLinks::AddMemberOp over the group's ops in order);
  // ops 0 for a group without collectives.
  struct Member {
    int device = -1;
    int stream = -1;
    int ops = 0;
    bool one_stream = false;
  };
  std::vector<Member> group_member;
  // The distinct (device, peer) of the SENDs paired with a RECV (partner >= 0), sorted.
  std::vector<std::pair<int, int>> paired_sends;
  // Per device: whether it has ops.
  std::vector<char> has_ops;
};

// Whether schedule.after_ops (set by the generator) stands for the `after` keys of its ops: it
// fits their lists and each position names an op with the key listed. Generated keys are
// unique, so that op is the one the key names. Reads each key once, hashes none.
bool AfterOpsMatch(const Schedule& schedule);

// Builds the graph of `schedule` with its devices on `placement` (GPU per device; covers every
// device). Reads the ops' integer names (Op::stream_id ...) where every op has them and each
// group_id is in range, and their strings otherwise; it trusts them as op.h's rule has it (code
// that edits an op's stream, group or tensor clears its stream_id). Throws InputError naming
// the op (source:line: key) on a device out of range, an unknown `after` key, an undeclared
// collective group or a SEND / RECV read by name that names no tensor, and naming the group on a
// rank that is not a device.
ReplayGraph BuildReplayGraph(const Schedule& schedule, const std::vector<int>& placement);

}  // namespace terasim

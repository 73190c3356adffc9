// SliceWorkOf: how the compute cost model sees a schedule op (models/compute_cost.h).
//
// The IR names the work (kind, layers, part, rows, tokens, tp group); the cost model wants a
// SliceWork. The context of a causal slice is its first token t0; the tp degree is the size of
// the op's group (1 without one; OPTIMIZER ops take the schedule's tp degree, ZeRO ones tp x dp).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "models/compute_cost.h"
#include "schedule/schedule_ir.h"

namespace terasim {

// The tp degree of compute op `op`'s work, given the index of its group in schedule.groups (-1:
// none or undeclared): the group's size; an OPTIMIZER without a group takes the schedule's tp
// degree; a ZeRO OPTIMIZER (op.zero > 0, its group the dp group of D ranks) updates its 1 / D
// share of the stage's tp shard: tp x D. The one definition: WorkTpDegrees, SliceWorkOf and the
// replay graph (sim/replay_graph.cpp) all read it.
int WorkTpOf(const Schedule& schedule, const Op& op, int group);
// The same from the op's kind, ZeRO stage and whether it names a group (`named`; `group` -1 for
// one that is not declared): for a caller that knows the group by number (Op::group_id).
int WorkTpOf(const Schedule& schedule, OpKind kind, int zero, bool named, int group);

// The SliceWork of compute op `op` of `schedule`. Precondition: IsCompute(op.kind).
// Looks the op's group up by name (linear in the groups): for many ops, use the two below.
SliceWork SliceWorkOf(const Schedule& schedule, const Op& op);

// The tp degree of each op's work, by position: the size of its group when it has one that is
// declared, the schedule's tp degree for an OPTIMIZER without one, 1 otherwise. Each group name
// is resolved once (a hash index), so this is linear in the ops.
std::vector<int> WorkTpDegrees(const Schedule& schedule);

// The SliceWork of compute op `op` whose tp degree is `tp` (from WorkTpDegrees).
SliceWork SliceWorkOf(const Op& op, int tp);

// The distinct SliceWorks of a schedule, numbered 0, 1, ... in order of first Intern: a replay
// resolves each compute op's work once (sim/replay_graph.h) and then reads a number per op. An
// open-addressing table (a schedule has a few hundred distinct works; a look-up is a hash and
// mostly one compare).
class WorkIndex {
 public:
  // The number of `work`, added when new.
  int Intern(const SliceWork& work);
  // Intern(SliceWorkOf(op, tp)), without the SliceWork's copies (a replay graph's per-op call).
  // Inline: a memo of the op's own fields that SliceWorkOf reads (kind, part, layers, rows,
  // tokens, recompute) and tp answers most calls without building the SliceWork (the work is a
  // function of them, so the memo gives the number Intern(SliceWorkOf(op, tp)) gives).
  int Intern(const Op& op, int tp) {
    const OpFields fields{static_cast<int32_t>(op.kind) | (static_cast<int32_t>(op.part) << 8) |
                              (static_cast<int32_t>(op.recompute) << 16),
                          op.layers.Length(),
                          op.rows,
                          op.tokens.begin,
                          op.tokens.end,
                          tp};
    Memo& memo = memo_[MemoSlot(fields)];
    if (memo.id >= 0 && memo.fields == fields) return memo.id;
    return InternOp(op, tp, fields, &memo);
  }
  const std::vector<SliceWork>& Works() const { return works_; }
  int Size() const { return static_cast<int>(works_.size()); }

 private:
  // Every field of SliceWork, packed; 32 bytes with no padding (`unused` is 0), compared as
  // one block.
  struct Key {
    int64_t tokens, context;
    int32_t layers, rows, tp;
    uint8_t pass, block, recompute_attention, unused;
    bool operator==(const Key& other) const { return std::memcmp(this, &other, sizeof(Key)) == 0; }
  };
  static_assert(sizeof(Key) == 32, "Key has padding: memcmp would read it");
  struct Slot {
    Key key;
    int id = -1;
  };
  // What SliceWorkOf(op, tp) reads of an op: its kind, part and recompute packed, the length
  // of its layers, its rows, its tokens, and tp (24 bytes, no padding).
  struct OpFields {
    int32_t kind_part_recompute, layers, rows, t0, t1, tp;
    bool operator==(const OpFields& other) const {
      return std::memcmp(this, &other, sizeof(OpFields)) == 0;
    }
  };
  static_assert(sizeof(OpFields) == 24, "OpFields has padding: memcmp would read it");
  struct Memo {
    OpFields fields{};
    int id = -1;
  };
  static constexpr size_t kMemoSlots = 256;
  static size_t MemoSlot(const OpFields& f) {
    const auto h = static_cast<uint32_t>(f.t0 * 0x9E3779B1u ^ f.t1 * 0x85EBCA6Bu ^
                                         f.kind_part_recompute * 0xC2B2AE35u ^ f.layers ^ f.rows);
    return (h >> 24) & (kMemoSlots - 1);
  }
  // Intern(op, tp) when the memo's slot does not hold the op's fields: interns its work and
  // keeps the number in *memo.
  int InternOp(const Op& op, int tp, const OpFields& fields, Memo* memo);
  static size_t Hash(const Key& k);
  int InternWork(const SliceWork& work);
  void Grow();
  std::vector<Slot> slots_;  // size a power of 2, at most half full
  std::vector<SliceWork> works_;
  // The work interned last per block (whole layer, attention, MLP): consecutive compute ops
  // mostly repeat the work of the op two or one before (a layer's parts alternate), found by
  // one compare without hashing.
  Slot recent_[4];
  Memo memo_[kMemoSlots];
};

// ComputeCostModel::Time memoized per distinct SliceWork. A cost model is a pure function of
// the work (models/compute_cost.h), and a schedule repeats the same work thousands of times
// (every micro-batch, every stage of equal layers): each distinct work costs one model call.
// Borrows the model. Not thread-safe.
class WorkTimeCache {
 public:
  explicit WorkTimeCache(const ComputeCostModel& cost) : cost_(cost) {}
  TimeNs Time(const SliceWork& work) { return TimeOf(index_.Intern(work), work); }
  // The time of work number `id` of `works` (a WorkIndex's numbering). A cache answers either
  // form, not both: its ids are those of one numbering.
  // Inline when known (a replay asks once per compute op).
  TimeNs Time(int id, const std::vector<SliceWork>& works) {
    if (static_cast<size_t>(id) < ns_.size() && ns_[id] >= 0) return ns_[id];
    return TimeOf(id, works[id]);
  }
  // Distinct works seen (model calls made).
  int Size() const { return calls_; }

 private:
  TimeNs TimeOf(int id, const SliceWork& work);
  const ComputeCostModel& cost_;
  WorkIndex index_;
  std::vector<TimeNs> ns_;  // per work id, -1 until computed
  int calls_ = 0;
};

}  // namespace terasim

#include "sim/op_work.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string_view>
#include <unordered_map>

#include "models/errors.h"

namespace terasim {

int WorkTpOf(const Schedule& schedule, OpKind kind, int zero, bool named, int group) {
  if (kind == OpKind::kOptimizer && zero > 0) {
    // A ZeRO optimizer updates its 1 / D share of the stage's tp shard (D: its dp group).
    const int dp = group < 0 ? 1 : static_cast<int>(schedule.groups[group].ranks.size());
    return std::max(1, schedule.shape.tp) * std::max(1, dp);
  }
  if (named) return group >= 0 ? static_cast<int>(schedule.groups[group].ranks.size()) : 1;
  return kind == OpKind::kOptimizer ? std::max(1, schedule.shape.tp) : 1;
}

int WorkTpOf(const Schedule& schedule, const Op& op, int group) {
  return WorkTpOf(schedule, op.kind, op.zero, !op.group.empty(), group);
}

namespace {

// The pass of each compute kind, by OpKind value; kNotCompute for the others (a table: the
// check and the kind's pass without a call and a switch per op).
constexpr int kNotCompute = -1;
constexpr int kPassOfKind[] = {
    static_cast<int>(Pass::kForward),         // kFwd
    static_cast<int>(Pass::kBackward),        // kBwd
    static_cast<int>(Pass::kBackwardInput),   // kBwdInput
    static_cast<int>(Pass::kBackwardWeight),  // kBwdWeight
    kNotCompute,                              // kSend
    kNotCompute,                              // kRecv
    kNotCompute,                              // kAllReduce
    kNotCompute,                              // kAllGather
    kNotCompute,                              // kReduceScatter
    kNotCompute,                              // kBroadcast
    static_cast<int>(Pass::kOptimizer),       // kOptimizer
    static_cast<int>(Pass::kForward),         // kRecompute: full recomputation, one forward again
};
static_assert(std::size(kPassOfKind) == static_cast<size_t>(OpKind::kRecompute) + 1,
              "OpKind changed: update kPassOfKind");

// SliceWorkOf(op, tp), inline for WorkIndex::Intern(op, tp).
[[gnu::always_inline]] inline SliceWork WorkOf(const Op& op, int tp) {
  const auto kind = static_cast<size_t>(op.kind);
  const int pass = kind < std::size(kPassOfKind) ? kPassOfKind[kind] : kNotCompute;
  TERASIM_CHECK(pass != kNotCompute, "{} is not a compute op", op.key);
  SliceWork work;
  work.pass = static_cast<Pass>(pass);
  work.layers = std::max(1, op.layers.Length());
  work.block = op.part == LayerPart::kAttention ? Block::kAttention
               : op.part == LayerPart::kMlp     ? Block::kMlp
                                                : Block::kWhole;
  work.rows = std::max(1, op.rows);
  work.tokens = op.tokens.Length();
  work.context = op.tokens.begin;
  work.tp = tp;
  work.recompute_attention = op.recompute == Recompute::kSelective &&
                             (op.kind == OpKind::kBwd || op.kind == OpKind::kBwdInput);
  return work;
}

}  // namespace

SliceWork SliceWorkOf(const Schedule& schedule, const Op& op) {
  return SliceWorkOf(op,
                     WorkTpOf(schedule, op, op.group.empty() ? -1 : schedule.FindGroup(op.group)));
}

std::vector<int> WorkTpDegrees(const Schedule& schedule) {
  std::unordered_map<std::string_view, int> index;
  index.reserve(schedule.groups.size());
  // Later duplicates do not replace the first (FindGroup returns the first).
  for (size_t g = 0; g < schedule.groups.size(); ++g) {
    index.emplace(schedule.groups[g].name, static_cast<int>(g));
  }
  std::vector<int> tp(schedule.ops.size());
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const Op& op = schedule.ops[i];
    int group = -1;
    if (!op.group.empty()) {
      auto it = index.find(op.group);
      if (it != index.end()) group = it->second;
    }
    tp[i] = WorkTpOf(schedule, op, group);
  }
  return tp;
}

SliceWork SliceWorkOf(const Op& op, int tp) { return WorkOf(op, tp); }

// A new SliceWork field must join WorkIndex::Key (or two works differing in it would share a
// time): this fails when SliceWork's size changes.
static_assert(sizeof(SliceWork) == 40, "SliceWork changed: update WorkIndex::Key");

size_t WorkIndex::Hash(const Key& k) {
  // Two words of every field (a slot, not an id: ids follow the order of first Intern).
  const uint64_t a = static_cast<uint64_t>(k.tokens) ^ (static_cast<uint64_t>(k.context) << 29);
  const uint64_t b = static_cast<uint64_t>(static_cast<uint32_t>(k.layers)) ^
                     (static_cast<uint64_t>(static_cast<uint32_t>(k.rows)) << 20) ^
                     (static_cast<uint64_t>(static_cast<uint32_t>(k.tp)) << 40) ^
                     (static_cast<uint64_t>(k.pass) << 56) ^
                     (static_cast<uint64_t>(k.block) << 60) ^
                     (static_cast<uint64_t>(k.recompute_attention) << 63);
  uint64_t h = a * 0x9E3779B97F4A7C15ULL ^ b * 0xC2B2AE3D27D4EB4FULL;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ULL;
  return static_cast<size_t>(h ^ (h >> 29));
}

void WorkIndex::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.id < 0) continue;
    size_t i = Hash(slot.key) & mask;
    while (slots_[i].id >= 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

[[gnu::always_inline]] inline int WorkIndex::InternWork(const SliceWork& work) {
  const Key key{work.tokens,
                work.context,
                work.layers,
                work.rows,
                work.tp,
                static_cast<uint8_t>(work.pass),
                static_cast<uint8_t>(work.block),
                static_cast<uint8_t>(work.recompute_attention),
                0};
  Slot& recent = recent_[key.block & 3];
  if (recent.id >= 0 && recent.key == key) return recent.id;
  if (2 * (works_.size() + 1) > slots_.size()) Grow();
  const size_t mask = slots_.size() - 1;
  size_t i = Hash(key) & mask;
  for (; slots_[i].id >= 0; i = (i + 1) & mask) {
    if (slots_[i].key == key) {
      recent = slots_[i];
      return slots_[i].id;
    }
  }
  const int id = static_cast<int>(works_.size());
  slots_[i] = Slot{key, id};
  recent = slots_[i];
  works_.push_back(work);
  return id;
}

int WorkIndex::InternOp(const Op& op, int tp, const OpFields& fields, Memo* memo) {
  const int id = InternWork(WorkOf(op, tp));
  *memo = Memo{fields, id};
  return id;
}

int WorkIndex::Intern(const SliceWork& work) { return InternWork(work); }

TimeNs WorkTimeCache::TimeOf(int id, const SliceWork& work) {
  if (id >= static_cast<int>(ns_.size())) ns_.resize(id + 1, -1);
  TimeNs& ns = ns_[id];
  if (ns < 0) {
    ns = cost_.Time(work);
    ++calls_;
  }
  return ns;
}

}  // namespace terasim

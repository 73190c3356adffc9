#include "schedule/compact_schedule.h"

#include <functional>

namespace terasim {
namespace {

size_t HashOf(std::string_view text) { return std::hash<std::string_view>()(text); }

template <typename T>
size_t CapacityBytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

}  // namespace

int NamePool::Find(std::string_view text) const {
  if (slots_.empty()) {
    for (int id = 0; id < Size(); ++id) {
      if (View(id) == text) return id;
    }
    return -1;
  }
  const size_t hash = HashOf(text);
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const int id = slots_[i];
    if (id < 0) return -1;
    if (slot_hash_[i] == static_cast<uint32_t>(hash) && View(id) == text) return id;
  }
}

void NamePool::Seal() {
  std::vector<int32_t>().swap(slots_);  // (`slots_ = {}` would keep the capacity)
  std::vector<uint32_t>().swap(slot_hash_);
  chars_.shrink_to_fit();
  offsets_.shrink_to_fit();
}

int NamePool::Intern(std::string_view text) {
  if (2 * (static_cast<size_t>(Size()) + 1) > slots_.size()) {
    size_t capacity = 1024;
    while (capacity < 4 * (static_cast<size_t>(Size()) + 1)) capacity *= 2;
    Rehash(capacity);
  }
  const size_t hash = HashOf(text);
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const int id = slots_[i];
    if (id < 0) {
      const int added = Size();
      chars_.append(text);
      offsets_.push_back(static_cast<uint32_t>(chars_.size()));
      slots_[i] = added;
      slot_hash_[i] = static_cast<uint32_t>(hash);
      return added;
    }
    if (slot_hash_[i] == static_cast<uint32_t>(hash) && View(id) == text) return id;
  }
}

void NamePool::Rehash(size_t capacity) {
  slots_.assign(capacity, -1);
  slot_hash_.assign(capacity, 0);
  const size_t mask = capacity - 1;
  for (int id = 0; id < Size(); ++id) {
    const size_t hash = HashOf(View(id));
    size_t i = hash & mask;
    while (slots_[i] >= 0) i = (i + 1) & mask;
    slots_[i] = id;
    slot_hash_[i] = static_cast<uint32_t>(hash);
  }
}

size_t NamePool::MemoryBytes() const {
  return chars_.capacity() + CapacityBytes(offsets_) + CapacityBytes(slots_) +
         CapacityBytes(slot_hash_);
}

size_t CompactSchedule::MemoryBytes() const {
  return names.MemoryBytes() + CapacityBytes(ops) + CapacityBytes(after_offset) +
         CapacityBytes(after_name);
}

GroupOfName::GroupOfName(const CompactSchedule& s) : s_(s), group_(s.names.Size(), -2) {}

int GroupOfName::operator()(int name) {
  if (name < 0) return -1;
  int& g = group_[name];
  if (g == -2) {
    g = -1;
    for (size_t i = 0; i < s_.groups.size() && g < 0; ++i) {
      if (s_.groups[i].name == s_.Name(name)) g = static_cast<int>(i);
    }
  }
  return g;
}

namespace {

// The header fields, alike in Schedule and CompactSchedule.
template <typename From, typename To>
void CopyHeader(const From& from, To& to) {
  to.model = from.model;
  to.layers = from.layers;
  to.sequence = from.sequence;
  to.devices = from.devices;
  to.batch = from.batch;
  to.shape = from.shape;
  to.groups = from.groups;
  to.source = from.source;
}

// The op fields that are numbers in both Op and CompactOp.
template <typename From, typename To>
void CopyNumbers(const From& from, To& to) {
  to.kind = from.kind;
  to.device = from.device;
  to.stage = from.stage;
  to.layers = from.layers;
  to.part = from.part;
  to.microbatch = from.microbatch;
  to.rows = from.rows;
  to.tokens = from.tokens;
  to.peer = from.peer;
  to.bytes = from.bytes;
  to.line = from.line;
  to.recompute = from.recompute;
  to.sequence_parallel = from.sequence_parallel;
  to.zero = static_cast<decltype(to.zero)>(from.zero);
}

}  // namespace

CompactSchedule ToCompact(const Schedule& s) {
  CompactSchedule c;
  CopyHeader(s, c);
  c.ops.reserve(s.ops.size());
  c.after_offset.reserve(s.ops.size() + 1);
  auto intern = [&c](const std::string& text) { return text.empty() ? -1 : c.names.Intern(text); };
  for (const Op& op : s.ops) {
    CompactOp o;
    CopyNumbers(op, o);
    o.key = c.names.Intern(op.key);
    o.stream = c.names.Intern(op.stream);
    o.group = intern(op.group);
    o.tensor = intern(op.tensor);
    for (const std::string& dep : op.after) c.after_name.push_back(c.names.Intern(dep));
    c.AddOp(o);
  }
  c.names.Seal();
  return c;
}

Schedule ToSchedule(const CompactSchedule& c) {
  Schedule s;
  CopyHeader(c, s);
  s.ops.reserve(c.ops.size());
  for (size_t i = 0; i < c.ops.size(); ++i) {
    const CompactOp& o = c.ops[i];
    Op op;
    CopyNumbers(o, op);
    op.key = std::string(c.Name(o.key));
    op.stream = std::string(c.Name(o.stream));
    op.group = std::string(c.Name(o.group));
    op.tensor = std::string(c.Name(o.tensor));
    for (int32_t dep : c.AfterNames(static_cast<int>(i))) op.after.emplace_back(c.Name(dep));
    s.ops.push_back(std::move(op));
  }
  return s;
}

}  // namespace terasim

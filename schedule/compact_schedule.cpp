#include "schedule/compact_schedule.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace terasim {
namespace {

constexpr uint64_t kHashMask = ~uint64_t{0} << 32;

template <typename T>
size_t CapacityBytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

void FreeSlots(uint64_t* slots) { std::free(slots); }

// `count` zeroed words, in transparent huge pages where the kernel has them (a hint; without
// them, ordinary pages).
std::unique_ptr<uint64_t[], void (*)(uint64_t*)> ZeroedSlots(size_t count) {
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t bytes = count * sizeof(uint64_t);
  const size_t align = bytes >= kHuge ? kHuge : alignof(std::max_align_t);
  void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (align == kHuge) madvise(p, bytes, MADV_HUGEPAGE);  // before the pages are touched
#endif
  std::memset(p, 0, bytes);
  return {static_cast<uint64_t*>(p), FreeSlots};
}

}  // namespace

void AdviseHugePages(const void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

// A 64-bit hash, eight bytes at a time (names are 10-40 characters; the standard library's
// hash was a tenth of `terasim check`).
uint64_t NamePool::Hash(std::string_view text) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  uint64_t h = text.size() * kMul;
  const char* p = text.data();
  size_t n = text.size();
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    h = (h ^ word) * kMul;
    h ^= h >> 32;
  }
  if (n > 0) {
    // The last n bytes as a number, zero above (as if copied into a zeroed word), by loads
    // within the text: no byte loop, no store and reload.
    uint64_t word = 0;
    if (text.size() >= 8) {
      std::memcpy(&word, p + n - 8, 8);
      word >>= 8 * (8 - n);
    } else if (n >= 4) {
      uint32_t low, high;
      std::memcpy(&low, p, 4);
      std::memcpy(&high, p + n - 4, 4);
      word = low | (static_cast<uint64_t>(high) << (8 * (n - 4)));
    } else {
      word = static_cast<uint64_t>(static_cast<unsigned char>(p[0])) |
             static_cast<uint64_t>(static_cast<unsigned char>(p[n / 2])) << (8 * (n / 2)) |
             static_cast<uint64_t>(static_cast<unsigned char>(p[n - 1])) << (8 * (n - 1));
    }
    h = (h ^ word) * kMul;
  }
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 32);
}

int NamePool::Find(std::string_view text) const {
  if (slot_count_ == 0) {
    for (int id = 0; id < Size(); ++id) {
      if (View(id) == text) return id;
    }
    return -1;
  }
  const uint64_t hash = Hash(text);
  const size_t mask = slot_count_ - 1;
  for (size_t i = (hash >> 32) & mask;; i = (i + 1) & mask) {
    const uint64_t slot = slots_[i];
    if (slot == 0) return -1;
    const int id = static_cast<int>(static_cast<uint32_t>(slot)) - 1;
    if ((slot & kHashMask) == (hash & kHashMask) && Same(View(id), text)) return id;
  }
}

void NamePool::Reserve(size_t names, size_t chars, size_t table_names) {
  if (chars > chars_.capacity()) {
    chars_.reserve(chars);
    AdviseHugePages(chars_.data() + chars_.size(), chars_.capacity() - chars_.size());
  }
  ReserveHuge(offsets_, names + 1);
  size_t capacity = 1024;
  while (capacity * 7 < table_names * 10) capacity *= 2;
  if (capacity > slot_count_) Rehash(capacity);
}

void NamePool::Seal() {
  // The text and offsets keep their capacity: shrinking would copy them, and capacity never
  // written is never resident.
  slots_.reset();
  slot_count_ = 0;
}

int NamePool::Intern(std::string_view text, uint64_t hash) {
  if ((static_cast<size_t>(Size()) + 1) * 10 > slot_count_ * 7) {
    // Double; from a sealed pool (no table), room for every name already there.
    size_t capacity = std::max<size_t>(1024, 2 * slot_count_);
    while (capacity * 7 < (static_cast<size_t>(Size()) + 1) * 10) capacity *= 2;
    Rehash(capacity);
  }
  const size_t mask = slot_count_ - 1;
  for (size_t i = (hash >> 32) & mask;; i = (i + 1) & mask) {
    const uint64_t slot = slots_[i];
    if (slot == 0) {
      const int added = Size();
      chars_.append(text);
      offsets_.push_back(static_cast<uint32_t>(chars_.size()));
      slots_[i] = (hash & kHashMask) | static_cast<uint32_t>(added + 1);
      return added;
    }
    const int id = static_cast<int>(static_cast<uint32_t>(slot)) - 1;
    if ((slot & kHashMask) == (hash & kHashMask) && Same(View(id), text)) return id;
  }
}

void NamePool::Rehash(size_t capacity) {
  // A slot's index is taken from the hash's high 32 bits, which the slot keeps: growing reads
  // no text. A sealed pool (no table) hashes its texts again.
  auto old = ZeroedSlots(capacity);
  old.swap(slots_);
  const size_t old_count = slot_count_;
  slot_count_ = capacity;
  const size_t mask = capacity - 1;
  auto place = [&](uint64_t slot) {
    size_t i = (slot >> 32) & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = slot;
  };
  if (old_count == 0) {
    for (int id = 0; id < Size(); ++id) {
      place((Hash(View(id)) & kHashMask) | static_cast<uint32_t>(id + 1));
    }
  }
  for (size_t i = 0; i < old_count; ++i) {
    if (old[i] != 0) place(old[i]);
  }
}

size_t NamePool::MemoryBytes() const {
  return chars_.capacity() + CapacityBytes(offsets_) + slot_count_ * sizeof(uint64_t);
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

// CompactSchedule: a Schedule in flat arrays, for schedules of millions of ops (issue #12).
//
// Every string of the ops (keys, stream, group and tensor names, `after` references) is
// interned once in one NamePool and held as a 32-bit id; an op is a fixed-size record of
// integers; `after` lists are stored flat (CSR) as name ids. The .pir reader streams into it
// (schedule/pir_format.h ReadCompactPir) and the checker runs on it (schedule/checker.h), so a
// million-op `terasim check` allocates a few large arrays rather than millions of strings.
// Strings are built only for messages and output. Schedule (schedule/schedule_ir.h) stays the
// API of the generators, the simulator and the executor; ToSchedule / ToCompact convert.
//
// An `after` reference is a name id, not an op position: a reference may name a later op, an
// unknown key or a duplicated one, which IndexSchedule (schedule/schedule_index.h) resolves
// and reports. Not thread safe while being built; immutable (and shareable) afterwards.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schedule/op.h"
#include "schedule/schedule_ir.h"

namespace terasim {

// Interned strings with dense ids 0, 1, ...; an id's text never moves once interning stops
// (views returned by View stay valid until the next Intern).
class NamePool {
 public:
  // The id of `text`, added when new.
  int Intern(std::string_view text) { return Intern(text, Hash(text)); }
  // The same with `hash` == Hash(text).
  int Intern(std::string_view text, uint64_t hash);
  static uint64_t Hash(std::string_view text);
  // a == b, inline and a word at a time (names are mostly 8-40 characters; a memcmp call per
  // comparison was 3 % of `terasim check`).
  static bool Same(std::string_view a, std::string_view b) {
    const size_t n = a.size();
    if (n != b.size()) return false;
    const char* p = a.data();
    const char* q = b.data();
    if (n >= 8) {
      size_t i = 0;
      for (; i + 8 <= n; i += 8) {
        if (Load8(p + i) != Load8(q + i)) return false;
      }
      return i == n || Load8(p + n - 8) == Load8(q + n - 8);  // the last, overlapping
    }
    if (n >= 4) return Load4(p) == Load4(q) && Load4(p + n - 4) == Load4(q + n - 4);
    for (size_t i = 0; i < n; ++i) {
      if (p[i] != q[i]) return false;
    }
    return true;
  }
  // Starts loading the table slot where Intern(text, hash) looks first, for a caller that has
  // other work to do before the look-up (a look-up is mostly a cache miss).
  void Prefetch(uint64_t hash) const {
    if (slot_count_ > 0) __builtin_prefetch(&slots_[(hash >> 32) & (slot_count_ - 1)]);
  }
  // The id of `text`, or -1. After Seal, a linear scan (for tests and rare look-ups).
  int Find(std::string_view text) const;
  // Room for `names` names of `chars` characters in all (a hint: the table and text then grow
  // no more while the hint holds).
  void Reserve(size_t names, size_t chars) { Reserve(names, chars, names); }
  // The same with a hash table for `table_names` names only (the table is touched at random,
  // the text and offsets in order: a table larger than needed costs cache misses and memory,
  // one grown once costs a rehash).
  void Reserve(size_t names, size_t chars, size_t table_names);
  // Frees the hash table once reading is done (a later Intern rebuilds it): a million names
  // hold about 16 MB of table.
  void Seal();
  std::string_view View(int id) const {
    return std::string_view(chars_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  int Size() const { return static_cast<int>(offsets_.size()) - 1; }
  // Characters of text held.
  size_t Chars() const { return chars_.size(); }
  // Bytes held (text, offsets and hash table), for reports.
  size_t MemoryBytes() const;

 private:
  static uint64_t Load8(const char* p) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    return word;
  }
  static uint32_t Load4(const char* p) {
    uint32_t word;
    std::memcpy(&word, p, 4);
    return word;
  }
  void Rehash(size_t capacity);

  std::string chars_;
  std::vector<uint32_t> offsets_{0};  // id -> start in chars_; size() == Size() + 1
  // Open addressing on the hash's high 32 bits, at most 7/10 full: each slot holds those bits
  // and id + 1 (0 when empty), so that a probe reads one word and growing reads no text.
  // Allocated in huge pages where the system offers them: a million-name table spans 16 MB,
  // and with small pages nearly every look-up also missed the TLB.
  std::unique_ptr<uint64_t[], void (*)(uint64_t*)> slots_{nullptr, nullptr};
  size_t slot_count_ = 0;
};

// An Op with its strings as NamePool ids (-1 where the Op's string is empty). 64 bytes rather
// than 80: the kind, part, recompute and sp share one word with bytes (at most 2^50,
// models/limits.h), zero one with rows (at most 2^16). The enum bit-fields are signed, hence a
// spare bit each. (48 bytes would not hold it: four name ids, bytes, line, five ranged
// integers, the two ranges and the flags take about 400 bits at the limits of models/limits.h.)
struct CompactOp {
  int64_t bytes : 52 = 0;
  OpKind kind : 5 = OpKind::kFwd;
  LayerPart part : 3 = LayerPart::kWhole;
  Recompute recompute : 3 = Recompute::kNone;
  bool sequence_parallel : 1 = false;
  int32_t key = -1;
  int32_t stream = -1;
  int32_t group = -1;
  int32_t tensor = -1;
  int32_t device = 0;
  int32_t stage = -1;
  int32_t microbatch = -1;
  int32_t rows : 28 = 0;
  int32_t zero : 4 = 0;  // ZeRO stage 0-3
  int32_t peer = -1;
  int32_t line = 0;
  Range layers;
  Range tokens;
};
static_assert(sizeof(CompactOp) == 64);

struct CompactSchedule {
  std::string model;
  int layers = 0;
  int sequence = 0;
  int devices = 0;
  int batch = 0;
  ScheduleShape shape;
  std::vector<Group> groups;
  std::string source;  // file it was read from ("" when converted from a generated Schedule)

  NamePool names;
  std::vector<CompactOp> ops;
  std::vector<uint32_t> after_offset{0};  // size ops + 1: op i's refs are after_name[[i], [i+1])
  std::vector<int32_t> after_name;        // `after` references, as name ids

  std::string_view Name(int id) const { return id < 0 ? std::string_view() : names.View(id); }
  std::string_view Key(const CompactOp& op) const { return names.View(op.key); }
  std::span<const int32_t> AfterNames(int op) const {
    return {after_name.data() + after_offset[op], after_name.data() + after_offset[op + 1]};
  }
  // Appends `op` with the `after` references pushed since the previous AddOp.
  void AddOp(const CompactOp& op) {
    ops.push_back(op);
    after_offset.push_back(static_cast<uint32_t>(after_name.size()));
  }
  // Bytes held by the arrays (capacity), for reports.
  size_t MemoryBytes() const;
};

// Maps name ids to positions in groups (the first declaration of a name), resolving each
// distinct id once by its text: ops name a handful of groups a million times.
class GroupOfName {
 public:
  explicit GroupOfName(const CompactSchedule& schedule);
  // The group named by name id `name`, or -1 (none declared, or name < 0).
  int operator()(int name);

 private:
  const CompactSchedule& s_;
  std::vector<int> group_;  // name id -> group, -1 none, -2 not resolved yet
};

// Asks the kernel for transparent huge pages in [data, data + bytes) (the 2 MB pages inside
// it; a hint, before the pages are first touched): a fault per 2 MB rather than per 4 kB, for
// the arrays of a million ops.
void AdviseHugePages(const void* data, size_t bytes);
// Reserves `count` elements of `v` in huge pages where it is a fresh allocation.
template <typename T>
void ReserveHuge(std::vector<T>& v, size_t count) {
  if (count <= v.capacity()) return;
  v.reserve(count);
  AdviseHugePages(v.data() + v.size(), (v.capacity() - v.size()) * sizeof(T));
}

// v.assign(count, value), in huge pages where the array is a fresh allocation.
template <typename T>
void AssignHuge(std::vector<T>& v, size_t count, const T& value) {
  ReserveHuge(v, count);
  v.assign(count, value);
}

CompactSchedule ToCompact(const Schedule& schedule);
Schedule ToSchedule(const CompactSchedule& compact);

}  // namespace terasim

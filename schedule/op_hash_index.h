// OpHashIndex: an open-addressing hash index of op positions, keyed by a value derived from
// each op (its key string, or a (sender, receiver, tensor) triple). The checker builds several
// over a million ops; std::unordered_map's node per entry made those builds most of its time.
//
// Holds positions only; `key_of(position)` recomputes an entry's key, so keys may be views
// into the Schedule, which must outlive the index. Not thread safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace terasim {

template <typename Key, typename KeyOf, typename Hash = std::hash<Key>>
class OpHashIndex {
 public:
  // Sized for `expected` entries (it never grows).
  OpHashIndex(size_t expected, KeyOf key_of) : key_of_(std::move(key_of)) {
    size_t capacity = 16;
    while (capacity < 2 * expected + 2) capacity *= 2;
    mask_ = capacity - 1;
    slots_.assign(capacity, -1);
    hashes_.assign(capacity, 0);
  }

  // Adds `op` unless an op with an equal key is present. Returns the op now holding the key:
  // `op` itself, or the earlier one. Precondition: fewer entries than `expected`.
  int Insert(int op) {
    const Key key = key_of_(op);
    const size_t hash = Hash()(key);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      if (slots_[i] < 0) {
        slots_[i] = op;
        hashes_[i] = hash;
        return op;
      }
      if (hashes_[i] == hash && key_of_(slots_[i]) == key) return slots_[i];
    }
  }

  // The op holding `key`, or -1.
  int Find(const Key& key) const {
    const size_t hash = Hash()(key);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      if (slots_[i] < 0) return -1;
      if (hashes_[i] == hash && key_of_(slots_[i]) == key) return slots_[i];
    }
  }

 private:
  KeyOf key_of_;
  size_t mask_ = 0;
  std::vector<int> slots_;  // op positions, -1 when empty
  std::vector<size_t> hashes_;
};

}  // namespace terasim

// OpHashIndex: an open-addressing hash index of op positions, keyed by a value derived from
// each op (such as a (sender, receiver, tensor) triple). The checker builds these over a
// million ops; std::unordered_map's node per entry made those builds most of its time.
//
// Each slot holds a copy of its op's key beside the position, so that a probe compares keys
// without reading the op (a cache miss per look-up in a million-op schedule). `key_of(position)`
// gives an op's key when it is inserted. Not thread safe.
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
    slots_.assign(capacity, Slot{});
  }

  // Adds `op` unless an op with an equal key is present. Returns the op now holding the key:
  // `op` itself, or the earlier one. Precondition: fewer entries than `expected`.
  int Insert(int op) {
    const Key key = key_of_(op);
    for (size_t i = Hash()(key) & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.op < 0) {
        slot.op = op;
        slot.key = key;
        return op;
      }
      if (slot.key == key) return slot.op;
    }
  }

  // The op holding `key`, or -1.
  int Find(const Key& key) const {
    for (size_t i = Hash()(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.op < 0) return -1;
      if (slot.key == key) return slot.op;
    }
  }

 private:
  struct Slot {
    Key key{};
    int op = -1;  // -1 when empty
  };
  KeyOf key_of_;
  size_t mask_ = 0;
  std::vector<Slot> slots_;
};

}  // namespace terasim

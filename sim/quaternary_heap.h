// A 4-ary min-heap of distinct integer keys in a vector (half the levels of a binary heap): the
// two operations EventQueue needs, inline for its hot path.
#pragma once

#include <cstddef>
#include <vector>

namespace terasim {

// Adds `key` to the 4-ary min-heap `heap` (sift up: the parent of i is (i - 1) / 4).
template <typename Key>
inline void QuaternarySiftUp(std::vector<Key>& heap, Key key) {
  size_t i = heap.size();
  heap.push_back(key);
  Key* const data = heap.data();
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!(key < data[parent])) break;
    data[i] = data[parent];
    i = parent;
  }
  data[i] = key;
}

// Removes and returns the smallest key of the non-empty 4-ary min-heap `heap` (its last key
// sifted down from the root: the children of i are 4i + 1 .. 4i + 4).
template <typename Key>
inline Key QuaternaryPopRoot(std::vector<Key>& heap) {
  const Key root = heap[0];
  const Key last = heap.back();
  heap.pop_back();
  const size_t n = heap.size();
  if (n == 0) return root;
  Key* const data = heap.data();
  size_t i = 0;
  for (;;) {
    const size_t first = 4 * i + 1;
    size_t best;
    if (first + 4 <= n) {
      // Four children: the smallest by a tournament of three comparisons (keys are distinct).
      const size_t a = data[first + 1] < data[first] ? first + 1 : first;
      const size_t b = data[first + 3] < data[first + 2] ? first + 3 : first + 2;
      best = data[b] < data[a] ? b : a;
    } else {
      if (first >= n) break;
      best = first;
      for (size_t c = first + 1; c < n; ++c) {
        if (data[c] < data[best]) best = c;
      }
    }
    if (!(data[best] < last)) break;
    data[i] = data[best];
    i = best;
  }
  data[i] = last;
  return root;
}

}  // namespace terasim

// TakeSlot: reuse of freed entries in a vector of records (flows, jobs, batches), so that
// records keep their index while they live and memory stays at the peak in use.
#pragma once

#include <vector>

namespace terasim {

// A slot of `items`: the last freed one (popped from `free`), else a new one at the end.
template <typename T>
[[gnu::always_inline]] inline int TakeSlot(std::vector<int>& free, std::vector<T>& items) {
  if (!free.empty()) {
    const int slot = free.back();
    free.pop_back();
    return slot;
  }
  items.emplace_back();
  return static_cast<int>(items.size()) - 1;
}

}  // namespace terasim

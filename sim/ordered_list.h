// RemoveKeepingOrder: removal of one id from a short list whose order matters (the flows on a
// channel, the jobs on a GPU: their order is the order the solvers visit them in).
#pragma once

#include <cstddef>
#include <vector>

namespace terasim {

// Removes `id` (precondition: listed once) from `list`; the others keep their order. One pass
// from the back, each element after `id` moved one place forward: for the lists of a few
// entries this is used on, cheaper than a find and a memmove.
inline void RemoveKeepingOrder(std::vector<int>& list, int id) {
  int carry = list.back();
  for (size_t k = list.size() - 1; carry != id;) {
    --k;
    const int here = list[k];
    list[k] = carry;
    carry = here;
  }
  list.pop_back();
}

}  // namespace terasim

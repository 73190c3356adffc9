#include "sim/event_queue.h"

#include "models/errors.h"

namespace terasim {

void EventQueue::ThrowEmpty() { TERASIM_CHECK(false, "Pop on an empty event queue"); }

void EventQueue::ThrowFull() const {
  TERASIM_CHECK(false, "event queue past its limits ({} events pushed, {} in its heap)", next_seq_,
                heap_.size());
}

void EventQueue::HeapPush(const Event& event) {
  if (event.seq >= kMaxSeq || (free_.empty() && events_.size() >> kSlotBits != 0)) [[unlikely]] {
    ThrowFull();
  }
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
    events_[slot] = event;
  } else {
    slot = static_cast<uint32_t>(events_.size());
    events_.push_back(event);
  }
  // Sift up: parent of i is (i - 1) / 4.
  const Key key = MakeKey(event.time_ns, event.seq, slot);
  size_t i = heap_.size();
  heap_.push_back(key);
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!Before(key, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = key;
}

Event EventQueue::HeapPop() {
  const uint32_t slot = SlotOf(heap_[0]);
  const Key last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  if (n > 0) {
    // Sift `last` down from the root: children of i are 4i + 1 .. 4i + 4.
    Key* const heap = heap_.data();
    size_t i = 0;
    for (;;) {
      const size_t first = 4 * i + 1;
      size_t best;
      if (first + 4 <= n) {
        // Four children: the smallest by a tournament of three comparisons (keys are distinct).
        const size_t a = Before(heap[first + 1], heap[first]) ? first + 1 : first;
        const size_t b = Before(heap[first + 3], heap[first + 2]) ? first + 3 : first + 2;
        best = Before(heap[b], heap[a]) ? b : a;
      } else {
        if (first >= n) break;
        best = first;
        for (size_t c = first + 1; c < n; ++c) {
          if (Before(heap[c], heap[best])) best = c;
        }
      }
      if (!Before(heap[best], last)) break;
      heap[i] = heap[best];
      i = best;
    }
    heap[i] = last;
  }
  free_.push_back(slot);
  return events_[slot];
}

}  // namespace terasim

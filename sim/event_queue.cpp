#include "sim/event_queue.h"

#include <algorithm>

#include "models/errors.h"

namespace terasim {
namespace {

// Adds `key` to the 4-ary min-heap `heap` (sift up: the parent of i is (i - 1) / 4).
template <typename Key>
void SiftUp(std::vector<Key>& heap, Key key) {
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
Key PopRoot(std::vector<Key>& heap) {
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

}  // namespace

void EventQueue::ThrowEmpty() { TERASIM_CHECK(false, "Pop on an empty event queue"); }

void EventQueue::ThrowFull() const {
  TERASIM_CHECK(false, "event queue past its limits ({} events pushed, {} in its heap)", next_seq_,
                narrow_.size() + wide_.size());
}

void EventQueue::HeapPush(const Event& event) {
  const bool reuse = !free_.empty();
  if (event.seq >= kMaxSeq || (!reuse && events_.size() >> kWideSlotBits != 0)) [[unlikely]] {
    ThrowFull();
  }
  uint32_t slot = reuse ? free_.back() : static_cast<uint32_t>(events_.size());
  bool fits = false;
  uint64_t narrow = 0;
  if (!wide_mode_) narrow = MakeNarrowKey(event.time_ns, event.seq, slot, &fits);
  if (wide_mode_ ? (++wide_pushes_ & 4095) == 0 : !fits) [[unlikely]] {
    Rekey(event.time_ns, event.seq);  // renumbers the slots: no free slot left
    slot = static_cast<uint32_t>(events_.size());
    if (!wide_mode_) narrow = MakeNarrowKey(event.time_ns, event.seq, slot, &fits);
  }
  if (!free_.empty()) {
    free_.pop_back();
    events_[slot] = event;
  } else {
    events_.push_back(event);
  }
  if (wide_mode_) {
    SiftUp(wide_, MakeWideKey(event.time_ns, event.seq, slot));
  } else {
    SiftUp(narrow_, narrow);
  }
}

void EventQueue::HeapPop(Event* event) {
  const uint32_t slot = wide_mode_ ? WideSlot(PopRoot(wide_)) : NarrowSlot(PopRoot(narrow_));
  free_.push_back(slot);
  *event = events_[slot];
}

void EventQueue::Rekey(TimeNs time_ns, uint64_t seq) {
  // The queued events by heap position, with (time_ns, seq) the bounds of the times and seqs.
  const size_t n = narrow_.size() + wide_.size();
  rekeyed_.clear();
  TimeNs min_ns = time_ns;
  TimeNs max_ns = time_ns;
  uint64_t min_seq = seq;
  uint64_t max_seq = seq;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t slot = wide_mode_ ? WideSlot(wide_[i]) : NarrowSlot(narrow_[i]);
    const Event& event = events_[slot];
    rekeyed_.push_back(event);
    min_ns = std::min(min_ns, event.time_ns);
    max_ns = std::max(max_ns, event.time_ns);
    min_seq = std::min(min_seq, event.seq);
    max_seq = std::max(max_seq, event.seq);
  }
  events_.swap(rekeyed_);
  free_.clear();
  // Narrow with room to spare (half of each bound), so that the next re-key is far off.
  const bool narrow = n + 1 <= (size_t{1} << (kNarrowSlotBits - 1)) &&
                      static_cast<uint64_t>(max_ns) - static_cast<uint64_t>(min_ns) <
                          (uint64_t{1} << (kNarrowTimeBits - 1)) &&
                      max_seq - min_seq < (uint64_t{1} << (kNarrowSeqBits - 1));
  wide_mode_ = !narrow;
  wide_pushes_ = 0;
  if (narrow) {
    base_time_ns_ = min_ns;
    base_seq_ = min_seq;
    narrow_.resize(n);
    wide_.clear();
    for (size_t i = 0; i < n; ++i) {
      bool fits = false;
      narrow_[i] =
          MakeNarrowKey(events_[i].time_ns, events_[i].seq, static_cast<uint32_t>(i), &fits);
    }
  } else {
    wide_.resize(n);
    narrow_.clear();
    for (size_t i = 0; i < n; ++i) {
      wide_[i] = MakeWideKey(events_[i].time_ns, events_[i].seq, static_cast<uint32_t>(i));
    }
  }
}

}  // namespace terasim

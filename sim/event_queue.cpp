#include "sim/event_queue.h"

#include <algorithm>

#include "models/errors.h"

namespace terasim {

void EventQueue::ThrowEmpty() { TERASIM_CHECK(false, "Pop on an empty event queue"); }

void EventQueue::ThrowFull() const {
  TERASIM_CHECK(false, "event queue past its limits ({} events pushed, {} in its heap)", next_seq_,
                narrow_.size() + wide_.size());
}

[[gnu::always_inline]] inline void EventQueue::SortedInsert(uint64_t key) {
  const size_t n = narrow_.size() - head_;
  if (n >= kSortedMax) [[unlikely]] {
    ToHeap();
    QuaternarySiftUp(narrow_, key);
    return;
  }
  if (n == 0) {
    narrow_.push_back(key);
    return;
  }
  uint64_t* const begin = narrow_.data() + head_;
  const uint64_t middle = begin[n / 2];
  if (key < middle && head_ > 0) {
    // In the front half: the smaller keys move one place forward (middle stops the scan).
    uint64_t* at = begin - 1;
    while (at[1] < key) {
      at[0] = at[1];
      ++at;
    }
    *at = key;
    --head_;
    return;
  }
  if (head_ >= 64 && head_ >= n) {
    // Compact: the keys to the front of the vector.
    std::copy(begin, begin + n, narrow_.data());
    narrow_.resize(n);
    head_ = 0;
  }
  narrow_.push_back(key);
  uint64_t* at = narrow_.data() + narrow_.size() - 1;
  if (key > middle) {
    // The larger keys move one place back (middle stops the scan).
    while (at[-1] > key) {
      at[0] = at[-1];
      --at;
    }
  } else {
    const uint64_t* const first = narrow_.data() + head_;
    while (at > first && at[-1] > key) {
      at[0] = at[-1];
      --at;
    }
  }
  *at = key;
}

void EventQueue::HeapPush(const Event& event) {
  if (!wide_mode_) [[likely]] {
    // The narrow keys' case, on its own (the rest is out of line).
    const bool reuse = !free_.empty();
    const uint32_t slot = reuse ? free_.back() : static_cast<uint32_t>(events_.size());
    bool fits = false;
    const uint64_t key = MakeNarrowKey(event.time_ns, event.seq, slot, &fits);
    if (fits && event.seq < kMaxSeq) [[likely]] {
      if (reuse) {
        free_.pop_back();
        events_[slot] = event;
      } else {
        events_.push_back(event);
      }
      if (sorted_) {
        SortedInsert(key);
      } else {
        QuaternarySiftUp(narrow_, key);
      }
      return;
    }
  }
  HeapPushSlow(event);
}

void EventQueue::HeapPushSlow(const Event& event) {
  const bool reuse = !free_.empty();
  if (event.seq >= kMaxSeq || (!reuse && events_.size() >> kWideSlotBits != 0)) [[unlikely]] {
    ThrowFull();
  }
  uint32_t slot = reuse ? free_.back() : static_cast<uint32_t>(events_.size());
  bool fits = false;
  uint64_t narrow = 0;
  if (!wide_mode_) narrow = MakeNarrowKey(event.time_ns, event.seq, slot, &fits);
  if (wide_mode_ ? (++wide_pushes_ & 4095) == 0 : !fits) {
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
    QuaternarySiftUp(wide_, MakeWideKey(event.time_ns, event.seq, slot));
  } else if (sorted_) {
    SortedInsert(narrow);
  } else {
    QuaternarySiftUp(narrow_, narrow);
  }
}

void EventQueue::ToHeap() {
  narrow_.erase(narrow_.begin(), narrow_.begin() + static_cast<std::ptrdiff_t>(head_));
  head_ = 0;
  sorted_ = false;
}

void EventQueue::ToSorted() {
  std::sort(narrow_.begin(), narrow_.end());
  sorted_ = true;
}

void EventQueue::WideHeapPop(Event* event) {
  const uint32_t slot = WideSlot(QuaternaryPopRoot(wide_));
  free_.push_back(slot);
  *event = events_[slot];
}

void EventQueue::Rekey(TimeNs time_ns, uint64_t seq) {
  if (head_ > 0) {
    narrow_.erase(narrow_.begin(), narrow_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
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
    sorted_ = false;  // ascending keys are a heap
    wide_.resize(n);
    narrow_.clear();
    for (size_t i = 0; i < n; ++i) {
      wide_[i] = MakeWideKey(events_[i].time_ns, events_[i].seq, static_cast<uint32_t>(i));
    }
  }
}

}  // namespace terasim

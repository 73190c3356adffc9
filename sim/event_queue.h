// EventQueue: the simulator's future-event list.
//
// Events are small values ordered by (time_ns, seq): seq is assigned by Push in insertion order,
// so events at equal times pop in the order they were pushed, never by address or payload. That
// makes every replay deterministic. Not thread-safe; one queue belongs to one Engine.
//
// Cost: about half of a replay's events are due at the time being handled (a rate solve, a
// zero-length transfer). Those go to a FIFO instead of the heap: an event pushed with the time
// of the last one popped (or of the FIFO's last) is already in (time, seq) order behind the
// FIFO, and Pop takes the smaller of the FIFO's front and the heap's top. The "heap" holds
// integer keys: the time, then the seq and the slot of the event's payload (held aside in
// reused slots) packed below it, so that one integer comparison orders two events by (time,
// seq). While at most 256 events are in it, its narrow keys (below) are kept sorted, from
// head_ on: a pop takes the first; a push compares with the middle key and, on that side,
// moves the keys between the nearer end and its place by one (a replay keeps about one event
// per simulated device, and its pushes land among the first few or the last few dozen: short
// moves, one hard-to-predict branch, where a pop from a heap's root sifts through every level
// with a hard-to-predict branch at each). Past 256 the sorted keys become a 4-ary heap as they
// are (a sorted array is one), and a heap pop that leaves at most 64 sorts them again. The keys are
// 64-bit (narrow) while the queued events' times and seqs lie within 2^36 ns and 2^18 seqs of a
// base and at most 2^10 events are in the heap: packed relative to the bases, they order as the
// (time, seq) pairs do. An event outside those bounds re-keys the heap (new bases, each entry
// re-packed in place: the same order, so the same heap), and to 128-bit keys (wide: time x 2^64 +
// seq x 2^24 + slot) when the bounds cannot hold the queue; a wide heap tries the narrow keys again
// every 4096 pushes. Limits: 2^40 events pushed and 2^24 events in the heap at once (InternalError
// beyond).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/units.h"
#include "sim/quaternary_heap.h"

namespace terasim {

struct Event {
  TimeNs time_ns = 0;
  uint64_t seq = 0;  // assigned by EventQueue::Push
  int handler = 0;   // which EventHandler of the Engine receives it
  int kind = 0;      // meaning defined by the handler
  int64_t a = 0;     // payload, meaning defined by the handler
  int64_t b = 0;
};

class EventQueue {
 public:
  // Adds `event` (its seq is overwritten with the next sequence number). Returns that seq.
  // Inline, as is Pop's FIFO path: one of each per event.
  uint64_t Push(Event event) {
    event.seq = next_seq_++;
    if (event.seq >= kMaxSeq) [[unlikely]] {
      ThrowFull();
    }
    const bool fifo_empty = fifo_head_ == fifo_tail_;
    if (fifo_empty ? event.time_ns == last_popped_ns_ : event.time_ns == fifo_.back().time_ns) {
      if (fifo_empty) {
        fifo_.clear();
        fifo_head_ = 0;
        fifo_tail_ = 0;
      }
      fifo_.push_back(event);
      ++fifo_tail_;
    } else {
      HeapPush(event);
    }
    return event.seq;
  }
  // Takes the next seq without queueing an event: a place in the (time, seq) order kept for an
  // event that may never be needed (PushReserved queues it there). Later pushes order after it.
  uint64_t ReserveSeq() { return next_seq_++; }
  // Adds `event` with the seq it carries, one from ReserveSeq that no event has used yet.
  void PushReserved(const Event& event) { HeapPush(event); }
  // Removes and returns the earliest event (ties: lowest seq). Precondition: !Empty().
  Event Pop() {
    Event event;
    Pop(&event);
    return event;
  }
  // Pop into *event (the engine's loop: one copy of the event).
  void Pop(Event* event) {
    if (fifo_head_ < fifo_tail_) {
      const Event& front = fifo_[fifo_head_];
      if (HeapEmpty() || !TopBefore(front.time_ns, front.seq)) {
        ++fifo_head_;
        last_popped_ns_ = front.time_ns;
        *event = front;
        return;
      }
    } else if (HeapEmpty()) [[unlikely]] {
      ThrowEmpty();
    }
    HeapPop(event);
    last_popped_ns_ = event->time_ns;
  }
  // Whether an event due at time_ns is queued (time_ns <= every queued event's time).
  bool HasEventAt(TimeNs time_ns) const {
    return (fifo_head_ < fifo_tail_ && fifo_[fifo_head_].time_ns == time_ns) ||
           (!HeapEmpty() && TopTime() == time_ns);
  }
  bool Empty() const { return HeapEmpty() && fifo_head_ == fifo_tail_; }
  // The seq the next Push will assign.
  uint64_t NextSeq() const { return next_seq_; }
  // Whether the heap holds 128-bit keys now (see above; for tests).
  bool WideKeys() const { return wide_mode_; }
  size_t Size() const { return narrow_.size() - head_ + wide_.size() + (fifo_tail_ - fifo_head_); }
  // Whether the narrow keys are kept sorted now (see above; for tests).
  bool SortedKeys() const { return sorted_; }

 private:
  // Narrow key: (time - base_time_ns_) x 2^28 + (seq - base_seq_) x 2^10 + slot.
  static constexpr int kNarrowSlotBits = 10;
  static constexpr int kNarrowSeqBits = 18;
  static constexpr int kNarrowTimeBits = 36;
  static constexpr uint64_t kNarrowSeqMask = (uint64_t{1} << kNarrowSeqBits) - 1;
  // Wide key: time_ns x 2^64 + seq x 2^24 + slot. Keys of distinct events differ in (time,
  // seq), so in either form their order is the events' (time, seq) order.
  static constexpr int kWideSlotBits = 24;
  static constexpr uint64_t kMaxSeq = uint64_t{1} << (64 - kWideSlotBits);
  using WideKey = __int128;
  static WideKey MakeWideKey(TimeNs time_ns, uint64_t seq, uint32_t slot) {
    return static_cast<WideKey>(static_cast<unsigned __int128>(static_cast<uint64_t>(time_ns))
                                    << 64 |
                                (seq << kWideSlotBits | slot));
  }
  static uint32_t WideSlot(WideKey key) {
    return static_cast<uint32_t>(static_cast<uint64_t>(key) & ((uint64_t{1} << kWideSlotBits) - 1));
  }
  static uint32_t NarrowSlot(uint64_t key) {
    return static_cast<uint32_t>(key & ((uint64_t{1} << kNarrowSlotBits) - 1));
  }
  // The narrow key of (time_ns, seq, slot); *fits false when it has none (the value is then
  // meaningless).
  uint64_t MakeNarrowKey(TimeNs time_ns, uint64_t seq, uint32_t slot, bool* fits) const {
    // Unsigned differences: a time or seq below its base wraps to a value that does not fit.
    const uint64_t dt = static_cast<uint64_t>(time_ns) - static_cast<uint64_t>(base_time_ns_);
    const uint64_t ds = seq - base_seq_;
    *fits = ((dt >> kNarrowTimeBits) | (ds >> kNarrowSeqBits) | (slot >> kNarrowSlotBits)) == 0;
    return dt << (kNarrowSeqBits + kNarrowSlotBits) | ds << kNarrowSlotBits | slot;
  }
  bool HeapEmpty() const { return narrow_.empty() && wide_.empty(); }
  // Sorted narrow keys up to kSortedMax; a heap's again at kToSorted or fewer.
  static constexpr size_t kSortedMax = 256;
  static constexpr size_t kToSorted = 64;
  // The heap top's time. Precondition: !HeapEmpty().
  TimeNs TopTime() const {
    return wide_.empty() ? base_time_ns_ + static_cast<TimeNs>(narrow_[head_] >>
                                                               (kNarrowSeqBits + kNarrowSlotBits))
                         : static_cast<TimeNs>(wide_[0] >> 64);
  }
  // Whether the heap top orders before (time_ns, seq). Precondition: !HeapEmpty().
  bool TopBefore(TimeNs time_ns, uint64_t seq) const {
    if (!wide_.empty()) return wide_[0] < MakeWideKey(time_ns, seq, 0);
    const TimeNs top_ns = TopTime();
    return top_ns < time_ns ||
           (top_ns == time_ns &&
            base_seq_ + (narrow_[head_] >> kNarrowSlotBits & kNarrowSeqMask) < seq);
  }
  void HeapPush(const Event& event);
  // HeapPush's other cases: wide keys, a re-key, the limits.
  [[gnu::noinline]] void HeapPushSlow(const Event& event);
  // Removes the heap's top into *event (inline for narrow keys: one call site per engine).
  void HeapPop(Event* event) {
    if (wide_mode_) [[unlikely]] {
      WideHeapPop(event);
      return;
    }
    uint64_t key;
    if (sorted_) {
      key = narrow_[head_++];
      if (head_ == narrow_.size()) {
        narrow_.clear();
        head_ = 0;
      }
    } else {
      key = QuaternaryPopRoot(narrow_);
      if (narrow_.size() <= kToSorted) [[unlikely]] {
        ToSorted();
      }
    }
    const uint32_t slot = NarrowSlot(key);
    free_.push_back(slot);
    *event = events_[slot];
  }
  // Inserts `key` into the sorted narrow keys.
  void SortedInsert(uint64_t key);
  // From sorted keys to a heap (a sorted array is one) and back.
  void ToHeap();
  void ToSorted();
  void WideHeapPop(Event* event);
  // Re-packs every heap entry for the queued events and one more at (time_ns, seq): narrow
  // keys around new bases when they hold them all with room to spare, else wide keys. Slots
  // are renumbered to heap positions (events_ compacted).
  void Rekey(TimeNs time_ns, uint64_t seq);
  [[noreturn]] static void ThrowEmpty();
  [[noreturn]] void ThrowFull() const;

  // The keys: narrow_ while they are narrow, else wide_ (the other one empty). narrow_ is
  // sorted from head_ on while sorted_ (head_ 0 otherwise), else a 4-ary min-heap; wide_ is a
  // 4-ary min-heap.
  std::vector<uint64_t> narrow_;
  std::vector<WideKey> wide_;
  bool wide_mode_ = false;
  bool sorted_ = true;
  size_t head_ = 0;
  uint64_t wide_pushes_ = 0;  // pushes since the heap went wide
  TimeNs base_time_ns_ = 0;
  uint64_t base_seq_ = 0;
  std::vector<Event> events_;   // by slot
  std::vector<Event> rekeyed_;  // Rekey's scratch
  std::vector<uint32_t> free_;  // free slots of events_
  std::vector<Event> fifo_;     // events at one time, in seq order, from fifo_head_
  size_t fifo_head_ = 0;
  size_t fifo_tail_ = 0;  // fifo_.size(), kept (no division by sizeof(Event) per event)
  TimeNs last_popped_ns_ = 0;
  uint64_t next_seq_ = 0;
};

}  // namespace terasim

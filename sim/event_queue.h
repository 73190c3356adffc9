// EventQueue: the simulator's future-event list.
//
// Events are small values ordered by (time_ns, seq): seq is assigned by Push in insertion order,
// so events at equal times pop in the order they were pushed, never by address or payload. That
// makes every replay deterministic. Not thread-safe; one queue belongs to one Engine.
//
// Cost: about half of a replay's events are due at the time being handled (a rate solve, a
// zero-length transfer). Those go to a FIFO instead of the heap: an event pushed with the time
// of the last one popped (or of the FIFO's last) is already in (time, seq) order behind the
// FIFO, and Pop takes the smaller of the FIFO's front and the heap's top. The heap itself is
// 4-ary (half the levels of a binary heap) over 16-byte keys, one 128-bit integer each: the
// time, then the seq and the slot of the event's payload (held aside in reused slots) packed
// below it, so that one integer comparison orders two events by (time, seq). Limits: 2^40
// events pushed and 2^24 events in the heap at once (InternalError beyond).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/units.h"

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
    const bool fifo_empty = fifo_head_ == fifo_.size();
    if (fifo_empty ? event.time_ns == last_popped_ns_ : event.time_ns == fifo_.back().time_ns) {
      if (fifo_empty) {
        fifo_.clear();
        fifo_head_ = 0;
      }
      fifo_.push_back(event);
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
    if (fifo_head_ < fifo_.size()) {
      const Event& front = fifo_[fifo_head_];
      if (heap_.empty() || !Before(heap_[0], MakeKey(front.time_ns, front.seq, 0))) {
        ++fifo_head_;
        last_popped_ns_ = front.time_ns;
        return front;
      }
    } else if (heap_.empty()) [[unlikely]] {
      ThrowEmpty();
    }
    Event event = HeapPop();
    last_popped_ns_ = event.time_ns;
    return event;
  }
  // Whether an event due at time_ns is queued (time_ns <= every queued event's time).
  bool HasEventAt(TimeNs time_ns) const {
    return (fifo_head_ < fifo_.size() && fifo_[fifo_head_].time_ns == time_ns) ||
           (!heap_.empty() && static_cast<TimeNs>(heap_[0] >> 64) == time_ns);
  }
  bool Empty() const { return heap_.empty() && fifo_head_ == fifo_.size(); }
  // The seq the next Push will assign.
  uint64_t NextSeq() const { return next_seq_; }
  size_t Size() const { return heap_.size() + (fifo_.size() - fifo_head_); }

 private:
  // A heap entry: time_ns x 2^64 + seq x 2^24 + the slot of its event in events_. Keys of
  // distinct events differ in (time, seq), so their order is the events' (time, seq) order.
  static constexpr int kSlotBits = 24;
  static constexpr uint64_t kMaxSeq = uint64_t{1} << (64 - kSlotBits);
  using Key = __int128;
  static Key MakeKey(TimeNs time_ns, uint64_t seq, uint32_t slot) {
    return static_cast<Key>(static_cast<unsigned __int128>(static_cast<uint64_t>(time_ns)) << 64 |
                            (seq << kSlotBits | slot));
  }
  static uint32_t SlotOf(Key key) {
    return static_cast<uint32_t>(static_cast<uint64_t>(key) & ((uint64_t{1} << kSlotBits) - 1));
  }
  static bool Before(Key x, Key y) { return x < y; }
  void HeapPush(const Event& event);
  Event HeapPop();
  [[noreturn]] static void ThrowEmpty();
  [[noreturn]] void ThrowFull() const;

  std::vector<Key> heap_;       // 4-ary min-heap
  std::vector<Event> events_;   // by slot
  std::vector<uint32_t> free_;  // free slots of events_
  std::vector<Event> fifo_;     // events at one time, in seq order, from fifo_head_
  size_t fifo_head_ = 0;
  TimeNs last_popped_ns_ = 0;
  uint64_t next_seq_ = 0;
};

}  // namespace terasim

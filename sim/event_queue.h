// EventQueue: the simulator's future-event list.
//
// Events are small values ordered by (time_ns, seq): seq is assigned by Push in insertion order,
// so events at equal times pop in the order they were pushed, never by address or payload. That
// makes every replay deterministic. Not thread-safe; one queue belongs to one Engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <queue>
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
  uint64_t Push(Event event);
  // Removes and returns the earliest event (ties: lowest seq). Precondition: !Empty().
  Event Pop();
  bool Empty() const { return heap_.empty(); }
  // The seq the next Push will assign.
  uint64_t NextSeq() const { return next_seq_; }
  size_t Size() const { return heap_.size(); }

 private:
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      return x.time_ns != y.time_ns ? x.time_ns > y.time_ns : x.seq > y.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace terasim

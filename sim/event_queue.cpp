#include "sim/event_queue.h"

#include "models/errors.h"

namespace terasim {

uint64_t EventQueue::Push(Event event) {
  event.seq = next_seq_++;
  heap_.push(event);
  return event.seq;
}

Event EventQueue::Pop() {
  TERASIM_CHECK(!heap_.empty(), "Pop on an empty event queue");
  Event event = heap_.top();
  heap_.pop();
  return event;
}

}  // namespace terasim

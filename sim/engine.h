// Engine: the discrete-event kernel. It owns the clock and the event queue; models (the flow
// network, the replay of a schedule) are EventHandlers that schedule events and react to them;
// tracing and statistics are EventObservers that watch every dispatched event and never change
// the simulation.
//
// The engine borrows its handlers and observers: they must outlive Run(). Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "models/units.h"
#include "sim/event_queue.h"

namespace terasim {

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  // Reacts to an event addressed to this handler; may schedule further events.
  virtual void Handle(const Event& event) = 0;
};

class EventObserver {
 public:
  virtual ~EventObserver() = default;
  // Called after each event has been handled.
  virtual void OnEvent(const Event& event) = 0;
};

class Engine {
 public:
  // Current simulated time: the time of the event being handled (0 before Run).
  TimeNs Now() const { return now_ns_; }

  // Registers a handler; returns its id for Event::handler.
  int AddHandler(EventHandler* handler);
  void AddObserver(EventObserver* observer);

  // Schedules an event for `handler` at `time_ns`; returns its seq. Throws InternalError when
  // time_ns < Now() or the handler id is unknown.
  // Inline: one is scheduled per event (the checks' messages are built out of line).
  uint64_t Schedule(TimeNs time_ns, int handler, int kind, int64_t a = 0, int64_t b = 0) {
    if (time_ns < now_ns_ || handler < 0 || handler >= static_cast<int>(handlers_.size()))
        [[unlikely]] {
      ThrowBadSchedule(time_ns, handler);
    }
    return queue_.Push(Event{time_ns, 0, handler, kind, a, b});
  }
  // The seq the next Schedule will assign: a handler that finds it one above the seq of an
  // event it scheduled knows that nothing was scheduled since (and may add work to that event).
  uint64_t NextSeq() const { return queue_.NextSeq(); }

  // Pops and dispatches events until the queue is empty. Returns the number dispatched.
  int64_t Run();

  int64_t EventsProcessed() const { return events_processed_; }

 private:
  [[noreturn]] void ThrowBadSchedule(TimeNs time_ns, int handler) const;

  EventQueue queue_;
  std::vector<EventHandler*> handlers_;
  std::vector<EventObserver*> observers_;
  TimeNs now_ns_ = 0;
  int64_t events_processed_ = 0;
};

}  // namespace terasim

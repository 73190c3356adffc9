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
  // Whether an event due at time_ns is queued.
  bool HasEventAt(TimeNs time_ns) const { return queue_.HasEventAt(time_ns); }

  // Keeps a place in the event order, at time Now() after every event scheduled so far, for an
  // event that may never be needed: ScheduleReserved puts one there while Passed() is false.
  // Returns its seq. (A handler that would schedule an event which often turns out to do
  // nothing reserves its place instead and schedules it only once it has work, in the order
  // the event would have had.)
  uint64_t Reserve() { return queue_.ReserveSeq(); }
  // Whether the dispatch has passed the place (time_ns, seq): an event there would have run.
  bool Passed(TimeNs time_ns, uint64_t seq) const {
    return now_ns_ > time_ns || (now_ns_ == time_ns && dispatched_ && current_seq_ > seq);
  }
  // Schedules an event for `handler` at the place (time_ns, seq) kept by Reserve. Precondition:
  // !Passed(time_ns, seq) and nothing was scheduled there yet.
  void ScheduleReserved(TimeNs time_ns, uint64_t seq, int handler, int kind, int64_t a = 0,
                        int64_t b = 0) {
    queue_.PushReserved(Event{time_ns, seq, handler, kind, a, b});
  }

  // For a handler about to schedule an event at Now() as the last thing it does: whether that
  // event would be dispatched next with nothing run in between (no other event due at Now(), no
  // observer). If so, gives the current event that event's seq (the one Schedule would assign,
  // as Run would on popping it: Passed and later seqs are as if it had been queued) and returns
  // true; the handler then handles it in place instead. Not counted in EventsProcessed.
  bool TakeNextInPlace() {
    if (!observers_.empty() || queue_.HasEventAt(now_ns_)) return false;
    current_seq_ = queue_.ReserveSeq();
    return true;
  }

  // Pops and dispatches events until the queue is empty. Returns the number dispatched.
  int64_t Run();

  int64_t EventsProcessed() const { return events_processed_; }

 private:
  [[noreturn]] void ThrowBadSchedule(TimeNs time_ns, int handler) const;

  EventQueue queue_;
  std::vector<EventHandler*> handlers_;
  std::vector<EventObserver*> observers_;
  TimeNs now_ns_ = 0;
  uint64_t current_seq_ = 0;  // the seq of the event being (or last) dispatched
  bool dispatched_ = false;   // whether an event has been dispatched (current_seq_ is valid)
  int64_t events_processed_ = 0;
};

}  // namespace terasim

#include "sim/engine.h"

#include "models/errors.h"

namespace terasim {

int Engine::AddHandler(EventHandler* handler) {
  handlers_.push_back(handler);
  return static_cast<int>(handlers_.size()) - 1;
}

void Engine::AddObserver(EventObserver* observer) { observers_.push_back(observer); }

void Engine::ThrowBadSchedule(TimeNs time_ns, int handler) const {
  TERASIM_CHECK(time_ns >= now_ns_, "event at {} ns scheduled in the past (now {} ns)", time_ns,
                now_ns_);
  TERASIM_CHECK(handler >= 0 && handler < static_cast<int>(handlers_.size()), "unknown handler {}",
                handler);
  TERASIM_CHECK(false, "Engine::Schedule rejected an event it accepts");
}

int64_t Engine::Run() {
  int64_t dispatched = 0;
  Event event;
  while (!queue_.Empty()) {
    queue_.Pop(&event);
    now_ns_ = event.time_ns;
    current_seq_ = event.seq;
    dispatched_ = true;
    handlers_[event.handler]->Handle(event);
    for (EventObserver* observer : observers_) observer->OnEvent(event);
    ++dispatched;
  }
  events_processed_ += dispatched;
  return dispatched;
}

}  // namespace terasim

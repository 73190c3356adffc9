// StopFlag and WaitFor: how the executor's threads block without hanging forever. Every
// blocking wait (a tensor not yet produced, a message not yet sent, a collective peer not yet
// arrived) polls a shared StopFlag, so one failing thread stops the rest, and gives up with a
// clear error after a stall timeout. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "models/errors.h"

namespace terasim {

// Thrown in a thread that was stopped because another one failed; the runner reports the
// first real error instead.
class StoppedError : public std::runtime_error {
 public:
  StoppedError() : std::runtime_error("stopped") {}
};

class StopFlag {
 public:
  void Stop() { stopped_.store(true); }
  bool Stopped() const { return stopped_.load(); }

 private:
  std::atomic<bool> stopped_{false};
};

// Waits on `cv` (with `lock` held) until `ready()`; throws StoppedError when `stop` is set and
// InternalError "stalled for N s waiting for WHAT" after `timeout`.
template <typename Ready>
void WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Ready ready,
             const StopFlag& stop, std::chrono::milliseconds timeout, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ready()) {
    if (stop.Stopped()) throw StoppedError();
    if (std::chrono::steady_clock::now() >= deadline) {
      throw InternalError(
          fmt::format("executor stalled for {} s waiting for {}", timeout.count() / 1000.0, what));
    }
    cv.wait_for(lock, std::chrono::milliseconds(20));
  }
}

}  // namespace terasim

// InProcessTransport: the Transport for devices that are threads of one process. A message is
// delivered into the receiver's mailbox when it is posted; matching, buffering, polling,
// stall detection and the collectives (gathered at the group's first member, combined in
// rank order) are TransportBase's. Thread-safe.
#pragma once

#include <chrono>

#include "exec/transport_base.h"

namespace terasim {

class InProcessTransport : public TransportBase {
 public:
  // Waits longer than `stall_timeout` throw InternalError naming what was awaited.
  explicit InProcessTransport(std::chrono::milliseconds stall_timeout = std::chrono::seconds(120))
      : TransportBase(Delivery::kAtPost, stall_timeout) {}

 protected:
  void Post(int from, int to, const std::string& name, std::span<const float> data) override {
    Deliver(from, to, name, std::vector<float>(data.begin(), data.end()));
  }
};

}  // namespace terasim

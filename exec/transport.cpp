#include "exec/transport.h"

#include "models/errors.h"

namespace terasim {

std::optional<std::vector<float>> Transport::TryRecv(int, int, const std::string& tensor) {
  throw InternalError("transport cannot poll (TryRecv of " + tensor + ")");
}

uint64_t Transport::Arrivals(int) { throw InternalError("transport cannot poll (Arrivals)"); }

void Transport::WaitArrival(int, uint64_t, std::chrono::milliseconds) {
  throw InternalError("transport cannot poll (WaitArrival)");
}

}  // namespace terasim

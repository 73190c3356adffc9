#include "exec/transport.h"

#include <algorithm>

#include "models/errors.h"

namespace terasim {

int GroupPosition(const CollectiveCall& call, int device) {
  auto it = std::find(call.ranks.begin(), call.ranks.end(), device);
  TERASIM_CHECK(it != call.ranks.end(), "device {} is not in group {}", device, call.group);
  return static_cast<int>(it - call.ranks.begin());
}

std::vector<float> Transport::ReduceScatter(const CollectiveCall& call,
                                            std::span<const float> data) {
  const size_t n = call.ranks.size();
  TERASIM_CHECK(data.size() % n == 0, "reduce-scatter {}: {} values over {} ranks", call.tensor,
                data.size(), n);
  std::vector<float> sum(data.begin(), data.end());
  AllReduce(call, sum);
  const size_t chunk = data.size() / n;
  const size_t begin = static_cast<size_t>(GroupPosition(call, call.device)) * chunk;
  return std::vector<float>(sum.begin() + begin, sum.begin() + begin + chunk);
}

std::optional<std::vector<float>> Transport::TryRecv(int, int, const std::string& tensor) {
  throw InternalError("transport cannot poll (TryRecv of " + tensor + ")");
}

uint64_t Transport::Arrivals(int) { throw InternalError("transport cannot poll (Arrivals)"); }

void Transport::WaitArrival(int, uint64_t, std::chrono::milliseconds) {
  throw InternalError("transport cannot poll (WaitArrival)");
}

}  // namespace terasim

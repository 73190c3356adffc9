#include "traces/trace_order.h"

#include <algorithm>
#include <numeric>
#include <tuple>

namespace terasim {

bool TraceRowBefore(const TraceRow& a, const TraceRow& b) {
  return std::tie(a.start_ns, a.device, a.stream, a.end_ns, a.iteration, a.key, a.kind, a.bytes,
                  a.flops) < std::tie(b.start_ns, b.device, b.stream, b.end_ns, b.iteration, b.key,
                                      b.kind, b.bytes, b.flops);
}

std::vector<size_t> CanonicalRowOrder(const std::vector<TraceRow>& rows) {
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return TraceRowBefore(rows[a], rows[b]); });
  return order;
}

}  // namespace terasim

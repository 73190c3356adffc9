#include "traces/trace_order.h"

#include <algorithm>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace terasim {

bool TraceRowBefore(const TraceRow& a, const TraceRow& b) {
  return std::tie(a.start_ns, a.device, a.stream, a.end_ns, a.iteration, a.key, a.kind, a.bytes,
                  a.flops) < std::tie(b.start_ns, b.device, b.stream, b.end_ns, b.iteration, b.key,
                                      b.kind, b.bytes, b.flops);
}

std::vector<size_t> CanonicalRowOrder(const std::vector<TraceRow>& rows) {
  // TraceRowBefore on integers: a trace has few stream names, so each row's stream becomes its
  // rank among them (the same order as the strings); rows equal on every leading field fall
  // back to TraceRowBefore for key, kind, bytes and flops.
  std::unordered_map<std::string_view, int> rank;
  for (const TraceRow& r : rows) rank.emplace(r.stream, 0);
  std::vector<std::string_view> names;
  names.reserve(rank.size());
  for (const auto& [name, unused] : rank) names.push_back(name);
  std::sort(names.begin(), names.end());
  for (size_t i = 0; i < names.size(); ++i) rank[names[i]] = static_cast<int>(i);
  struct Entry {
    TimeNs start, end;
    int device, stream, iteration;
    size_t index;
  };
  std::vector<Entry> entries(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const TraceRow& r = rows[i];
    entries[i] = {r.start_ns, r.end_ns, r.device, rank.at(r.stream), r.iteration, i};
  }
  std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
    const auto x = std::tie(a.start, a.device, a.stream, a.end, a.iteration);
    const auto y = std::tie(b.start, b.device, b.stream, b.end, b.iteration);
    if (x != y) return x < y;
    return TraceRowBefore(rows[a.index], rows[b.index]);
  });
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < entries.size(); ++i) order[i] = entries[i].index;
  return order;
}

}  // namespace terasim

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
  const std::vector<int> rank = StreamRanks(rows);
  struct Entry {
    TimeNs start, end;
    int device, stream, iteration;
    size_t index;
  };
  std::vector<Entry> entries(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const TraceRow& r = rows[i];
    entries[i] = {r.start_ns, r.end_ns, r.device, rank[i], r.iteration, i};
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

std::vector<int> StreamRanks(const std::vector<TraceRow>& rows,
                             std::vector<std::string_view>* names) {
  // A trace has few stream names and long runs of the same one: the last name found is tried
  // first, then the others in turn, before a hash table takes over for many names.
  std::vector<std::string_view> seen;  // in first-seen order
  std::unordered_map<std::string_view, int> many;
  std::vector<int> id(rows.size());
  constexpr size_t kLinear = 16;
  int last = -1;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string_view s = rows[i].stream;
    if (last >= 0 && seen[last] == s) {
      id[i] = last;
      continue;
    }
    int found = -1;
    if (seen.size() <= kLinear) {
      for (size_t k = 0; k < seen.size(); ++k) {
        if (seen[k] == s) {
          found = static_cast<int>(k);
          break;
        }
      }
    } else {
      if (many.empty()) {
        for (size_t k = 0; k < seen.size(); ++k) many.emplace(seen[k], static_cast<int>(k));
      }
      auto it = many.find(s);
      if (it != many.end()) found = it->second;
    }
    if (found < 0) {
      found = static_cast<int>(seen.size());
      seen.push_back(s);
      if (!many.empty()) many.emplace(s, found);
    }
    id[i] = last = found;
  }
  std::vector<int> order(seen.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int>(k);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return seen[a] < seen[b]; });
  std::vector<int> rank_of(seen.size());
  for (size_t r = 0; r < order.size(); ++r) rank_of[order[r]] = static_cast<int>(r);
  for (int& v : id) v = rank_of[v];
  if (names != nullptr) {
    names->clear();
    for (int k : order) names->push_back(seen[k]);
  }
  return id;
}

}  // namespace terasim

#include "traces/trace_links.h"

#include <algorithm>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>

namespace terasim {
namespace {

// Hash of the matching keys below: tuples of strings (views into the schedule's ops) and ints.
struct MatchKeyHash {
  template <typename... T>
  size_t operator()(const std::tuple<T...>& key) const {
    size_t h = 0;
    std::apply(
        [&h](const auto&... field) {
          ((h ^= std::hash<std::decay_t<decltype(field)>>()(field) + 0x9e3779b97f4a7c15ULL +
                 (h << 6) + (h >> 2)),
           ...);
        },
        key);
    return h;
  }
};

}  // namespace

TraceLinks LinkTrace(const Schedule& schedule, const Trace& trace) {
  // Key -> op, the first op of a repeated key (as KeyIndex); views into the schedule.
  std::unordered_map<std::string_view, int> index;
  index.reserve(schedule.ops.size());
  for (size_t j = 0; j < schedule.ops.size(); ++j) {
    index.try_emplace(schedule.ops[j].key, static_cast<int>(j));
  }
  std::vector<const Op*> op_of(trace.rows.size(), nullptr);
  for (size_t i = 0; i < trace.rows.size(); ++i) {
    auto it = index.find(trace.rows[i].key);
    if (it != index.end()) op_of[i] = &schedule.ops[it->second];
  }
  // (tensor, sender, receiver, iteration) -> SEND rows not yet matched, in row order.
  using MatchKey = std::tuple<std::string_view, int, int, int>;
  struct Unmatched {
    std::vector<size_t> rows;
    size_t next = 0;  // rows before it are matched
  };
  std::unordered_map<MatchKey, Unmatched, MatchKeyHash> sends;
  for (size_t i = 0; i < trace.rows.size(); ++i) {
    const Op* op = op_of[i];
    if (op != nullptr && op->kind == OpKind::kSend) {
      sends[{op->tensor, op->device, op->peer, trace.rows[i].iteration}].rows.push_back(i);
    }
  }
  TraceLinks links;
  // (kind, group, tensor, iteration) -> its instance in links.collectives.
  using InstanceKey = std::tuple<int, std::string_view, std::string_view, int>;
  std::unordered_map<InstanceKey, size_t, MatchKeyHash> instance_of;
  for (size_t i = 0; i < trace.rows.size(); ++i) {
    const Op* op = op_of[i];
    if (op == nullptr) continue;
    if (op->kind == OpKind::kRecv) {
      auto s = sends.find({op->tensor, op->peer, op->device, trace.rows[i].iteration});
      if (s == sends.end() || s->second.next == s->second.rows.size()) continue;
      links.p2p.push_back({s->second.rows[s->second.next++], i});
    } else if (IsCollective(op->kind)) {
      const InstanceKey key{static_cast<int>(op->kind), op->group, op->tensor,
                            trace.rows[i].iteration};
      auto [at, fresh] = instance_of.try_emplace(key, links.collectives.size());
      if (fresh) links.collectives.emplace_back();
      links.collectives[at->second].push_back(i);
    }
  }
  for (std::vector<size_t>& members : links.collectives) {
    std::sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      const TraceRow& x = trace.rows[a];
      const TraceRow& y = trace.rows[b];
      return std::tie(x.start_ns, x.device, a) < std::tie(y.start_ns, y.device, b);
    });
  }
  return links;
}

std::map<size_t, TimeNs> RecvTransferStarts(const Trace& trace, const TraceLinks& links) {
  std::map<size_t, TimeNs> starts;
  for (const TraceLinks::P2p& p : links.p2p) {
    const TraceRow& recv = trace.rows[p.recv];
    // A measured SEND may start after its RECV ended (clocks of two threads); clamp to the RECV.
    starts[p.recv] = std::min(std::max(trace.rows[p.send].start_ns, recv.start_ns), recv.end_ns);
  }
  return starts;
}

}  // namespace terasim

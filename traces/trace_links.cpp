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

// Each row's op: the first op of its key (as KeyIndex), null for a key not in the schedule.
std::vector<const Op*> RowOps(const Schedule& schedule, const Trace& trace) {
  std::vector<const Op*> op_of(trace.rows.size(), nullptr);
  const std::vector<Op>& ops = schedule.ops;
  size_t i = 0;
  if (!schedule.after_ops.Empty()) {
    // A generated schedule (AfterOps is set) has unique keys, and a simulated trace holds its
    // ops' rows in op order (some devices' ops left out): each row's op is found by walking
    // the ops forward from the last one found, until a row's key is not ahead.
    size_t next = 0;
    for (; i < trace.rows.size(); ++i) {
      const std::string& key = trace.rows[i].key;
      size_t j = next;
      while (j < ops.size() && ops[j].key != key) ++j;
      if (j == ops.size()) break;
      op_of[i] = &ops[j];
      next = j + 1;
    }
    if (i == trace.rows.size()) return op_of;
  }
  // Key -> op, the first op of a repeated key; views into the schedule.
  std::unordered_map<std::string_view, int> index;
  index.reserve(ops.size());
  for (size_t j = 0; j < ops.size(); ++j) index.try_emplace(ops[j].key, static_cast<int>(j));
  for (; i < trace.rows.size(); ++i) {
    auto it = index.find(trace.rows[i].key);
    if (it != index.end()) op_of[i] = &ops[it->second];
  }
  return op_of;
}

}  // namespace

TraceLinks LinkTrace(const Schedule& schedule, const Trace& trace) {
  std::vector<const Op*> op_of = RowOps(schedule, trace);
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

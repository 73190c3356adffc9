#include "traces/trace_links.h"

#include <algorithm>
#include <deque>
#include <tuple>

namespace terasim {

TraceLinks LinkTrace(const Schedule& schedule, const Trace& trace) {
  const std::map<std::string, int> index = KeyIndex(schedule);
  // (tensor, sender, receiver, iteration) -> SEND rows not yet matched, in row order.
  using P2pKey = std::tuple<std::string, int, int, int>;
  std::map<P2pKey, std::deque<size_t>> sends;
  for (size_t i = 0; i < trace.rows.size(); ++i) {
    auto it = index.find(trace.rows[i].key);
    if (it == index.end()) continue;
    const Op& op = schedule.ops[it->second];
    if (op.kind == OpKind::kSend) {
      sends[{op.tensor, op.device, op.peer, trace.rows[i].iteration}].push_back(i);
    }
  }
  TraceLinks links;
  using CollectiveKey = std::tuple<int, std::string, std::string, int>;
  std::map<CollectiveKey, size_t> instance_of;
  for (size_t i = 0; i < trace.rows.size(); ++i) {
    auto it = index.find(trace.rows[i].key);
    if (it == index.end()) continue;
    const Op& op = schedule.ops[it->second];
    if (op.kind == OpKind::kRecv) {
      auto s = sends.find({op.tensor, op.peer, op.device, trace.rows[i].iteration});
      if (s == sends.end() || s->second.empty()) continue;
      links.p2p.push_back({s->second.front(), i});
      s->second.pop_front();
    } else if (IsCollective(op.kind)) {
      const CollectiveKey key{static_cast<int>(op.kind), op.group, op.tensor,
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

#include "schedule/dependency_cycle.h"

#include <algorithm>

#include <fmt/format.h>

namespace terasim {
namespace {

// An edge between ops: `from` must finish before `to`.
struct Edge {
  int from;
  int to;
};

// Where the cycle passes through one node: entering at op `in`, leaving from op `out` (equal
// unless the node is a collective instance).
struct Visit {
  int in;
  int out;
};

constexpr size_t kMaxListed = 16;

std::string ListCycle(const CompactSchedule& s, const std::vector<Visit>& visits) {
  auto name = [&](const Visit& v) {
    return v.in == v.out ? std::string(s.Key(s.ops[v.in]))
                         : fmt::format("{} == {}", s.Key(s.ops[v.in]), s.Key(s.ops[v.out]));
  };
  std::string out;
  for (size_t i = 0; i < visits.size(); ++i) {
    if (visits.size() > kMaxListed && i == kMaxListed - 4) {
      out += fmt::format(" -> ... ({} more)", visits.size() - kMaxListed);
      i = visits.size() - 4;
    }
    if (!out.empty()) out += " -> ";
    out += name(visits[i]);
  }
  return fmt::format("{} -> {}", out, s.Key(s.ops[visits.front().in]));
}

}  // namespace

int CheckDependencyCycles(const CompactSchedule& s, const ScheduleIndex& ix,
                          std::vector<Diagnostic>& out) {
  const int n = static_cast<int>(s.ops.size());
  // A collective instance is one node, named by its first member.
  std::vector<int> node(n);
  for (int i = 0; i < n; ++i)
    node[i] = ix.instance[i] >= 0 ? ix.instance_ops[ix.instance[i]][0] : i;

  std::vector<int> offset(n + 1, 0);
  auto for_each_edge = [&](auto&& visit) {
    for (int i = 0; i < n; ++i) {
      const std::vector<int>& stream = ix.streams[ix.stream_of[i]].ops;
      const size_t next = static_cast<size_t>(ix.position_in_stream[i]) + 1;
      if (next < stream.size()) visit(Edge{i, stream[next]});
      for (int d : ix.Dependents(i)) visit(Edge{i, d});
      if (s.ops[i].kind == OpKind::kSend) visit(Edge{i, ix.partner[i]});
    }
  };
  for_each_edge([&](Edge e) { ++offset[node[e.from] + 1]; });
  for (int i = 0; i < n; ++i) offset[i + 1] += offset[i];
  std::vector<Edge> edges(offset[n]);
  std::vector<int> fill(offset.begin(), offset.end() - 1);
  for_each_edge([&](Edge e) { edges[fill[node[e.from]]++] = e; });

  // Iterative depth-first search; `frame_of` holds a gray node's position on the stack.
  enum : char { kWhite, kGray, kBlack };
  std::vector<char> color(n, kWhite);
  std::vector<int> frame_of(n, -1);
  struct Frame {
    int node;
    int next_edge;
    Edge entered_by;
  };
  std::vector<Frame> stack;
  for (int root = 0; root < n; ++root) {
    if (node[root] != root || color[root] != kWhite) continue;
    color[root] = kGray;
    frame_of[root] = 0;
    stack.push_back({root, offset[root], {-1, root}});
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next_edge == offset[top.node + 1]) {
        color[top.node] = kBlack;
        stack.pop_back();
        continue;
      }
      const Edge e = edges[top.next_edge++];
      const int to = node[e.to];
      if (color[to] == kWhite) {
        color[to] = kGray;
        frame_of[to] = static_cast<int>(stack.size());
        stack.push_back({to, offset[to], e});
        continue;
      }
      if (color[to] == kBlack) continue;
      // A back edge closes a cycle through the frames from `to` up to the top.
      std::vector<Visit> visits;
      const size_t first = static_cast<size_t>(frame_of[to]);
      for (size_t f = first; f < stack.size(); ++f) {
        const int in = f == first ? e.to : stack[f].entered_by.to;
        const int leave = f + 1 < stack.size() ? stack[f + 1].entered_by.from : e.from;
        visits.push_back({in, leave});
      }
      auto lowest =
          std::min_element(visits.begin(), visits.end(), [](const Visit& a, const Visit& b) {
            return std::min(a.in, a.out) < std::min(b.in, b.out);
          });
      std::rotate(visits.begin(), lowest, visits.end());
      const Visit& head = visits.front();
      out.push_back(OpDiagnostic(s, std::min(head.in, head.out),
                                 "dependency cycle: " + ListCycle(s, visits)));
      std::vector<int> devices;
      for (const Visit& v : visits) {
        devices.push_back(s.ops[v.in].device);
        devices.push_back(s.ops[v.out].device);
      }
      std::sort(devices.begin(), devices.end());
      return static_cast<int>(std::unique(devices.begin(), devices.end()) - devices.begin());
    }
  }
  return 0;
}

}  // namespace terasim

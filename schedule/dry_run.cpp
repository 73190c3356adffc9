#include "schedule/dry_run.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace terasim {
namespace {

// Runs the schedule event by event. Time needs no event queue: streams already serialize
// their ops, so each op's start is simply the latest finish of what it waits for. Ticks are
// `Tick`s (int32_t for the unit run, whose ticks are at most the op count); the start ticks are
// recorded only when `record_start`.
template <typename Tick>
class DryRunner {
 public:
  // Op `op` takes duration[op] ticks, or `uniform` ticks when `duration` is empty.
  DryRunner(const CompactSchedule& s, const ScheduleIndex& ix, std::span<const int64_t> duration,
            Tick uniform, bool record_start)
      : s_(s), ix_(ix), duration_(duration), uniform_(uniform) {
    const size_t n = s.ops.size();
    if (record_start) start_tick_.assign(n, -1);
    finish_tick_.assign(n, -1);
    ready_tick_.assign(n, 0);
    arrived_.assign(n, false);
    pending_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      pending_[i] = static_cast<int>(ix.After(static_cast<int>(i)).size());
    }
    head_.assign(ix.streams.size(), 0);
    instance_arrived_.assign(ix.instance_ops.size(), 0);
  }

  // Runs; returns the ops that finished.
  int64_t Run() {
    for (const StreamInfo& stream : ix_.streams) {
      if (!stream.ops.empty()) work_.push_back(stream.ops.front());
    }
    while (!work_.empty()) {
      const int op = work_.back();
      work_.pop_back();
      TryArrive(op);
    }
    return finished_;
  }
  // After Run: op -> when it started (empty unless record_start) and finished, -1 when it
  // never did.
  std::vector<Tick>& StartTicks() { return start_tick_; }
  std::vector<Tick>& FinishTicks() { return finish_tick_; }

  // After Run: why the blocked op `op` at the head of its stream waits; `finish_tick`: the
  // run's FinishTicks (which the caller may have moved out).
  std::string WhyBlocked(const std::vector<Tick>& finish_tick, int op) const {
    const CompactOp& o = s_.ops[op];
    if (!arrived_[op]) {
      for (int dep : ix_.After(op)) {
        if (finish_tick[dep] < 0)
          return fmt::format("after {}, which has not run", s_.Key(s_.ops[dep]));
      }
      return "?";
    }
    if (IsPointToPoint(o.kind)) {
      const int partner = ix_.partner[op];
      return fmt::format("peer {} has not reached {}", o.peer, s_.Key(s_.ops[partner]));
    }
    const std::vector<int>& members = ix_.instance_ops[ix_.instance[op]];
    for (int m : members) {
      if (!arrived_[m]) {
        return fmt::format("group {}: dev {} has not reached {}", s_.Name(o.group),
                           s_.ops[m].device, s_.Key(s_.ops[m]));
      }
    }
    return "?";
  }

  bool Arrived(int op) const { return arrived_[op]; }

 private:
  bool AtHead(int op) const {
    return head_[ix_.stream_of[op]] == static_cast<size_t>(ix_.position_in_stream[op]);
  }

  void TryArrive(int op) {
    if (arrived_[op] || pending_[op] > 0 || !AtHead(op)) return;
    arrived_[op] = true;
    // The kind from the index (matched SEND/RECV have a partner, collectives an instance):
    // reading the op record here was a cache miss per op.
    if (const int partner = ix_.partner[op]; partner >= 0) {
      if (!arrived_[partner]) return;
      const Tick start = std::max(ready_tick_[op], ready_tick_[partner]);
      const Tick finish = start + std::max(Duration(op), Duration(partner));
      Finish(op, start, finish);
      Finish(partner, start, finish);
    } else if (const int instance = ix_.instance[op]; instance >= 0) {
      const std::vector<int>& members = ix_.instance_ops[instance];
      if (++instance_arrived_[instance] < static_cast<int>(members.size())) return;
      Tick start = 0, longest = 0;
      for (int m : members) {
        start = std::max(start, ready_tick_[m]);
        longest = std::max(longest, Duration(m));
      }
      for (int m : members) Finish(m, start, start + longest);
    } else {
      Finish(op, ready_tick_[op], ready_tick_[op] + Duration(op));
    }
  }

  Tick Duration(int op) const {
    return duration_.empty() ? uniform_ : static_cast<Tick>(duration_[op]);
  }

  void Finish(int op, Tick start, Tick finish) {
    if (!start_tick_.empty()) start_tick_[op] = start;
    finish_tick_[op] = finish;
    ++finished_;
    const int stream = ix_.stream_of[op];
    const std::vector<int>& ops = ix_.streams[stream].ops;
    if (++head_[stream] < ops.size()) {
      const int next = ops[head_[stream]];
      ready_tick_[next] = std::max(ready_tick_[next], finish);
      work_.push_back(next);
    }
    for (int d : ix_.Dependents(op)) {
      ready_tick_[d] = std::max(ready_tick_[d], finish);
      if (--pending_[d] == 0) work_.push_back(d);
    }
  }

  const CompactSchedule& s_;
  const ScheduleIndex& ix_;
  std::span<const int64_t> duration_;
  Tick uniform_;
  std::vector<Tick> start_tick_;
  std::vector<Tick> finish_tick_;
  int64_t finished_ = 0;
  std::vector<Tick> ready_tick_;  // latest finish among stream predecessor and deps so far
  std::vector<char> arrived_;     // heads its stream with its deps done
  std::vector<int> pending_;      // deps not finished yet
  std::vector<size_t> head_;      // stream -> index of its first unfinished op
  std::vector<int> instance_arrived_;
  std::vector<int> work_;  // ops that may have become able to arrive
};

}  // namespace

DryRunResult DryRun(const CompactSchedule& schedule, const ScheduleIndex& index,
                    std::span<const int64_t> duration_ticks) {
  DryRunner<int64_t> runner(schedule, index, duration_ticks, 0, /*record_start=*/true);
  DryRunResult r;
  r.finished = runner.Run();
  r.start_tick = std::move(runner.StartTicks());
  r.finish_tick = std::move(runner.FinishTicks());
  return r;
}

UnitRunResult CheckDryRun(const CompactSchedule& s, const ScheduleIndex& ix,
                          std::vector<Diagnostic>& out) {
  DryRunner<int32_t> runner(s, ix, {}, /*uniform=*/1, /*record_start=*/false);
  UnitRunResult r;
  r.finished = runner.Run();
  r.finish_tick = std::move(runner.FinishTicks());
  if (r.finished == static_cast<int64_t>(s.ops.size())) return r;

  // Per device, the blocked stream head it waits at: preferably one that waits for another
  // device (the heart of a deadlock), else the first in issue order.
  std::map<int, int> waits_at;  // device -> op
  for (const StreamInfo& stream : ix.streams) {
    auto it = std::find_if(stream.ops.begin(), stream.ops.end(),
                           [&](int op) { return r.finish_tick[op] < 0; });
    if (it == stream.ops.end()) continue;
    const int op = *it;
    auto [slot, inserted] = waits_at.emplace(stream.device, op);
    if (inserted) continue;
    const int current = slot->second;
    if (runner.Arrived(op) != runner.Arrived(current) ? runner.Arrived(op) : op < current) {
      slot->second = op;
    }
  }
  std::string message = "deadlock: ";
  for (auto it = waits_at.begin(); it != waits_at.end(); ++it) {
    if (it != waits_at.begin()) message += "; ";
    message += fmt::format("dev {} waits at {} ({})", it->first, s.Key(s.ops[it->second]),
                           runner.WhyBlocked(r.finish_tick, it->second));
  }
  message += fmt::format(" [{} of {} ops ran]", r.finished, s.ops.size());
  out.push_back(OpDiagnostic(s, waits_at.begin()->second, std::move(message)));
  return r;
}

}  // namespace terasim

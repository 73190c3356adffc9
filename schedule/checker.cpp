// CheckSchedule runs its passes in three stages, each only when the one before found nothing,
// so that one mistake yields one message rather than a cascade:
//   1. header sanity;
//   2. groups, the fields of every op (schedule/checker.cpp), unique keys and `after` deps
//      (schedule/schedule_index.cpp);
//   3. SEND/RECV and collective matching (schedule/comm_matching.cpp), coverage and slice order
//      (schedule/coverage.cpp); when the matching passes, the dependency-cycle search
//      (schedule/dependency_cycle.cpp) and, unless it found a cycle within one device, the dry
//      run (schedule/dry_run.cpp); and when all of these pass, the data flow
//      (schedule/data_flow.cpp).
#include "schedule/checker.h"

#include <algorithm>
#include <array>
#include <unordered_map>

#include <fmt/format.h>

#include "models/errors.h"
#include "schedule/comm_matching.h"
#include "schedule/compact_check.h"
#include "schedule/coverage.h"
#include "schedule/data_flow.h"
#include "schedule/dependency_cycle.h"
#include "schedule/dry_run.h"
#include "schedule/schedule_index.h"

namespace terasim {
namespace {

std::string JoinNames(const std::vector<std::string_view>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  return out;
}

std::string JoinRanks(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ranks[i]);
  }
  return out;
}

void CheckHeader(const CompactSchedule& s, std::vector<Diagnostic>& out) {
  if (s.devices < 1)
    out.push_back({0, "", fmt::format("devices must be >= 1 (found {})", s.devices)});
  if (s.layers < 1) out.push_back({0, "", fmt::format("layers must be >= 1 (found {})", s.layers)});
  if (s.sequence < 1) {
    out.push_back({0, "", fmt::format("sequence must be >= 1 (found {})", s.sequence)});
  }
  if (s.batch < 0) out.push_back({0, "", fmt::format("batch must be >= 0 (found {})", s.batch)});
}

void CheckGroups(const CompactSchedule& s, std::vector<Diagnostic>& out) {
  std::unordered_map<std::string_view, int> first;
  for (size_t g = 0; g < s.groups.size(); ++g) {
    const Group& group = s.groups[g];
    auto add = [&](std::string message) { out.push_back({group.line, group.name, message}); };
    auto [it, inserted] = first.emplace(group.name, static_cast<int>(g));
    if (!inserted) {
      const Group& earlier = s.groups[it->second];
      add(earlier.line > 0 ? fmt::format("group already declared on line {}", earlier.line)
                           : "group declared twice");
    }
    if (group.ranks.empty()) add("group has no ranks");
    std::vector<int> sorted = group.ranks;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      int rank = sorted[i];
      if (rank < 0 || rank >= s.devices) {
        add(fmt::format("rank {} is out of range (the schedule has {} devices)", rank, s.devices));
      } else if (i > 0 && sorted[i - 1] == rank) {
        add(fmt::format("rank {} is listed twice", rank));
      }
    }
  }
}

// An op's group (by name id) and whether its device is a member, kept for the next op: ops
// come in runs of one device and group.
class GroupMembership {
 public:
  explicit GroupMembership(const CompactSchedule& s) : s_(s), group_of_(s) {}
  // The group named by `name` (or -1); `member`: whether `device` is one of its ranks.
  int operator()(int name, int device, bool& member) {
    if (name != name_ || device != device_) {
      name_ = name;
      device_ = device;
      group_ = group_of_(name);
      member_ = group_ >= 0 && RankInGroup(s_.groups[group_], device) >= 0;
    }
    member = member_;
    return group_;
  }

 private:
  const CompactSchedule& s_;
  GroupOfName group_of_;
  int name_ = -1, device_ = -1, group_ = -1;
  bool member_ = false;
};

// Which fields an op has, with its kind: what the "needs" and "does not take" rules of
// CheckOpFields read. Ops come in runs of a few shapes, so that a shape that passed those rules
// once is remembered (a small ring) and not checked again.
class KnownShapes {
 public:
  static uint32_t Of(const CompactOp& op) {
    uint32_t bits = static_cast<uint32_t>(op.kind) & 31;  // a 5-bit field
    int shift = 5;
    auto add = [&](bool present) { bits |= static_cast<uint32_t>(present) << shift++; };
    add(op.stage >= 0);
    add(!op.layers.Empty());
    add(op.part != LayerPart::kWhole);
    add(op.microbatch >= 0);
    add(op.rows > 0);
    add(!op.tokens.Empty());
    add(op.group >= 0);
    add(op.peer >= 0);
    add(op.tensor >= 0);
    add(op.bytes > 0);
    add(op.recompute != Recompute::kNone);
    add(op.recompute == Recompute::kFull);
    add(op.sequence_parallel);
    add(op.zero > 0);
    add(op.zero == 0);
    return bits;
  }
  bool Has(uint32_t shape) const {
    for (const uint32_t known : known_) {
      if (known == shape) return true;
    }
    return false;
  }
  void Add(uint32_t shape) {
    known_[next_] = shape;
    next_ = (next_ + 1) % known_.size();
  }

 private:
  std::array<uint32_t, 8> known_{~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u};  // ~0u: no shape
  size_t next_ = 0;
};

// The fields of one op against its kind (see the table in schedule/op.h).
void CheckOpFields(const CompactSchedule& s, GroupMembership& group_of, KnownShapes& shapes,
                   const CompactOp& op, std::vector<Diagnostic>& out) {
  auto add = [&](std::string message) { out.push_back(OpDiagnostic(s, op, std::move(message))); };
  if (op.device < 0 || op.device >= s.devices) {
    add(fmt::format("dev {} is out of range (the schedule has {} devices)", op.device, s.devices));
    return;
  }
  const bool has_stage = op.stage >= 0, has_layers = !op.layers.Empty(),
             has_part = op.part != LayerPart::kWhole, has_mb = op.microbatch >= 0,
             has_rows = op.rows > 0, has_tokens = !op.tokens.Empty(), has_group = op.group >= 0,
             has_peer = op.peer >= 0, has_tensor = op.tensor >= 0, has_bytes = op.bytes > 0;
  const uint32_t shape = KnownShapes::Of(op);
  if (!shapes.Has(shape)) {
    std::vector<std::string_view> missing, extra;
    auto need = [&](bool present, std::string_view name) {
      if (!present) missing.push_back(name);
    };
    auto deny = [&](bool present, std::string_view name) {
      if (present) extra.push_back(name);
    };
    if (IsLayerCompute(op.kind)) {
      need(has_stage, "stage");
      need(has_layers, "layers");
      need(has_mb, "mb");
      need(has_rows, "rows");
      need(has_tokens, "tokens");
      deny(has_peer, "peer");
      deny(has_tensor, "tensor");
      deny(has_bytes, "bytes");
    } else if (IsPointToPoint(op.kind)) {
      need(has_peer, "peer");
      need(has_tensor, "tensor");
      need(has_bytes, "bytes > 0");
      deny(has_layers, "layers");
      deny(has_part, "part");
      deny(has_group, "group");
    } else if (IsCollective(op.kind)) {
      need(has_group, "group");
      need(has_tensor, "tensor");
      need(has_bytes, "bytes > 0");
      if (op.kind == OpKind::kBroadcast) {
        need(has_peer, "peer (the root)");
      } else {
        deny(has_peer, "peer");
      }
    } else {  // OPTIMIZER
      deny(has_part, "part");
      deny(has_mb, "mb");
      deny(has_rows, "rows");
      deny(has_tokens, "tokens");
      if (op.zero == 0) deny(has_group, "group");  // a ZeRO optimizer names its dp group
      deny(has_peer, "peer");
      deny(has_tensor, "tensor");
      deny(has_bytes, "bytes");
    }
    // Today's recipes (schedule/op.h): recompute and sp on layer compute, zero on OPTIMIZER.
    if (!IsLayerCompute(op.kind)) deny(op.recompute != Recompute::kNone, "recompute");
    if (!IsLayerCompute(op.kind)) deny(op.sequence_parallel, "sp");
    if (op.kind != OpKind::kOptimizer) deny(op.zero > 0, "zero");
    if (op.kind == OpKind::kRecompute) need(op.recompute == Recompute::kFull, "recompute=full");
    if (op.sequence_parallel) need(has_group, "group (sp=1 shards over it)");
    if (op.zero > 0) need(has_group, "group (the ZeRO shard's data-parallel group)");
    if (!missing.empty()) add(fmt::format("{} needs {}", OpKindName(op.kind), JoinNames(missing)));
    if (!extra.empty()) {
      add(fmt::format("{} does not take {}", OpKindName(op.kind), JoinNames(extra)));
    }
    if (missing.empty() && extra.empty()) shapes.Add(shape);
  }
  if (has_part && op.layers.Length() != 1) {
    add(has_layers ? fmt::format("part={} needs layers to span one layer, not {}-{}",
                                 LayerPartName(op.part), op.layers.begin, op.layers.end)
                   : fmt::format("part={} needs layers (the one layer it belongs to)",
                                 LayerPartName(op.part)));
  }
  if (has_tokens && (op.tokens.begin < 0 || op.tokens.end > s.sequence)) {
    add(fmt::format("tokens {}-{} are outside the sequence 0-{}", op.tokens.begin, op.tokens.end,
                    s.sequence));
  }
  if (has_layers && (op.layers.begin < 0 || op.layers.end > s.layers)) {
    add(fmt::format("layers {}-{} are outside the model's layers 0-{}", op.layers.begin,
                    op.layers.end, s.layers));
  }
  if (IsPointToPoint(op.kind) && has_peer) {
    if (op.peer == op.device) {
      add(fmt::format("peer {} is the op's own device", op.peer));
    } else if (op.peer >= s.devices) {
      add(fmt::format("peer {} is out of range (the schedule has {} devices)", op.peer, s.devices));
    }
  }
  if (has_group) {
    bool member = false;
    const int g = group_of(op.group, op.device, member);
    if (g < 0) {
      add(fmt::format("group '{}' is not declared", s.Name(op.group)));
    } else {
      const Group& group = s.groups[g];
      if (!member) {
        add(fmt::format("dev {} is not a member of group {} ({})", op.device, group.name,
                        JoinRanks(group.ranks)));
      }
      if (op.kind == OpKind::kBroadcast && has_peer && RankInGroup(group, op.peer) < 0) {
        add(fmt::format("root (peer) {} is not a member of group {} ({})", op.peer, group.name,
                        JoinRanks(group.ranks)));
      }
    }
  }
}

void CheckFields(const CompactSchedule& s, std::vector<Diagnostic>& out) {
  GroupMembership group_of(s);
  KnownShapes shapes;
  for (const CompactOp& op : s.ops) CheckOpFields(s, group_of, shapes, op, out);
}

std::vector<Diagnostic> InFileOrder(std::vector<Diagnostic> diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
  return diagnostics;
}

// "FILE:LINE: KEY: MESSAGE" with FILE the schedule's source.
std::string FormatDiagnosticAt(const std::string& source, const Diagnostic& diagnostic) {
  std::string place = source;
  if (diagnostic.line > 0) {
    place += place.empty() ? fmt::format("line {}", diagnostic.line)
                           : fmt::format(":{}", diagnostic.line);
  }
  std::string out;
  for (const std::string* part :
       std::initializer_list<const std::string*>{&place, &diagnostic.key, &diagnostic.message}) {
    if (part->empty()) continue;
    if (!out.empty()) out += ": ";
    out += *part;
  }
  return out;
}

}  // namespace

std::string FormatDiagnostic(const Schedule& schedule, const Diagnostic& diagnostic) {
  return FormatDiagnosticAt(schedule.source, diagnostic);
}

std::string FormatDiagnostic(const CompactSchedule& schedule, const Diagnostic& diagnostic) {
  return FormatDiagnosticAt(schedule.source, diagnostic);
}

std::vector<Diagnostic> CheckSchedule(const Schedule& schedule) {
  return CheckSchedule(ToCompact(schedule));
}

std::vector<Diagnostic> CheckSchedule(const CompactSchedule& schedule) {
  std::vector<Diagnostic> out;
  CheckHeader(schedule, out);
  if (!out.empty()) return out;

  CheckGroups(schedule, out);
  CheckFields(schedule, out);
  ScheduleIndex index = IndexSchedule(schedule, out);
  if (!out.empty()) return InFileOrder(std::move(out));

  MatchPointToPoint(schedule, index, out);
  MatchCollectives(schedule, index, out);
  const bool matched = out.empty();
  CheckCoverage(schedule, index, out);
  CheckSliceOrder(schedule, out);
  if (matched) {
    // A cycle always hangs the dry run too. Through several devices it is a deadlock, and the
    // dry run's report adds which device waits for what; within one device it would only
    // blame the devices that wait for that one.
    // The dry run first: when it completes, the search finds no cycle (along every edge of
    // the search the finish order grows, strictly but from a SEND to its RECV), so it is
    // skipped; else both report, in the order they always did.
    std::vector<Diagnostic> deadlock;
    const UnitRunResult unit_run = CheckDryRun(schedule, index, deadlock);
    if (deadlock.empty() || CheckDependencyCycles(schedule, index, out) != 1) {
      for (Diagnostic& d : deadlock) out.push_back(std::move(d));
      // The data flow only once everything else holds: it asks what a working order puts
      // first, and a coverage or slice-order mistake would only repeat itself as missing data.
      // The data-flow rule states what the executor reads and writes
      // (docs/execution_rules.md), today's recipes included.
      if (out.empty()) {
        // The data flow reads none of these: freed, their memory serves its own arrays (a
        // lower peak resident size, fewer fresh pages).
        index.group_of = {};
        index.tp_rank = {};
        index.p2p_ops = {};
        index.collective_ops = {};
        CheckDataFlow(schedule, index, unit_run, out);
      }
    }
  }
  return InFileOrder(std::move(out));
}

void RequireValidSchedule(const Schedule& schedule) {
  std::vector<Diagnostic> diagnostics = CheckSchedule(schedule);
  if (diagnostics.empty()) return;
  std::string message;
  for (const Diagnostic& d : diagnostics) {
    if (!message.empty()) message += '\n';
    message += FormatDiagnostic(schedule, d);
  }
  throw InputError(message);
}

}  // namespace terasim

#include "schedule/schedule_grid.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "models/errors.h"
#include "schedule/checker.h"
#include "schedule/comm_matching.h"
#include "schedule/compact_check.h"
#include "schedule/dry_run.h"
#include "schedule/schedule_index.h"

namespace terasim {
namespace {

// One label that occupies ticks [start, end) on a device.
struct Cell {
  int64_t start;
  int64_t end;
  std::string label;
};

char KindLetter(OpKind kind) {
  switch (kind) {
    case OpKind::kFwd:
      return 'F';
    case OpKind::kBwd:
      return 'B';
    case OpKind::kBwdInput:
      return 'b';
    case OpKind::kBwdWeight:
      return 'W';
    case OpKind::kRecompute:
      return 'R';
    default:
      return 'O';
  }
}

std::string CommLabel(const Op& op) {
  switch (op.kind) {
    case OpKind::kSend:
      return fmt::format(">{}", op.peer);
    case OpKind::kRecv:
      return fmt::format("<{}", op.peer);
    case OpKind::kBroadcast:
      return op.peer == op.device ? "*>" : fmt::format("*<{}", op.peer);
    default:
      return "";
  }
}

ScheduleIndex IndexOrThrow(const CompactSchedule& s) {
  std::vector<Diagnostic> problems = CheckSchedule(s);
  if (!problems.empty()) {
    ThrowInput("{} (see terasim check)", FormatDiagnostic(s, problems.front()));
  }
  ScheduleIndex ix = IndexSchedule(s, problems);
  MatchPointToPoint(s, ix, problems);
  MatchCollectives(s, ix, problems);
  TERASIM_CHECK(problems.empty(), "a checked schedule failed to index: {}", problems[0].message);
  return ix;
}

}  // namespace

std::string RenderScheduleGrid(const Schedule& s, const GridOptions& options) {
  const CompactSchedule compact = ToCompact(s);
  const ScheduleIndex ix = IndexOrThrow(compact);
  const int n = static_cast<int>(s.ops.size());
  std::vector<int64_t> ticks(n, 0);
  for (int i = 0; i < n; ++i) ticks[i] = IsCompute(s.ops[i].kind) ? 1 : 0;
  const DryRunResult run = DryRun(compact, ix, ticks);

  // Slice numbers: the rank of a slice's first token among its micro-batch's slices.
  std::map<int, std::set<int>> slice_starts;
  for (const Op& op : s.ops) {
    if (IsLayerCompute(op.kind)) slice_starts[op.microbatch].insert(op.tokens.begin);
  }
  bool several_slices = false;
  for (const auto& [mb, starts] : slice_starts) several_slices |= starts.size() > 1;
  // Model chunks: with interleaving a device holds several stages, marked ' '' ... in order.
  std::vector<std::set<int>> device_stages(s.devices);
  bool several_chunks = false;
  for (const Op& op : s.ops) {
    if (!IsLayerCompute(op.kind)) continue;
    device_stages[op.device].insert(op.stage);
    several_chunks |= device_stages[op.device].size() > 1;
  }
  auto label_of = [&](const Op& op) {
    if (!IsLayerCompute(op.kind)) return std::string(1, KindLetter(op.kind));
    std::string label = fmt::format("{}{}", KindLetter(op.kind), op.microbatch);
    if (several_slices) {
      const std::set<int>& starts = slice_starts[op.microbatch];
      label += fmt::format(".{}", std::distance(starts.begin(), starts.find(op.tokens.begin)));
    }
    const std::set<int>& stages = device_stages[op.device];
    label.append(std::distance(stages.begin(), stages.find(op.stage)), '\'');
    return label;
  };

  // Cells per device, in start order; merged while the label repeats without a gap.
  std::vector<std::vector<Cell>> cells(s.devices);
  std::vector<std::vector<std::pair<int64_t, std::string>>> comm(s.devices);
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return run.start_tick[a] < run.start_tick[b]; });
  std::set<char> kinds_seen;
  for (int i : order) {
    const Op& op = s.ops[i];
    if (!IsCompute(op.kind)) {
      std::string label = CommLabel(op);
      if (options.show_comm && !label.empty())
        comm[op.device].push_back({run.start_tick[i], label});
      continue;
    }
    kinds_seen.insert(KindLetter(op.kind));
    std::string label = label_of(op);
    std::vector<Cell>& row = cells[op.device];
    if (!row.empty() && row.back().label == label && row.back().end == run.start_tick[i]) {
      row.back().end = run.finish_tick[i];
    } else {
      row.push_back({run.start_tick[i], run.finish_tick[i], std::move(label)});
    }
  }

  // Columns: the ticks at which some cell starts.
  std::vector<int64_t> columns;
  size_t width = 1;
  for (const auto& row : cells) {
    for (const Cell& c : row) {
      columns.push_back(c.start);
      width = std::max(width, c.label.size());
    }
  }
  std::sort(columns.begin(), columns.end());
  columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
  auto column_of = [&](int64_t tick) {  // the last column starting at or before `tick`
    auto it = std::upper_bound(columns.begin(), columns.end(), tick);
    return it == columns.begin() ? 0 : static_cast<int>(it - columns.begin()) - 1;
  };

  const size_t columns_count = columns.size();
  std::vector<std::vector<std::string>> grid(s.devices, std::vector<std::string>(columns_count));
  std::vector<std::vector<std::string>> comm_grid(options.show_comm ? s.devices : 0,
                                                  std::vector<std::string>(columns_count));
  for (int d = 0; d < s.devices; ++d) {
    std::vector<std::string>& row = grid[d];
    std::vector<char> busy(columns_count, false);
    for (const Cell& c : cells[d]) {
      const int first = column_of(c.start);
      if (row[first].empty()) row[first] = c.label;
      for (size_t k = first; k < columns_count && columns[k] < c.end; ++k) busy[k] = true;
    }
    // Idle marks up to the device's last cell; after it the row simply ends.
    const size_t used = cells[d].empty() ? 0 : column_of(cells[d].back().start) + 1;
    for (size_t k = 0; k < used; ++k) {
      if (!busy[k]) row[k] = ".";
    }
    if (options.show_comm && columns_count > 0) {
      for (const auto& [tick, label] : comm[d]) {
        std::string& slot = comm_grid[d][column_of(tick)];
        slot += label;
        width = std::max(width, slot.size());
      }
    }
  }

  const std::string device_format =
      fmt::format("dev {{:<{}}} | ", std::to_string(s.devices - 1).size());
  const size_t prefix = fmt::format(fmt::runtime(device_format), 0).size();
  const size_t per_block =
      std::max<size_t>(1, (static_cast<size_t>(std::max(options.width_chars, 1)) > prefix
                               ? (options.width_chars - prefix + 1) / (width + 1)
                               : 1));
  std::string out;
  for (size_t begin = 0; begin < std::max<size_t>(columns_count, 1); begin += per_block) {
    if (begin > 0) out += '\n';
    const size_t end = std::min(columns_count, begin + per_block);
    auto emit = [&](const std::string& head, const std::vector<std::string>& row) {
      std::string line = head;
      for (size_t k = begin; k < end; ++k) {
        line += row[k];
        if (k + 1 < end) line.append(width + 1 - row[k].size(), ' ');
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + '\n';
    };
    for (int d = 0; d < s.devices; ++d) {
      emit(fmt::format(fmt::runtime(device_format), d), grid[d]);
      if (options.show_comm) emit(std::string(prefix - 2, ' ') + "| ", comm_grid[d]);
    }
  }

  std::vector<std::string> legend;
  if (kinds_seen.count('F')) {
    legend.push_back(several_slices ? "F3.1 forward of micro-batch 3, token slice 1"
                                    : "F3 forward of micro-batch 3");
  }
  if (several_chunks) legend.push_back("F3' the same on the device's second model chunk");
  if (kinds_seen.count('B')) legend.push_back("B backward");
  if (kinds_seen.count('b')) legend.push_back("b input gradient");
  if (kinds_seen.count('W')) legend.push_back("W weight gradient");
  if (kinds_seen.count('O')) legend.push_back("O optimizer");
  legend.push_back(". idle");
  if (options.show_comm) legend.push_back(">p / <p send to / receive from dev p");
  out += "\n";
  for (size_t i = 0; i < legend.size(); ++i) out += (i == 0 ? "" : "; ") + legend[i];
  out += "\ncolumns: steps of a dry run in which each compute op takes one step\n";
  return out;
}

}  // namespace terasim

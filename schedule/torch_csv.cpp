#include "schedule/torch_csv.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "models/errors.h"

namespace terasim {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '"')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '"')) {
    s.remove_suffix(1);
  }
  return s;
}

// Cells of one CSV line; quoted cells may hold commas.
std::vector<std::string_view> SplitCells(std::string_view line) {
  std::vector<std::string_view> cells;
  size_t start = 0;
  bool quoted = false;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i < line.size() && line[i] == '"') quoted = !quoted;
    if (i == line.size() || (line[i] == ',' && !quoted)) {
      cells.push_back(line.substr(start, i - start));
      start = i + 1;
    }
  }
  return cells;
}

// Leading digits of `s` as a number; advances `s`. False when there are none.
bool TakeNumber(std::string_view& s, int& value) {
  size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + n, value);
  if (ec != std::errc()) return false;
  s.remove_prefix(n);
  return true;
}

// One action "{stage}{type}{mb}"; appends compute actions to `out`.
void ParseAction(std::string_view text, const std::string& where, int row, int column,
                 std::vector<TorchAction>& out) {
  std::string_view rest = text;
  int stage = 0;
  if (!TakeNumber(rest, stage)) {
    ThrowInput("{}: '{}' is not an action (expected e.g. 0F0, 1B0, 0I0, 0W0)", where, text);
  }
  static constexpr std::pair<std::string_view, int> kTypes[] = {
      {"REDUCE_GRAD", -1},
      {"UNSHARD", -1},
      {"RESHARD", -1},
      {"SEND_F", -1},
      {"RECV_F", -1},
      {"SEND_B", -1},
      {"RECV_B", -1},
      {"F", 0},
      {"B", 1},
      {"I", 2},
      {"W", 3},
  };
  int kind = -2;
  for (const auto& [name, k] : kTypes) {
    if (rest.substr(0, name.size()) == name) {
      kind = k;
      rest.remove_prefix(name.size());
      break;
    }
  }
  if (kind == -2) ThrowInput("{}: '{}': unknown action type", where, text);
  int mb = -1;
  if (!rest.empty() && !TakeNumber(rest, mb)) {
    ThrowInput("{}: '{}': the micro-batch must be a number", where, text);
  }
  if (!rest.empty()) ThrowInput("{}: '{}': unexpected '{}' after the action", where, text, rest);
  if (kind < 0) return;  // communication and FSDP actions: terasim makes its own
  if (mb < 0) ThrowInput("{}: '{}': a compute action needs a micro-batch", where, text);
  out.push_back({stage, static_cast<TorchActionKind>(kind), mb, row, column});
}

char KindLetter(TorchActionKind kind) {
  switch (kind) {
    case TorchActionKind::kForward:
      return 'F';
    case TorchActionKind::kBackward:
      return 'B';
    case TorchActionKind::kBackwardInput:
      return 'I';
    case TorchActionKind::kBackwardWeight:
      return 'W';
  }
  return '?';
}

}  // namespace

TorchActionTable ParseTorchCsv(const std::string& text, const std::string& origin) {
  TorchActionTable table;
  std::istringstream in(text);
  std::string line;
  int row = 0;
  while (std::getline(in, line)) {
    ++row;
    if (Trim(line).empty()) {
      // A blank line is a rank with no actions only inside the table; trailing ones end it.
      table.ranks.emplace_back();
      continue;
    }
    std::vector<TorchAction> actions;
    const std::vector<std::string_view> cells = SplitCells(line);
    for (size_t c = 0; c < cells.size(); ++c) {
      std::string_view cell = Trim(cells[c]);
      if (cell.empty()) continue;
      const std::string where = fmt::format("{}:{}:{}", origin, row, c + 1);
      const std::string_view overlap = "OVERLAP_F_B";
      if (cell.front() == '(') {
        const size_t close = cell.find(')');
        if (close == std::string_view::npos || cell.substr(close + 1) != overlap) {
          ThrowInput("{}: '{}': expected (A;B)OVERLAP_F_B", where, cell);
        }
        std::string_view inner = cell.substr(1, close - 1);
        size_t start = 0;
        for (size_t i = 0; i <= inner.size(); ++i) {
          if (i == inner.size() || inner[i] == ';') {
            std::string_view sub = Trim(inner.substr(start, i - start));
            if (!sub.empty()) ParseAction(sub, where, row, static_cast<int>(c + 1), actions);
            start = i + 1;
          }
        }
        continue;
      }
      ParseAction(cell, where, row, static_cast<int>(c + 1), actions);
    }
    table.ranks.push_back(std::move(actions));
  }
  while (!table.ranks.empty() && table.ranks.back().empty()) table.ranks.pop_back();
  if (table.ranks.empty()) ThrowInput("{}: no actions (expected one row per rank)", origin);
  for (const auto& rank : table.ranks) {
    for (const TorchAction& a : rank) {
      table.stages = std::max(table.stages, a.stage + 1);
      table.microbatches = std::max(table.microbatches, a.microbatch + 1);
    }
  }
  return table;
}

GenerateOptions ImportedOptions(const TorchActionTable& table, const GenerateOptions& base,
                                const std::string& origin) {
  const int ranks = static_cast<int>(table.ranks.size());
  GenerateOptions o = base;
  o.strategy = Strategy::kImported;
  o.pp = ranks;
  o.microbatches = table.microbatches;
  o.stage_ranks.assign(table.stages, -1);
  for (int r = 0; r < ranks; ++r) {
    for (const TorchAction& a : table.ranks[r]) {
      int& owner = o.stage_ranks[a.stage];
      if (owner >= 0 && owner != r) {
        ThrowInput("{}:{}:{}: stage {} runs on rank {} and on rank {}; each stage has one rank",
                   origin, a.row, a.column, a.stage, owner, r);
      }
      owner = r;
    }
  }
  for (int s = 0; s < table.stages; ++s) {
    if (o.stage_ranks[s] < 0) ThrowInput("{}: stage {} has no actions", origin, s);
  }
  if (table.stages % ranks != 0) {
    ThrowInput("{}: {} stages over {} ranks: every rank must hold the same number", origin,
               table.stages, ranks);
  }
  o.virtual_stages = table.stages / ranks;
  std::vector<int> chunk(table.stages, 0);
  std::vector<int> next_chunk(ranks, 0);
  for (int s = 0; s < table.stages; ++s) chunk[s] = next_chunk[o.stage_ranks[s]]++;
  // Each (stage, mb): F, then B, or I then W; in that order on its rank.
  enum : int { kNone = 0, kForward = 1, kBackward = 2, kInput = 3, kDone = 4 };
  std::map<std::pair<int, int>, int> state;
  o.imported_steps.assign(ranks, {});
  for (int r = 0; r < ranks; ++r) {
    for (const TorchAction& a : table.ranks[r]) {
      int& st = state[{a.stage, a.microbatch}];
      const std::string where = fmt::format("{}:{}:{}: {}{}{}", origin, a.row, a.column, a.stage,
                                            KindLetter(a.kind), a.microbatch);
      PipelineStep step{a.kind == TorchActionKind::kForward, a.microbatch, 0, chunk[a.stage]};
      switch (a.kind) {
        case TorchActionKind::kForward:
          if (st != kNone) ThrowInput("{}: a second forward of this stage and micro-batch", where);
          st = kForward;
          break;
        case TorchActionKind::kBackward:
        case TorchActionKind::kBackwardInput:
          if (st != kForward) {
            ThrowInput("{}: a backward {} its forward", where,
                       st == kNone ? "before" : "again after");
          }
          st = a.kind == TorchActionKind::kBackward ? kDone : kInput;
          step.part =
              a.kind == TorchActionKind::kBackward ? BackwardPart::kWhole : BackwardPart::kInput;
          break;
        case TorchActionKind::kBackwardWeight:
          if (st != kInput)
            ThrowInput("{}: a weight gradient without its input gradient first", where);
          st = kDone;
          step.part = BackwardPart::kWeight;
          break;
      }
      o.imported_steps[r].push_back(step);
    }
  }
  for (int s = 0; s < table.stages; ++s) {
    for (int m = 0; m < table.microbatches; ++m) {
      const auto it = state.find({s, m});
      const int st = it == state.end() ? kNone : it->second;
      if (st != kDone) {
        ThrowInput("{}: stage {} micro-batch {} has {}", origin, s, m,
                   st == kNone      ? "no forward"
                   : st == kForward ? "no backward"
                                    : "no weight gradient (W) after its input gradient (I)");
      }
    }
  }
  return o;
}

std::string FormatTorchCsv(const TorchActionTable& table) {
  std::string out;
  for (const auto& rank : table.ranks) {
    for (size_t i = 0; i < rank.size(); ++i) {
      out += fmt::format("{}{}{}{}", i ? "," : "", rank[i].stage, KindLetter(rank[i].kind),
                         rank[i].microbatch);
    }
    out += '\n';
  }
  return out;
}

}  // namespace terasim

#include "schedule/slicing_spec.h"

#include <charconv>
#include <string_view>

#include <fmt/format.h>

#include "models/errors.h"

namespace terasim {
namespace {

// Parses a positive integer; `what` names it in the message.
int PositiveInt(std::string_view text, std::string_view group, std::string_view what) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    ThrowInput("--slicing: group '{}': {} '{}' is not an integer", group, what, text);
  }
  if (value < 1) ThrowInput("--slicing: group '{}': {} {} must be >= 1", group, what, value);
  return value;
}

MicrobatchSlicing ParseGroup(std::string_view group) {
  const size_t colon = group.find(':');
  const size_t open = group.find('[');
  const size_t close = group.find(']');
  if (colon == std::string_view::npos || open != colon + 1 || close == std::string_view::npos ||
      close < open) {
    ThrowInput("--slicing: group '{}' is not ROWS:[L1,L2,...] or ROWS:[L1,L2,...]xCOUNT", group);
  }
  MicrobatchSlicing g;
  g.rows = PositiveInt(group.substr(0, colon), group, "rows");
  std::string_view list = group.substr(open + 1, close - open - 1);
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    g.slices.push_back(PositiveInt(list.substr(start, comma - start), group, "slice length"));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::string_view tail = group.substr(close + 1);
  if (!tail.empty()) {
    if (tail.front() != 'x') {
      ThrowInput("--slicing: group '{}': '{}' after ']' must be xCOUNT", group, tail);
    }
    g.count = PositiveInt(tail.substr(1), group, "count");
  }
  return g;
}

}  // namespace

std::vector<MicrobatchSlicing> ParseSlicingSpec(const std::string& spec) {
  if (spec.empty()) ThrowInput("--slicing: empty spec (expected e.g. 1:[704,688,656]x32)");
  std::vector<MicrobatchSlicing> groups;
  std::string_view rest = spec;
  size_t start = 0;
  while (true) {
    size_t plus = rest.find('+', start);
    std::string_view group = rest.substr(start, plus - start);
    if (group.empty()) ThrowInput("--slicing: empty group in '{}'", spec);
    groups.push_back(ParseGroup(group));
    if (plus == std::string_view::npos) break;
    start = plus + 1;
  }
  return groups;
}

std::string FormatSlicingSpec(const std::vector<MicrobatchSlicing>& groups) {
  std::string out;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i > 0) out += '+';
    out += fmt::format("{}:[{}]", groups[i].rows, fmt::join(groups[i].slices, ","));
    if (groups[i].count != 1) out += fmt::format("x{}", groups[i].count);
  }
  return out;
}

std::vector<MicrobatchSlices> ExpandSlicing(const std::vector<MicrobatchSlicing>& groups,
                                            int sequence) {
  std::vector<MicrobatchSlices> out;
  for (size_t i = 0; i < groups.size(); ++i) {
    const MicrobatchSlicing& g = groups[i];
    const std::string text = FormatSlicingSpec({g});
    if (g.rows < 1 || g.count < 1 || g.slices.empty()) {
      ThrowInput("--slicing: group {} ({}): rows, count and slices must be positive", i + 1, text);
    }
    long long sum = 0;
    for (int len : g.slices) {
      if (len < 1)
        ThrowInput("--slicing: group {} ({}): slice length {} must be >= 1", i + 1, text, len);
      sum += len;
    }
    if (sum != sequence) {
      ThrowInput("--slicing: group {} ({}): slices sum to {}, not the sequence length {}", i + 1,
                 text, sum, sequence);
    }
    for (int c = 0; c < g.count; ++c) out.push_back({g.rows, g.slices});
  }
  return out;
}

}  // namespace terasim

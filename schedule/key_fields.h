// The fields of dotted names (op keys and tensor identities, schedule/README.md): split at the
// dots, and read "{prefix}{int}" fields such as "l12" or "m3". Shared by the checker's data-flow
// rule (schedule/data_flow.cpp) and the executor's tensor ids (exec/tensor_id.cpp), so that both
// read a name alike. Thread safety: pure functions.
#pragma once

#include <charconv>
#include <string_view>
#include <vector>

namespace terasim {

// The fields of `text` between its dots (one empty field per doubled or trailing dot); the
// views borrow `text`.
inline std::vector<std::string_view> SplitDots(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = text.find('.', start);
    parts.push_back(text.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

// Parses "{prefix}{int}" into `value`; false (value unspecified) when `field` does not match.
inline bool ParseTagged(std::string_view field, char prefix, int& value) {
  if (field.size() < 2 || field[0] != prefix) return false;
  const char* end = field.data() + field.size();
  auto [ptr, ec] = std::from_chars(field.data() + 1, end, value);
  return ec == std::errc() && ptr == end;
}

}  // namespace terasim

#include "traces/query_result.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace terasim {
namespace {

bool IsNumber(const SqlValue& value) {
  return std::holds_alternative<int64_t>(value) || std::holds_alternative<double>(value);
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace

std::string SqlValueText(const SqlValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&value)) return fmt::format("{}", *d);
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  return "";
}

std::string FormatQueryCsv(const QueryResult& result) {
  std::string out;
  for (size_t c = 0; c < result.columns.size(); ++c) {
    if (c > 0) out += ',';
    out += CsvField(result.columns[c]);
  }
  out += '\n';
  for (const auto& row : result.rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) out += ',';
      out += CsvField(SqlValueText(row[c]));
    }
    out += '\n';
  }
  return out;
}

std::string FormatQueryJson(const QueryResult& result) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& row : result.rows) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (size_t c = 0; c < row.size(); ++c) {
      const SqlValue& v = row[c];
      nlohmann::ordered_json& field = object[result.columns[c]];
      if (const auto* i = std::get_if<int64_t>(&v)) {
        field = *i;
      } else if (const auto* d = std::get_if<double>(&v)) {
        if (std::isfinite(*d)) field = *d;
      } else if (const auto* s = std::get_if<std::string>(&v)) {
        // Invalid UTF-8 (a BLOB) is replaced rather than failing the whole query.
        field = *s;
      }
    }
    out.push_back(std::move(object));
  }
  return out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string FormatQueryTable(const QueryResult& result) {
  size_t n = result.columns.size();
  std::vector<size_t> width(n);
  std::vector<bool> numeric(n, true);
  for (size_t c = 0; c < n; ++c) width[c] = result.columns[c].size();
  for (const auto& row : result.rows) {
    for (size_t c = 0; c < n; ++c) {
      width[c] = std::max(width[c], SqlValueText(row[c]).size());
      if (!IsNumber(row[c]) && !std::holds_alternative<std::monostate>(row[c])) numeric[c] = false;
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < n; ++c) {
      if (c > 0) out += "  ";
      out += numeric[c] ? fmt::format("{:>{}}", cells[c], width[c])
                        : fmt::format("{:<{}}", cells[c], width[c]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(result.columns);
  std::vector<std::string> rule(n);
  for (size_t c = 0; c < n; ++c) rule[c] = std::string(width[c], '-');
  out += line(rule);
  for (const auto& row : result.rows) {
    std::vector<std::string> cells(n);
    for (size_t c = 0; c < n; ++c) cells[c] = SqlValueText(row[c]);
    out += line(cells);
  }
  out += fmt::format("({} row{})\n", result.rows.size(), result.rows.size() == 1 ? "" : "s");
  return out;
}

}  // namespace terasim

// QueryResult: the rows of one SQL query against the results store, as plain values, and
// its three renderings for `terasim db query`: an aligned text table, CSV (RFC 4180) and
// JSON (an array of objects whose keys keep the column order).
//
// Numbers print in their shortest round-trip form, so the same rows always give the same
// bytes.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace terasim {

// NULL, INTEGER, REAL or TEXT (a BLOB is rendered as its bytes in TEXT).
using SqlValue = std::variant<std::monostate, int64_t, double, std::string>;

struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<SqlValue>> rows;  // each has columns.size() values
};

// The value as text: "" for NULL, shortest round-trip digits for REAL.
std::string SqlValueText(const SqlValue& value);

// Header line then one line per row; fields holding a comma, quote, CR or LF are quoted with
// inner quotes doubled. NULL is an empty field.
std::string FormatQueryCsv(const QueryResult& result);

// `[{"col": value, ...}, ...]` with two-space indentation and a final newline; NULL is null,
// non-finite REALs are null (JSON has no NaN).
std::string FormatQueryJson(const QueryResult& result);

// Columns padded to their widest value, numbers right-aligned, then "(N rows)".
std::string FormatQueryTable(const QueryResult& result);

}  // namespace terasim

#include "traces/trace_csv.h"

#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/limits.h"
#include "traces/atomic_file.h"
#include "traces/trace_order.h"

namespace terasim {
namespace {

constexpr std::array<std::string_view, 10> kColumns = {
    "run", "iteration", "key", "kind", "device", "stream", "start_ns", "end_ns", "bytes", "flops"};

std::string Field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

// Splits `text` into records of fields (RFC 4180). Each record remembers its first line.
struct Record {
  int line = 0;
  std::vector<std::string> fields;
};

std::vector<Record> SplitCsv(const std::string& text, const std::string& origin) {
  std::vector<Record> records;
  Record record;
  std::string field;
  int line = 1;
  record.line = 1;
  bool quoted = false;
  bool any = false;  // the record has at least one character
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && field.empty()) {
      quoted = true;
      any = true;
    } else if (c == ',') {
      record.fields.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        record.fields.push_back(std::move(field));
        records.push_back(std::move(record));
      }
      field.clear();
      record = Record();
      any = false;
      record.line = ++line;
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) ThrowInput("{}:{}: unterminated quoted field", origin, record.line);
  if (any || !field.empty()) {
    record.fields.push_back(std::move(field));
    records.push_back(std::move(record));
  }
  return records;
}

int64_t ParseInt(const std::string& text, std::string_view column, const std::string& where,
                 int64_t min_value, int64_t max_value = INT64_MAX) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) {
    ThrowInput("{}: {}: '{}' is out of range", where, column, text);
  }
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    ThrowInput("{}: {}: '{}' is not an integer", where, column, text);
  }
  if (value < min_value)
    ThrowInput("{}: {}: must be >= {} (got {})", where, column, min_value, value);
  if (value > max_value)
    ThrowInput("{}: {}: must be <= {} (got {})", where, column, max_value, value);
  return value;
}

double ParseDouble(const std::string& text, std::string_view column, const std::string& where) {
  // strtod rather than from_chars: libstdc++'s floating from_chars is recent.
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    ThrowInput("{}: {}: '{}' is not a finite number", where, column, text);
  }
  return value;
}

}  // namespace

void WriteTraceCsv(const Trace& trace, std::string_view run, std::ostream& out) {
  std::string run_field = Field(run.empty() ? std::string_view(trace.label) : run);
  out << kTraceCsvHeader << "\n";
  for (size_t i : CanonicalRowOrder(trace.rows)) {
    const TraceRow& row = trace.rows[i];
    TERASIM_CHECK(std::isfinite(row.flops), "trace row {}: flops {} is not finite", row.key,
                  row.flops);
    out << fmt::format("{},{},{},{},{},{},{},{},{},{}\n", run_field, row.iteration, Field(row.key),
                       OpKindName(row.kind), row.device, Field(row.stream), row.start_ns,
                       row.end_ns, row.bytes, row.flops);
  }
}

std::string TraceCsv(const Trace& trace, std::string_view run) {
  std::ostringstream out;
  WriteTraceCsv(trace, run, out);
  return out.str();
}

void WriteTraceCsvFile(const std::string& path, const Trace& trace, std::string_view run) {
  AtomicFile file(path);
  WriteTraceCsv(trace, run, file.stream());
  file.Commit();
}

Trace ReadTraceCsv(const std::string& text, const std::string& origin) {
  std::vector<Record> records = SplitCsv(text, origin);
  if (records.empty())
    ThrowInput("{}: empty file (expected the header '{}')", origin, kTraceCsvHeader);
  const Record& header = records.front();
  bool header_ok = header.fields.size() == kColumns.size();
  for (size_t c = 0; header_ok && c < kColumns.size(); ++c) {
    header_ok = header.fields[c] == kColumns[c];
  }
  if (!header_ok) ThrowInput("{}:{}: header must be '{}'", origin, header.line, kTraceCsvHeader);

  Trace trace;
  std::optional<std::string> run;
  for (size_t r = 1; r < records.size(); ++r) {
    const Record& rec = records[r];
    std::string where = fmt::format("{}:{}", origin, rec.line);
    if (rec.fields.size() != kColumns.size()) {
      ThrowInput("{}: expected {} fields, got {}", where, kColumns.size(), rec.fields.size());
    }
    const auto& f = rec.fields;
    if (!run) {
      run = f[0];
    } else if (f[0] != *run) {
      ThrowInput("{}: run: '{}' differs from '{}' above (one run per file)", where, f[0], *run);
    }
    TraceRow row;
    row.iteration = static_cast<int>(ParseInt(f[1], "iteration", where, 0, INT32_MAX));
    row.key = f[2];
    if (row.key.empty()) ThrowInput("{}: key: empty", where);
    std::optional<OpKind> kind = ParseOpKind(f[3]);
    if (!kind) ThrowInput("{}: kind: unknown op kind '{}'", where, f[3]);
    row.kind = *kind;
    row.device = static_cast<int>(ParseInt(f[4], "device", where, 0, limits::kMaxDevices - 1));
    row.stream = f[5];
    row.start_ns =
        ParseInt(f[6], "start_ns", where, -limits::kMaxDurationNs, limits::kMaxDurationNs);
    row.end_ns = ParseInt(f[7], "end_ns", where, row.start_ns, limits::kMaxDurationNs);
    row.bytes = ParseInt(f[8], "bytes", where, 0, limits::kMaxBytes);
    row.flops = ParseDouble(f[9], "flops", where);
    trace.rows.push_back(std::move(row));
  }
  trace.label = run.value_or("");
  return trace;
}

Trace ReadTraceCsvFile(const std::string& path) { return ReadTraceCsv(ReadTextFile(path), path); }

}  // namespace terasim

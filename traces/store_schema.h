// The schema of terasim's SQLite results store, in one place, as a list of migrations.
//
// Migration i (1-based) brings a database from PRAGMA user_version i-1 to i; a new database
// runs all of them. To change the schema, append a migration (never edit a released one) and
// the store picks it up: kStoreSchemaVersion is the length of the list.
//
// Tables (v3; v1 lacked runs.slices and wrote config_json in per-command layouts):
//   runs            one simulated ('sim') or measured ('exec') run: what ran (model, cluster,
//                   strategy, degrees, micro-batches per replica, pipeline units per replica
//                   (`slices`), slicing), its full configuration as JSON (traces/run_config.h),
//                   the configuration key that resumable sweeps look up, the code version,
//                   seed, host and a label
//   metrics         (run_id, name) -> value, e.g. iteration_time_s, tflops_per_gpu
//   ops             a view: the run's trace, one row per op per iteration (traces/trace.h),
//                   decoded from op_rows (v3: keys as pattern + numbers, names interned in
//                   op_names, durations; v1/v2 held the decoded columns in a table)
//   comparisons     one `terasim compare` job; comparison_runs links it to its runs in order
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "traces/sqlite_handle.h"

namespace terasim {

struct StoreMigration {
  int version;           // PRAGMA user_version after this migration
  std::string_view sql;  // statements run in one transaction
  // Rewrites rows after `sql`, in the same transaction, where SQL alone would be unreadable
  // (e.g. JSON layouts); null when none. Throws SqliteError.
  void (*rewrite)(Database& db) = nullptr;
};

// The migrations in order; element i has version i + 1.
const std::vector<StoreMigration>& StoreMigrations();

// The schema version this build writes and reads (the last migration's version).
int StoreSchemaVersion();

// The v3 encoding of an op's key: its first kKeyPatternNumbers decimal numbers (those that
// print back the same: no leading zero, at most 18 digits) replaced by the bytes 1, 2, 3, 4,
// and those numbers in order. "F.s3.m12.t0-704" -> "F.s\1.m\2.t\3-\4", {3, 12, 0, 704}. A
// key holding one of those bytes itself is its own pattern, with no numbers.
inline constexpr size_t kKeyPatternNumbers = 4;
struct KeyPattern {
  std::string pattern;
  std::vector<int64_t> numbers;
};
KeyPattern SplitKeyPattern(std::string_view key);

// Writes op rows in the v3 encoding (op_rows, names interned in op_names) inside the caller's
// transaction. One per transaction; throws SqliteError.
class OpRowWriter {
 public:
  explicit OpRowWriter(Database& db);
  void Write(int64_t run_id, int64_t seq, int64_t iteration, std::string_view key,
             std::string_view kind, int64_t device, std::string_view stream, int64_t start_ns,
             int64_t end_ns, int64_t bytes, double flops);

 private:
  int64_t NameId(std::string_view name);
  // Looked up by string_view: no string built per row.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return std::hash<std::string_view>()(name); }
  };
  Statement find_name_, add_name_, insert_;
  Database& db_;
  std::unordered_map<std::string, int64_t, NameHash, std::equal_to<>> ids_;
};

}  // namespace terasim

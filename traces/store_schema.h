// The schema of terasim's SQLite results store, in one place, as a list of migrations.
//
// Migration i (1-based) brings a database from PRAGMA user_version i-1 to i; a new database
// runs all of them. To change the schema, append a migration (never edit a released one) and
// the store picks it up: kStoreSchemaVersion is the length of the list.
//
// Tables (v2; v1 lacked runs.slices and wrote config_json in per-command layouts):
//   runs            one simulated ('sim') or measured ('exec') run: what ran (model, cluster,
//                   strategy, degrees, micro-batches per replica, pipeline units per replica
//                   (`slices`), slicing), its full configuration as JSON (traces/run_config.h),
//                   the configuration key that resumable sweeps look up, the code version,
//                   seed, host and a label
//   metrics         (run_id, name) -> value, e.g. iteration_time_s, tflops_per_gpu
//   ops             the run's trace: one row per op per iteration (traces/trace.h)
//   comparisons     one `terasim compare` job; comparison_runs links it to its runs in order
#pragma once

#include <string_view>
#include <vector>

namespace terasim {

class Database;

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

}  // namespace terasim

// ResultStore: terasim's SQLite results store (DESIGN.md section 5). One file (default
// terasim.db) holds every simulated and measured run with its full configuration, code version
// and seed, its metrics and its trace, plus the `terasim compare` jobs that group runs. The
// schema lives in traces/store_schema.h; opening a store applies any missing migrations.
//
// Each run is written in one transaction: a run that fails (or a process that dies) half-way
// leaves nothing behind. The store uses WAL journaling, enforces foreign keys and waits for
// a busy file, so several processes (a parallel sweep) may write to one file.
//
// Thread safety: one ResultStore per thread; open the file once per thread or process.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "traces/query_result.h"
#include "traces/sqlite_handle.h"
#include "traces/trace.h"

namespace terasim {

inline constexpr const char* kDefaultStorePath = "terasim.db";

// What describes one run. Empty config_key, code_version and host are filled in on write.
struct RunRecord {
  std::string kind = "sim";  // "sim" or "exec"
  std::string model;         // model card name, e.g. "gpt3-175b"
  std::string cluster;       // e.g. "p3.16xlarge:48"
  std::string strategy;      // e.g. "terapipe", "gpipe", "1f1b"
  int dp = 1;
  int pp = 1;
  int tp = 1;
  int microbatches = 1;  // micro-batches per data-parallel replica per iteration
  int slices = 0;        // (micro-batch, token slice) units per replica; 0: = microbatches
  std::string slicing;   // e.g. "[704,688,656]"
  nlohmann::json config = nlohmann::json::object();  // the full configuration
  std::string config_key;    // what FindRunByConfigKey looks up; empty: config.dump()
  std::string code_version;  // empty: CodeVersion()
  int64_t seed = 0;
  std::string host;  // empty: this machine's host name
  std::string label;
  std::map<std::string, double> metrics;  // e.g. "iteration_time_s" -> 1.481
};

// A run as stored.
struct StoredRun {
  int64_t id = 0;
  std::string created_at;  // UTC, "2024-05-01T12:00:00Z"
  RunRecord record;        // config_key, code_version and host as written
};

class ResultStore {
 public:
  // Opens `path` for writing, creating it (and its schema) when missing. Never adopts a SQLite
  // file that is not a store: throws InputError "PATH: has tables of its own (...): not a
  // terasim results store" for a file with schema version 0 and tables, "PATH: the store is
  // read-only: ..." when it cannot be written, "PATH: schema version N is newer than this
  // terasim understands (M)", SqliteError. Commands that write runs call this BEFORE their
  // work, so that a bad --db fails fast.
  static ResultStore OpenOrCreate(const std::string& path);
  // Opens an existing store for writing without creating anything. Throws InputError "PATH: no
  // such database file", "PATH: not a terasim results store", the errors above, or SqliteError
  // (e.g. "file is not a database").
  static ResultStore OpenExisting(const std::string& path);
  // Opens an existing store for reading only: a store on a read-only file or folder reads fine.
  // Query() then runs only statements that change nothing (query_only, no ATTACH, no PRAGMA
  // assignments) and stops any statement after kQueryMaxSteps VM steps or kQueryMaxSeconds.
  // A store at an older schema version is migrated first when it is writable. Throws as
  // OpenExisting.
  static ResultStore OpenReadOnly(const std::string& path, int64_t query_max_steps = kQueryMaxSteps,
                                  double query_max_seconds = kQueryMaxSeconds);
  static constexpr int64_t kQueryMaxSteps = int64_t{1}
                                            << 32;  // a few seconds to minutes of VM work
  static constexpr double kQueryMaxSeconds = 60;

  ResultStore(ResultStore&&) = default;
  ResultStore& operator=(ResultStore&&) = default;

  const std::string& path() const { return db_.path(); }
  // PRAGMA user_version of the file (StoreSchemaVersion() once open).
  int SchemaVersion();

  // Writes the run, its metrics and `ops` in one transaction and returns the new run id.
  // Throws InputError for a kind other than "sim"/"exec" or a non-finite metric, SqliteError;
  // on any throw nothing of the run is stored.
  int64_t WriteRun(const RunRecord& run, const std::vector<TraceRow>& ops);

  // As WriteRun, unless a run with the record's config_key is stored: the check and the insert
  // are one transaction (BEGIN IMMEDIATE), so writers sharing the file never store a key twice.
  // Returns the new run id, or nullopt when the key was already stored.
  std::optional<int64_t> WriteRunUnlessStored(const RunRecord& run,
                                              const std::vector<TraceRow>& ops);

  // The id of the newest run whose config_key equals `config_key`, if any.
  std::optional<int64_t> FindRunByConfigKey(std::string_view config_key);

  // Every run with its metrics, by ascending id.
  std::vector<StoredRun> ListRuns();
  // One run with its metrics. Throws InputError "PATH: no run ID".
  StoredRun ReadRun(int64_t run_id);
  // The run's ops as a Trace (rows in the order written; run_kind and label from the run;
  // metadata: model, cluster, strategy, run_id, code_version). Throws InputError "PATH: no run
  // ID".
  Trace ReadRunTrace(int64_t run_id);

  // Records one comparison of `run_ids` (in that order) in one transaction; returns its id.
  // Throws InputError when a run id does not exist, SqliteError.
  int64_t WriteComparison(const std::string& name, const nlohmann::json& config,
                          const std::vector<int64_t>& run_ids);
  // Writes `runs` (each with its ops, which may be nullptr) and a comparison of them, in that
  // order, in ONE transaction: an interrupted comparison leaves nothing behind. Returns the
  // comparison id; the new run ids go to `run_ids` when given.
  int64_t WriteComparisonWithRuns(
      const std::string& name, const nlohmann::json& config,
      const std::vector<std::pair<RunRecord, const std::vector<TraceRow>*>>& runs,
      std::vector<int64_t>* run_ids = nullptr);
  // The run ids of a comparison in their order. Throws InputError "PATH: no comparison ID".
  std::vector<int64_t> ComparisonRuns(int64_t comparison_id);

  // Runs one SQL statement and returns its rows. Throws InputError "PATH: SQL: MESSAGE"
  // (SQLite's message) for bad SQL or a failing statement; on a store opened read-only, also for
  // a statement that would write and for one that exceeds the query limits.
  QueryResult Query(std::string_view sql);

  // Testing only: called inside WriteRun's transaction after the run row ("run", 0), after
  // each metric ("metric", i) and after each op ("op", i). A hook that throws makes the write
  // fail as an interrupted process would.
  using WriteHook = std::function<void(std::string_view step, int64_t index)>;
  void SetWriteHookForTesting(WriteHook hook) { write_hook_ = std::move(hook); }

 private:
  explicit ResultStore(Database db) : db_(std::move(db)) {}
  // The user_version of a file opened by Open*, with the errors that name what the file is.
  int64_t ReadVersion();
  void Configure(bool writable);
  void Migrate();
  void RequireRun(int64_t run_id);
  // The bodies of WriteRun and WriteComparison, inside the caller's transaction.
  int64_t InsertRun(const RunRecord& run, const std::vector<TraceRow>& ops);
  int64_t InsertComparison(const std::string& name, const nlohmann::json& config,
                           const std::vector<int64_t>& run_ids);
  std::map<int64_t, std::map<std::string, double>> ReadMetrics(std::optional<int64_t> run_id);
  void Hook(std::string_view step, int64_t index) {
    if (write_hook_) write_hook_(step, index);
  }

  Database db_;
  bool read_only_ = false;  // opened by OpenReadOnly: Query() runs under the limits below
  int64_t query_max_steps_ = kQueryMaxSteps;
  double query_max_seconds_ = kQueryMaxSeconds;
  WriteHook write_hook_;
};

}  // namespace terasim

#include "traces/result_store.h"

#include <unistd.h>

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "models/limits.h"
#include "traces/code_version.h"
#include "traces/store_schema.h"

namespace terasim {
namespace {

constexpr std::string_view kNow = "strftime('%Y-%m-%dT%H:%M:%SZ', 'now')";

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

constexpr std::string_view kRunColumns =
    "id, created_at, kind, model, cluster, strategy, dp, pp, tp, microbatches, slicing, "
    "config_json, config_key, code_version, seed, host, label, slices";

StoredRun ReadRunColumns(const Statement& s, const std::string& path) {
  StoredRun run;
  run.id = s.Int(0);
  run.created_at = s.Text(1);
  RunRecord& r = run.record;
  r.kind = s.Text(2);
  r.model = s.Text(3);
  r.cluster = s.Text(4);
  r.strategy = s.Text(5);
  r.dp = static_cast<int>(s.Int(6));
  r.pp = static_cast<int>(s.Int(7));
  r.tp = static_cast<int>(s.Int(8));
  r.microbatches = static_cast<int>(s.Int(9));
  r.slicing = s.Text(10);
  r.config = nlohmann::json::parse(s.Text(11), nullptr, /*allow_exceptions=*/false);
  if (r.config.is_discarded())
    ThrowInput("{}: run {}: config_json is not valid JSON", path, run.id);
  r.config_key = s.Text(12);
  r.code_version = s.Text(13);
  r.seed = s.Int(14);
  r.host = s.Text(15);
  r.label = s.Text(16);
  r.slices = static_cast<int>(s.Int(17));
  return run;
}

// Never adopt someone else's database: a file at schema version 0 must hold no tables.
void RefuseForeignTables(Database& db) {
  Statement tables = db.Prepare(
      "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 1");
  if (tables.Step()) {
    ThrowInput(
        "{}: has tables of its own (e.g. '{}') and schema version 0: not a terasim results "
        "store; give --db a new file or an existing store",
        db.path(), tables.Text(0));
  }
}

}  // namespace

int64_t ResultStore::ReadVersion() {
  try {
    return db_.PragmaInt("user_version");
  } catch (const SqliteError& e) {
    // SQLITE_NOTADB (26): the file is something else; anything else (permissions, locks, I/O)
    // is said as SQLite says it.
    if ((e.code() & 0xff) == 26) {
      ThrowInput("{}: not a terasim results store ({})", path(), e.sqlite_message());
    }
    ThrowInput("{}: cannot read the store: {}", path(), e.sqlite_message());
  }
}

ResultStore ResultStore::OpenOrCreate(const std::string& path) {
  ResultStore store(Database::Open(path, Database::Mode::kCreate));
  const int64_t version = store.ReadVersion();
  if (store.db_.ReadOnly()) {
    ThrowInput("{}: the store is read-only (no permission to write the file or its folder)", path);
  }
  // Before Configure switches the file to WAL: a foreign file is left exactly as it was.
  if (version == 0) RefuseForeignTables(store.db_);
  store.Configure(/*writable=*/true);
  store.Migrate();
  return store;
}

ResultStore ResultStore::OpenExisting(const std::string& path) {
  ResultStore store(Database::Open(path, Database::Mode::kExisting));
  const int64_t version = store.ReadVersion();
  if (version == 0) ThrowInput("{}: not a terasim results store (schema version 0)", path);
  if (store.db_.ReadOnly()) {
    ThrowInput("{}: the store is read-only (no permission to write the file or its folder)", path);
  }
  store.Configure(/*writable=*/true);
  store.Migrate();
  return store;
}

ResultStore ResultStore::OpenReadOnly(const std::string& path, int64_t query_max_steps,
                                      double query_max_seconds) {
  int64_t version = 0;
  {
    ResultStore probe(Database::Open(path, Database::Mode::kExistingReadOnly));
    version = probe.ReadVersion();
  }
  if (version == 0) ThrowInput("{}: not a terasim results store (schema version 0)", path);
  if (version < StoreSchemaVersion()) {
    // An older store: migrate it once where it may be written; a read-only one cannot be.
    ResultStore writable(Database::Open(path, Database::Mode::kExisting));
    if (writable.db_.ReadOnly()) {
      ThrowInput(
          "{}: schema version {} is older than this terasim's ({}) and the store is read-only; "
          "open it once where it is writable to migrate it",
          path, version, StoreSchemaVersion());
    }
    writable.Configure(/*writable=*/true);
    writable.Migrate();
  }
  ResultStore store(Database::Open(path, Database::Mode::kExistingReadOnly));
  store.read_only_ = true;
  store.Configure(/*writable=*/false);
  store.Migrate();  // only checks the version: a newer store is refused
  store.db_.RestrictToQueries();
  store.query_max_steps_ = query_max_steps;
  store.query_max_seconds_ = query_max_seconds;
  return store;
}

void ResultStore::Configure(bool writable) {
  db_.Exec("PRAGMA foreign_keys = ON");
  if (writable) {
    Statement wal = db_.Prepare("PRAGMA journal_mode = WAL");
    wal.Step();  // returns the mode now in use; a memory database stays "memory"
  }
}

void ResultStore::Migrate() {
  int64_t version = db_.PragmaInt("user_version");
  if (version > StoreSchemaVersion()) {
    ThrowInput(
        "{}: schema version {} is newer than this terasim understands ({}); use a newer "
        "terasim",
        path(), version, StoreSchemaVersion());
  }
  if (version == StoreSchemaVersion()) return;
  TERASIM_CHECK(!read_only_, "{}: migrating a store opened read-only", path());
  Transaction transaction(db_);
  // Another process may have migrated between the check and the lock.
  version = db_.PragmaInt("user_version");
  if (version == 0) RefuseForeignTables(db_);
  for (const StoreMigration& m : StoreMigrations()) {
    if (m.version <= version) continue;
    db_.Exec(m.sql);
    if (m.rewrite != nullptr) m.rewrite(db_);
    db_.Exec(fmt::format("PRAGMA user_version = {}", m.version));
  }
  transaction.Commit();
}

int ResultStore::SchemaVersion() { return static_cast<int>(db_.PragmaInt("user_version")); }

int64_t ResultStore::WriteRun(const RunRecord& run, const std::vector<TraceRow>& ops) {
  Transaction transaction(db_);
  int64_t run_id = InsertRun(run, ops);
  transaction.Commit();
  return run_id;
}

std::optional<int64_t> ResultStore::WriteRunUnlessStored(const RunRecord& run,
                                                         const std::vector<TraceRow>& ops) {
  Transaction transaction(db_);
  if (FindRunByConfigKey(run.config_key.empty() ? run.config.dump() : run.config_key)) {
    return std::nullopt;
  }
  int64_t run_id = InsertRun(run, ops);
  transaction.Commit();
  return run_id;
}

int64_t ResultStore::InsertRun(const RunRecord& run, const std::vector<TraceRow>& ops) {
  if (run.kind != "sim" && run.kind != "exec") {
    ThrowInput("{}: run kind must be 'sim' or 'exec', not '{}'", path(), run.kind);
  }
  for (const auto& [name, value] : run.metrics) {
    if (!std::isfinite(value)) ThrowInput("{}: metric {}: value must be finite", path(), name);
  }
  Statement insert_run = db_.Prepare(fmt::format(
      "INSERT INTO runs (created_at, kind, model, cluster, strategy, dp, pp, tp, microbatches, "
      "slicing, config_json, config_key, code_version, seed, host, label, slices) "
      "VALUES ({}, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
      kNow));
  std::string config_json = run.config.dump();
  insert_run.Bind(1, run.kind)
      .Bind(2, run.model)
      .Bind(3, run.cluster)
      .Bind(4, run.strategy)
      .Bind(5, int64_t{run.dp})
      .Bind(6, int64_t{run.pp})
      .Bind(7, int64_t{run.tp})
      .Bind(8, int64_t{run.microbatches})
      .Bind(9, run.slicing)
      .Bind(10, config_json)
      .Bind(11, run.config_key.empty() ? config_json : run.config_key)
      .Bind(12, run.code_version.empty() ? CodeVersion() : run.code_version)
      .Bind(13, run.seed)
      .Bind(14, run.host.empty() ? HostName() : run.host)
      .Bind(15, run.label)
      .Bind(16, int64_t{run.slices > 0 ? run.slices : run.microbatches});
  insert_run.Run();
  int64_t run_id = db_.LastInsertRowId();
  Hook("run", 0);

  Statement insert_metric =
      db_.Prepare("INSERT INTO metrics (run_id, name, value) VALUES (?1, ?2, ?3)");
  int64_t index = 0;
  for (const auto& [name, value] : run.metrics) {
    insert_metric.Bind(1, run_id).Bind(2, name).Bind(3, value);
    insert_metric.Run();
    Hook("metric", index++);
  }

  OpRowWriter op_writer(db_);
  index = 0;
  for (const TraceRow& op : ops) {
    op_writer.Write(run_id, index, op.iteration, op.key, OpKindName(op.kind), op.device, op.stream,
                    op.start_ns, op.end_ns, op.bytes, op.flops);
    Hook("op", index++);
  }
  return run_id;
}

std::optional<int64_t> ResultStore::FindRunByConfigKey(std::string_view config_key) {
  Statement s = db_.Prepare("SELECT max(id) FROM runs WHERE config_key = ?1");
  s.Bind(1, config_key);
  if (!s.Step() || s.Type(0) == Statement::ColumnType::kNull) return std::nullopt;
  return s.Int(0);
}

std::map<int64_t, std::map<std::string, double>> ResultStore::ReadMetrics(
    std::optional<int64_t> run_id) {
  Statement s = db_.Prepare(run_id ? "SELECT run_id, name, value FROM metrics WHERE run_id = ?1"
                                   : "SELECT run_id, name, value FROM metrics");
  if (run_id) s.Bind(1, *run_id);
  std::map<int64_t, std::map<std::string, double>> metrics;
  while (s.Step()) metrics[s.Int(0)][s.Text(1)] = s.Real(2);
  return metrics;
}

std::vector<StoredRun> ResultStore::ListRuns() {
  auto metrics = ReadMetrics(std::nullopt);
  Statement s = db_.Prepare(fmt::format("SELECT {} FROM runs ORDER BY id", kRunColumns));
  std::vector<StoredRun> runs;
  while (s.Step()) {
    runs.push_back(ReadRunColumns(s, path()));
    runs.back().record.metrics = std::move(metrics[runs.back().id]);
  }
  return runs;
}

void ResultStore::RequireRun(int64_t run_id) {
  Statement s = db_.Prepare("SELECT 1 FROM runs WHERE id = ?1");
  s.Bind(1, run_id);
  if (!s.Step()) ThrowInput("{}: no run {}", path(), run_id);
}

StoredRun ResultStore::ReadRun(int64_t run_id) {
  Statement s = db_.Prepare(fmt::format("SELECT {} FROM runs WHERE id = ?1", kRunColumns));
  s.Bind(1, run_id);
  if (!s.Step()) ThrowInput("{}: no run {}", path(), run_id);
  StoredRun run = ReadRunColumns(s, path());
  run.record.metrics = std::move(ReadMetrics(run_id)[run_id]);
  return run;
}

Trace ResultStore::ReadRunTrace(int64_t run_id) {
  StoredRun run = ReadRun(run_id);
  Trace trace;
  trace.run_kind = run.record.kind;
  trace.label = run.record.label;
  trace.metadata["run_id"] = std::to_string(run_id);
  trace.metadata["model"] = run.record.model;
  trace.metadata["cluster"] = run.record.cluster;
  trace.metadata["strategy"] = run.record.strategy;
  trace.metadata["code_version"] = run.record.code_version;
  Statement s = db_.Prepare(
      "SELECT iteration, key, kind, device, stream, start_ns, end_ns, bytes, flops FROM ops "
      "WHERE run_id = ?1 ORDER BY seq");
  s.Bind(1, run_id);
  while (s.Step()) {
    TraceRow row;
    row.iteration = static_cast<int>(s.Int(0));
    row.key = s.Text(1);
    std::string kind = s.Text(2);
    std::optional<OpKind> parsed = ParseOpKind(kind);
    if (!parsed) ThrowInput("{}: run {}: op {}: unknown kind '{}'", path(), run_id, row.key, kind);
    row.kind = *parsed;
    // The store is a file anyone can edit: check what the trace writers assume.
    const int64_t iteration = s.Int(0);
    const int64_t device = s.Int(3);
    if (iteration < 0 || iteration > INT32_MAX) {
      ThrowInput("{}: run {}: op {}: iteration {} is out of range", path(), run_id, row.key,
                 iteration);
    }
    if (device < 0 || device >= limits::kMaxDevices) {
      ThrowInput("{}: run {}: op {}: device {} is out of range [0, {}) (kMaxDevices)", path(),
                 run_id, row.key, device, limits::kMaxDevices);
    }
    row.device = static_cast<int>(device);
    row.stream = s.Text(4);
    row.start_ns = s.Int(5);
    row.end_ns = s.Int(6);
    row.bytes = s.Int(7);
    row.flops = s.Real(8);
    if (row.end_ns < row.start_ns) {
      ThrowInput("{}: run {}: op {}: end_ns {} is before start_ns {}", path(), run_id, row.key,
                 row.end_ns, row.start_ns);
    }
    if (row.bytes < 0 || !std::isfinite(row.flops) || row.flops < 0) {
      ThrowInput("{}: run {}: op {}: bytes {} and flops {} must be finite and >= 0", path(), run_id,
                 row.key, row.bytes, row.flops);
    }
    trace.rows.push_back(std::move(row));
  }
  return trace;
}

int64_t ResultStore::WriteComparison(const std::string& name, const nlohmann::json& config,
                                     const std::vector<int64_t>& run_ids) {
  Transaction transaction(db_);
  int64_t comparison_id = InsertComparison(name, config, run_ids);
  transaction.Commit();
  return comparison_id;
}

int64_t ResultStore::WriteComparisonWithRuns(
    const std::string& name, const nlohmann::json& config,
    const std::vector<std::pair<RunRecord, const std::vector<TraceRow>*>>& runs,
    std::vector<int64_t>* run_ids) {
  Transaction transaction(db_);
  std::vector<int64_t> ids;
  for (const auto& [record, ops] : runs) {
    ids.push_back(InsertRun(record, ops != nullptr ? *ops : std::vector<TraceRow>{}));
  }
  int64_t comparison_id = InsertComparison(name, config, ids);
  transaction.Commit();
  if (run_ids != nullptr) *run_ids = ids;
  return comparison_id;
}

int64_t ResultStore::InsertComparison(const std::string& name, const nlohmann::json& config,
                                      const std::vector<int64_t>& run_ids) {
  for (int64_t id : run_ids) RequireRun(id);
  Statement insert = db_.Prepare(fmt::format(
      "INSERT INTO comparisons (name, created_at, config_json) VALUES (?1, {}, ?2)", kNow));
  insert.Bind(1, name).Bind(2, config.dump());
  insert.Run();
  int64_t comparison_id = db_.LastInsertRowId();
  Statement link = db_.Prepare(
      "INSERT INTO comparison_runs (comparison_id, position, run_id) VALUES (?1, ?2, ?3)");
  for (size_t i = 0; i < run_ids.size(); ++i) {
    link.Bind(1, comparison_id).Bind(2, static_cast<int64_t>(i)).Bind(3, run_ids[i]);
    link.Run();
  }
  return comparison_id;
}

std::vector<int64_t> ResultStore::ComparisonRuns(int64_t comparison_id) {
  Statement exists = db_.Prepare("SELECT 1 FROM comparisons WHERE id = ?1");
  exists.Bind(1, comparison_id);
  if (!exists.Step()) ThrowInput("{}: no comparison {}", path(), comparison_id);
  Statement s =
      db_.Prepare("SELECT run_id FROM comparison_runs WHERE comparison_id = ?1 ORDER BY position");
  s.Bind(1, comparison_id);
  std::vector<int64_t> ids;
  while (s.Step()) ids.push_back(s.Int(0));
  return ids;
}

QueryResult ResultStore::Query(std::string_view sql) {
  QueryResult result;
  // The limits cover this statement only (db export of a large run is not a runaway query).
  struct LimitScope {
    Database& db;
    ~LimitScope() { db.ClearWorkLimit(); }
  } scope{db_};
  if (read_only_) db_.SetWorkLimit(query_max_steps_, query_max_seconds_);
  try {
    Statement s = db_.Prepare(sql);
    if (read_only_ && !s.ReadOnly()) {
      ThrowInput("{}: SQL: db query runs only statements that change nothing", path());
    }
    int n = s.ColumnCount();
    for (int c = 0; c < n; ++c) result.columns.push_back(s.ColumnName(c));
    while (s.Step()) {
      std::vector<SqlValue> row(n);
      for (int c = 0; c < n; ++c) {
        switch (s.Type(c)) {
          case Statement::ColumnType::kNull:
            break;
          case Statement::ColumnType::kInteger:
            row[c] = s.Int(c);
            break;
          case Statement::ColumnType::kReal:
            row[c] = s.Real(c);
            break;
          case Statement::ColumnType::kText:
          case Statement::ColumnType::kBlob:
            row[c] = s.Text(c);
            break;
        }
      }
      result.rows.push_back(std::move(row));
    }
  } catch (const SqliteError& e) {
    if (db_.WorkLimitHit()) {
      ThrowInput(
          "{}: SQL: stopped at the query limit (ResultStore::kQueryMaxSteps VM steps or "
          "kQueryMaxSeconds s); narrow the query",
          path());
    }
    if (read_only_ && e.sqlite_message().find("not authorized") != std::string::npos) {
      ThrowInput("{}: SQL: db query runs only statements that change nothing ({})", path(),
                 e.sqlite_message());
    }
    ThrowInput("{}: SQL: {}", path(), e.sqlite_message());
  }
  return result;
}

}  // namespace terasim

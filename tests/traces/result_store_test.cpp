// The SQLite results store: schema, runs with metrics and ops, atomic writes, versions,
// comparisons, configuration-key lookups and queries.
#include "traces/result_store.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include <sqlite3.h>
#include <catch2/catch.hpp>

#include "models/errors.h"
#include "tests/traces/sample_trace.h"
#include "traces/code_version.h"
#include "traces/store_schema.h"

namespace terasim {
namespace {

using testing::SameRows;
using testing::SampleTrace;
using testing::TempPath;

RunRecord SampleRun() {
  RunRecord r;
  r.kind = "sim";
  r.model = "gpt3-1b";
  r.cluster = "p3.16xlarge:24";
  r.strategy = "terapipe";
  r.dp = 2;
  r.pp = 12;
  r.tp = 8;
  r.microbatches = 4;
  r.slicing = "[704,688,656]";
  r.config = {{"model", "gpt3-1b"}, {"batch", 72}};
  r.seed = 42;
  r.label = "setting 2";
  r.metrics = {{"iteration_time_s", 1.328}, {"tflops_per_gpu", 11.5}, {"bubble_fraction", 0.25}};
  return r;
}

int64_t Count(ResultStore& store, const std::string& table) {
  QueryResult q = store.Query("SELECT count(*) FROM " + table);
  return std::get<int64_t>(q.rows.at(0).at(0));
}

TEST_CASE("A new store carries the current schema version, WAL mode and foreign keys") {
  TempPath db("schema.db");
  ResultStore store = ResultStore::OpenOrCreate(db.str());
  // user_version = the number of migrations (v3 now: v2 added runs.slices, one config layout;
  // v3 the compact ops encoding).
  CHECK(store.SchemaVersion() == StoreSchemaVersion());
  CHECK(StoreSchemaVersion() == 3);
  CHECK(std::get<std::string>(store.Query("PRAGMA journal_mode").rows[0][0]) == "wal");
  CHECK(std::get<int64_t>(store.Query("PRAGMA foreign_keys").rows[0][0]) == 1);
  // The six tables and the ops view exist.
  QueryResult tables = store.Query(
      "SELECT type || ' ' || name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY "
      "name");
  std::vector<std::string> names;
  for (const auto& row : tables.rows) names.push_back(std::get<std::string>(row[0]));
  CHECK(names == std::vector<std::string>{"table comparison_runs", "table comparisons",
                                          "table metrics", "table op_names", "table op_rows",
                                          "view ops", "table runs"});
  // Opening again is a no-op migration.
  ResultStore again = ResultStore::OpenOrCreate(db.str());
  CHECK(again.SchemaVersion() == 3);
}

TEST_CASE("A run is written and read back with its metrics and ops") {
  TempPath db("roundtrip.db");
  ResultStore store = ResultStore::OpenOrCreate(db.str());
  Trace trace = SampleTrace();
  int64_t id = store.WriteRun(SampleRun(), trace.rows);
  // The first run of a new store gets id 1.
  CHECK(id == 1);
  StoredRun run = store.ReadRun(id);
  CHECK(run.record.model == "gpt3-1b");
  CHECK(run.record.cluster == "p3.16xlarge:24");
  CHECK(run.record.strategy == "terapipe");
  CHECK(run.record.dp == 2);
  CHECK(run.record.pp == 12);
  CHECK(run.record.tp == 8);
  CHECK(run.record.microbatches == 4);
  CHECK(run.record.slicing == "[704,688,656]");
  CHECK(run.record.config == SampleRun().config);
  CHECK(run.record.seed == 42);
  CHECK(run.record.label == "setting 2");
  // Defaults filled on write: the configuration key is the config JSON, the code version is
  // this build's, the host is not empty.
  CHECK(run.record.config_key == SampleRun().config.dump());
  CHECK(run.record.code_version == CodeVersion());
  CHECK_FALSE(run.record.host.empty());
  CHECK(run.created_at.size() == 20);  // "YYYY-MM-DDTHH:MM:SSZ"
  CHECK(run.record.metrics == SampleRun().metrics);
  // The ops come back in the order written, every field equal.
  Trace back = store.ReadRunTrace(id);
  CHECK(SameRows(back.rows, trace.rows));
  CHECK(back.run_kind == "sim");
  CHECK(back.metadata.at("model") == "gpt3-1b");
  // ListRuns holds the one run with its metrics.
  std::vector<StoredRun> runs = store.ListRuns();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].record.metrics.at("iteration_time_s") == 1.328);
}

TEST_CASE("An interrupted run write leaves no rows behind") {
  TempPath db("interrupted.db");
  ResultStore store = ResultStore::OpenOrCreate(db.str());
  int64_t first = store.WriteRun(SampleRun(), SampleTrace().rows);
  // Fail after the run row, all metrics and three ops have been inserted.
  store.SetWriteHookForTesting([](std::string_view step, int64_t index) {
    if (step == "op" && index == 2) throw std::runtime_error("simulated crash");
  });
  CHECK_THROWS_WITH(store.WriteRun(SampleRun(), SampleTrace().rows), "simulated crash");
  // Only the first run remains: 1 run, 3 metrics, 8 ops.
  CHECK(Count(store, "runs") == 1);
  CHECK(Count(store, "metrics") == 3);
  CHECK(Count(store, "ops") == static_cast<int64_t>(SampleTrace().rows.size()));
  // A fresh connection sees the same (nothing was committed).
  store.SetWriteHookForTesting({});
  ResultStore other = ResultStore::OpenExisting(db.str());
  CHECK(Count(other, "runs") == 1);
  CHECK(Count(other, "ops") == static_cast<int64_t>(SampleTrace().rows.size()));
  // The store still works after the failure.
  CHECK(store.WriteRun(SampleRun(), {}) == first + 1);
}

TEST_CASE("A failure in the middle of the metrics also leaves no run") {
  TempPath db("interrupted-metrics.db");
  ResultStore store = ResultStore::OpenOrCreate(db.str());
  store.SetWriteHookForTesting([](std::string_view step, int64_t index) {
    if (step == "metric" && index == 1) throw std::runtime_error("crash");
  });
  CHECK_THROWS(store.WriteRun(SampleRun(), SampleTrace().rows));
  // Nothing of the run: 0 runs, 0 metrics, 0 ops.
  CHECK(Count(store, "runs") == 0);
  CHECK(Count(store, "metrics") == 0);
  CHECK(Count(store, "ops") == 0);
}

TEST_CASE("Bad run records are rejected before anything is written") {
  TempPath db("bad-run.db");
  ResultStore store = ResultStore::OpenOrCreate(db.str());
  RunRecord r = SampleRun();
  r.kind = "guess";
  CHECK_THROWS_WITH(store.WriteRun(r, {}),
                    db.str() + ": run kind must be 'sim' or 'exec', not 'guess'");
  r = SampleRun();
  r.metrics["tflops_per_gpu"] = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(store.WriteRun(r, {}),
                    db.str() + ": metric tflops_per_gpu: value must be finite");
  CHECK(Count(store, "runs") == 0);
}

TEST_CASE("Opening a store with a newer schema version is a clear error") {
  TempPath db("newer.db");
  {
    ResultStore store = ResultStore::OpenOrCreate(db.str());
    store.Query("PRAGMA user_version = 99");
  }
  std::string expected = db.str() +
                         ": schema version 99 is newer than this terasim understands (3); use a "
                         "newer terasim";
  CHECK_THROWS_WITH(ResultStore::OpenExisting(db.str()), expected);
  CHECK_THROWS_WITH(ResultStore::OpenOrCreate(db.str()), expected);
}

TEST_CASE("Opening a missing store for reading is an error and creates nothing") {
  TempPath db("missing.db");
  CHECK_THROWS_WITH(ResultStore::OpenExisting(db.str()), db.str() + ": no such database file");
  CHECK_FALSE(std::filesystem::exists(db.str()));
}

TEST_CASE("Opening a file that is not a terasim store is an error") {
  TempPath plain("plain.db");
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(plain.str().c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw, "CREATE TABLE t (x)", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(raw);
  }
  CHECK_THROWS_WITH(ResultStore::OpenExisting(plain.str()),
                    plain.str() + ": not a terasim results store (schema version 0)");
  TempPath text("text.db");
  {
    std::ofstream out(text.str());
    out << "this is not a database, just text that is long enough to have a header\n";
  }
  // SQLite's own message names the problem.
  CHECK_THROWS_WITH(ResultStore::OpenExisting(text.str()),
                    text.str() + ": not a terasim results store (file is not a database)");
}

TEST_CASE("FindRunByConfigKey finds the newest run with that key") {
  TempPath db("config-key.db");
  ResultStore store = ResultStore::OpenOrCreate(db.str());
  RunRecord r = SampleRun();
  r.config_key = "sweep:gpt3-1b:dp2";
  CHECK_FALSE(store.FindRunByConfigKey("sweep:gpt3-1b:dp2").has_value());
  int64_t a = store.WriteRun(r, {});
  int64_t b = store.WriteRun(r, {});
  // Two runs with the key: the newer (larger id) is returned.
  CHECK(store.FindRunByConfigKey("sweep:gpt3-1b:dp2") == b);
  CHECK(b > a);
  // The default key is the configuration JSON.
  int64_t c = store.WriteRun(SampleRun(), {});
  CHECK(store.FindRunByConfigKey(SampleRun().config.dump()) == c);
  CHECK_FALSE(store.FindRunByConfigKey("other").has_value());
}

TEST_CASE("A comparison links its runs in order and rejects unknown runs") {
  TempPath db("comparison.db");
  ResultStore store = ResultStore::OpenOrCreate(db.str());
  int64_t a = store.WriteRun(SampleRun(), {});
  int64_t b = store.WriteRun(SampleRun(), {});
  int64_t id = store.WriteComparison("gpt3-1b on p3.16xlarge:24", {{"model", "gpt3-1b"}}, {b, a});
  CHECK(store.ComparisonRuns(id) == std::vector<int64_t>{b, a});
  CHECK_THROWS_WITH(store.WriteComparison("x", {}, {a, 77}), db.str() + ": no run 77");
  // The failed comparison left nothing: still one comparison.
  CHECK(Count(store, "comparisons") == 1);
  CHECK_THROWS_WITH(store.ComparisonRuns(5), db.str() + ": no comparison 5");
  // Deleting a run removes its metrics, ops and comparison links (ON DELETE CASCADE).
  store.Query("DELETE FROM runs WHERE id = " + std::to_string(a));
  CHECK(store.ComparisonRuns(id) == std::vector<int64_t>{b});
  CHECK(Count(store, "metrics") == 3);
}

TEST_CASE("Query returns typed values and reports bad SQL with SQLite's message") {
  TempPath db("query.db");
  ResultStore store = ResultStore::OpenOrCreate(db.str());
  store.WriteRun(SampleRun(), SampleTrace().rows);
  QueryResult q = store.Query(
      "SELECT r.strategy, m.value, r.dp, NULL AS missing FROM runs r JOIN metrics m "
      "ON m.run_id = r.id WHERE m.name = 'iteration_time_s'");
  CHECK(q.columns == std::vector<std::string>{"strategy", "value", "dp", "missing"});
  REQUIRE(q.rows.size() == 1);
  CHECK(std::get<std::string>(q.rows[0][0]) == "terapipe");
  CHECK(std::get<double>(q.rows[0][1]) == 1.328);
  CHECK(std::get<int64_t>(q.rows[0][2]) == 2);
  CHECK(std::holds_alternative<std::monostate>(q.rows[0][3]));
  // Query output in CSV and JSON.
  CHECK(FormatQueryCsv(q) == "strategy,value,dp,missing\nterapipe,1.328,2,\n");
  CHECK(FormatQueryJson(q) ==
        "[\n  {\n    \"strategy\": \"terapipe\",\n    \"value\": 1.328,\n    \"dp\": 2,\n"
        "    \"missing\": null\n  }\n]\n");
  CHECK_THROWS_WITH(store.Query("SELEC 1"), db.str() + ": SQL: near \"SELEC\": syntax error");
  CHECK_THROWS_WITH(store.Query("SELECT * FROM nope"), db.str() + ": SQL: no such table: nope");
  CHECK_THROWS_WITH(store.Query("SELECT 1; SELECT 2"),
                    Catch::Contains("only one SQL statement at a time"));
}

TEST_CASE("The same runs give byte-identical query output") {
  TempPath db1("same1.db");
  TempPath db2("same2.db");
  std::string out[2];
  const std::string* paths[2] = {&db1.str(), &db2.str()};
  for (int i = 0; i < 2; ++i) {
    ResultStore store = ResultStore::OpenOrCreate(*paths[i]);
    Trace trace = SampleTrace();
    if (i == 1) std::reverse(trace.rows.begin(), trace.rows.end());
    RunRecord r = SampleRun();
    r.host = "h";
    store.WriteRun(r, trace.rows);
    // Timestamps differ between runs; everything else is the same.
    out[i] = FormatQueryCsv(store.Query(
                 "SELECT id, kind, model, config_json, seed, host FROM runs ORDER BY id")) +
             FormatQueryCsv(store.Query("SELECT * FROM metrics ORDER BY run_id, name")) +
             // Every column of ops but seq, which is the order written (reversed in store 2).
             FormatQueryCsv(store.Query(
                 "SELECT run_id, iteration, key, kind, device, stream, start_ns, end_ns, bytes, "
                 "flops FROM ops ORDER BY run_id, start_ns, device, stream, key"));
  }
  CHECK(out[0] == out[1]);
}

}  // namespace
}  // namespace terasim

// The store refuses what it must not do: adopt a foreign SQLite file, write through a
// read-only connection, run away with a query; and the trace readers refuse out-of-range
// numbers as input errors (never internal ones).
#include <unistd.h>

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "models/errors.h"
#include "tests/traces/sample_trace.h"
#include "traces/chrome_trace.h"
#include "traces/result_store.h"
#include "traces/sqlite_handle.h"
#include "traces/trace_csv.h"

namespace terasim {
namespace {

using testing::SampleTrace;
using testing::TempPath;

int64_t WriteSampleRun(ResultStore& store) {
  RunRecord r;
  r.model = "gpt3-1b";
  r.cluster = "p3.16xlarge:1";
  r.strategy = "gpipe";
  r.metrics = {{"iteration_time_s", 1.5}};
  return store.WriteRun(r, SampleTrace().rows);
}

TEST_CASE("OpenOrCreate refuses a SQLite file with tables of its own and leaves it as it was") {
  TempPath db("foreign.db");
  {
    Database foreign = Database::Open(db.str(), Database::Mode::kCreate);
    foreign.Exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)");
  }
  CHECK_THROWS_WITH(ResultStore::OpenOrCreate(db.str()),
                    Catch::Contains("has tables of its own (e.g. 'notes')") &&
                        Catch::Contains("not a terasim results store"));
  Database check = Database::Open(db.str(), Database::Mode::kExisting);
  // Not switched to WAL, no terasim tables, still version 0.
  Statement mode = check.Prepare("PRAGMA journal_mode");
  REQUIRE(mode.Step());
  CHECK(mode.Text(0) == "delete");
  CHECK(check.PragmaInt("user_version") == 0);
  Statement tables = check.Prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'");
  REQUIRE(tables.Step());
  CHECK(tables.Int(0) == 1);  // notes only
}

TEST_CASE("An empty SQLite file becomes a store") {
  TempPath db("empty.db");
  { Database::Open(db.str(), Database::Mode::kCreate); }
  ResultStore store = ResultStore::OpenOrCreate(db.str());
  CHECK(store.SchemaVersion() >= 1);
}

TEST_CASE("A store opened read-only reads, and refuses every statement that writes") {
  TempPath db("readonly.db");
  {
    ResultStore store = ResultStore::OpenOrCreate(db.str());
    WriteSampleRun(store);
  }
  ResultStore store = ResultStore::OpenReadOnly(db.str());
  CHECK(store.ListRuns().size() == 1);
  CHECK(std::get<int64_t>(store.Query("SELECT count(*) FROM runs").rows[0][0]) == 1);
  CHECK(store.Query("PRAGMA table_info(runs)").rows.size() > 5);
  TempPath copy("vacuum-copy.db");
  for (const std::string& sql :
       {std::string("DELETE FROM runs"), std::string("DROP TABLE ops"),
        std::string("PRAGMA user_version = 0"), std::string("PRAGMA query_only = 0"),
        "ATTACH '" + copy.str() + "' AS other", "VACUUM INTO '" + copy.str() + "'"}) {
    INFO(sql);
    CHECK_THROWS_WITH(store.Query(sql), Catch::StartsWith(db.str() + ": SQL: "));
  }
  CHECK_FALSE(std::filesystem::exists(copy.str()));
  ResultStore again = ResultStore::OpenExisting(db.str());
  CHECK(again.ListRuns().size() == 1);
  CHECK(again.SchemaVersion() >= 1);
}

TEST_CASE("db query's step limit stops a runaway statement with an error naming the limit") {
  TempPath db("runaway.db");
  { ResultStore::OpenOrCreate(db.str()); }
  ResultStore store = ResultStore::OpenReadOnly(db.str(), /*query_max_steps=*/100000,
                                                /*query_max_seconds=*/60);
  CHECK_THROWS_WITH(
      store.Query("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
                  "SELECT count(*) FROM n"),
      Catch::Contains("stopped at the query limit") && Catch::Contains("kQueryMaxSteps"));
}

TEST_CASE("A store that cannot be written is still readable, and the error says why") {
  if (geteuid() == 0) {
    WARN("skipped: root writes through file permissions");
    return;
  }
  TempPath db("nowrite.db");
  {
    ResultStore store = ResultStore::OpenOrCreate(db.str());
    WriteSampleRun(store);
  }
  std::filesystem::permissions(db.str(), std::filesystem::perms::owner_read);
  CHECK(ResultStore::OpenReadOnly(db.str()).ListRuns().size() == 1);
  CHECK_THROWS_WITH(ResultStore::OpenOrCreate(db.str()),
                    Catch::Contains("read-only") && !Catch::Contains("not a terasim"));
  std::filesystem::permissions(db.str(), std::filesystem::perms::owner_all);
}

TEST_CASE("ReadRunTrace refuses an op that ends before it starts as bad input") {
  TempPath db("backwards.db");
  ResultStore store = ResultStore::OpenOrCreate(db.str());
  const int64_t run = WriteSampleRun(store);
  store.Query("UPDATE ops SET end_ns = start_ns - 5 WHERE seq = 0");
  CHECK_THROWS_AS(store.ReadRunTrace(run), InputError);
  CHECK_THROWS_WITH(store.ReadRunTrace(run), Catch::Contains("is before start_ns"));
}

TEST_CASE("The Chrome trace reader refuses a pid beyond the device limit and huge durations") {
  const std::string head = R"({"traceEvents": [{"ph": "X", "name": "F.s0.m0", "cat": "FWD", )";
  // pid 2^32: once cut to 32 bits it would read as device 0.
  CHECK_THROWS_WITH(
      ReadChromeTrace(head + R"("pid": 4294967296, "tid": 0, "ts": 0, "dur": 5}]})", "t.json"),
      Catch::Contains("t.json: traceEvents[0]: pid: 4294967296 exceeds the limit") &&
          Catch::Contains("kMaxDevices"));
  // 1e16 us = 1e19 ns: beyond int64 nanoseconds; refused, not clamped.
  CHECK_THROWS_WITH(
      ReadChromeTrace(head + R"("pid": 0, "tid": 0, "ts": 0, "dur": 1e16}]})", "t.json"),
      Catch::Contains("t.json: traceEvents[0]: dur: 1e+16 us exceeds the limit") &&
          Catch::Contains("kMaxDurationNs"));
  CHECK_THROWS_AS(ReadChromeTrace(head + R"("pid": 0, "tid": 0, "ts": 0, "dur": -1}]})", "t.json"),
                  InputError);
}

TEST_CASE("The trace CSV reader refuses a device or a time beyond the limits") {
  const std::string header = "run,iteration,key,kind,device,stream,start_ns,end_ns,bytes,flops\n";
  // device 2^32 + 1 would read as 1 once cut to int.
  CHECK_THROWS_WITH(ReadTraceCsv(header + "r,0,F,FWD,4294967297,c,0,10,0,0\n", "t.csv"),
                    "t.csv:2: device: must be <= 1048575 (got 4294967297)");
  CHECK_THROWS_WITH(ReadTraceCsv(header + "r,0,F,FWD,0,c,0,99999999999999999999,0,0\n", "t.csv"),
                    "t.csv:2: end_ns: '99999999999999999999' is out of range");
  CHECK(ReadTraceCsv(header + "r,0,F,FWD,3,c,0,10,0,0\n", "t.csv").rows.at(0).device == 3);
}

}  // namespace
}  // namespace terasim

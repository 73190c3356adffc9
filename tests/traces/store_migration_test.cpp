// Schema migrations of the results store: a store written by a previous version opens, is
// migrated in place, and reads with one meaning per column and one config layout (v1 -> v2),
// with its ops in the compact encoding behind the same `ops` columns (v2 -> v3).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "tests/traces/sample_trace.h"
#include "traces/result_store.h"
#include "traces/sqlite_handle.h"
#include "traces/store_schema.h"

namespace terasim {
namespace {

using testing::TempPath;

// A v1 store as the previous terasim wrote it: migration 1 only, and three runs in the v1
// layouts of compare (TeraPipe: microbatches held the 4 (micro-batch, slice) units), sweep
// (flat config) and simulate (a dump of its flags).
void WriteV1Store(const std::string& path) {
  Database db = Database::Open(path, Database::Mode::kCreate);
  db.Exec(StoreMigrations().front().sql);
  db.Exec("PRAGMA user_version = 1");
  const std::string compare_config =
      R"({"batch":2,"cluster":"p3.16xlarge:2","cost_model":"roofline","families":"all",)"
      R"("granularity":8,"model":"gpt3-1b","network":"flow","schedule":{"boundary":"broadcast",)"
      R"("dp":1,"microbatch_size":1,"microbatches":1,"optimizer":true,"order":"flush","pp":4,)"
      R"("slicing":"1:[512,512]x2","strategy":"terapipe","tp":4,"virtual_stages":1}})";
  const std::string sweep_config =
      R"({"batch":8,"boundary":"p2p","calib":"","cluster":"p3.16xlarge:2","dp":2,)"
      R"("microbatch_size":1,"model":"gpt3-1b","network":"flow","nic_gbps":0.0,)"
      R"("nic_latency_us":-1.0,"order":"flush","pp":4,"slices":4,"strategy":"terapipe",)"
      R"("tp":2,"virtual_stages":1})";
  const std::string simulate_config =
      R"({"cluster":"p3.16xlarge:1","dp":1,"microbatch-size":2,"microbatches":4,)"
      R"("model":"gpt3-1b","pp":4,"strategy":"1f1b","tp":2})";
  db.Exec(fmt::format(
      "INSERT INTO runs (kind, created_at, model, cluster, strategy, dp, pp, tp, microbatches, "
      "config_json, config_key, label) VALUES "
      "('sim', '2026-01-01T00:00:00Z', 'gpt3-1b', 'p3.16xlarge:2', 'terapipe', 1, 4, 4, 4, "
      "'{0}', '{0}', 'terasim compare'), "
      "('sim', '2026-01-01T00:00:00Z', 'gpt3-1b', 'p3.16xlarge:2', 'terapipe', 2, 4, 2, 4, "
      "'{1}', 'sweep {1}', 'sweep'), "
      "('sim', '2026-01-01T00:00:00Z', 'gpt3-1b', 'p3.16xlarge:1', '1f1b', 1, 4, 2, 4, "
      "'{2}', '{2}', 'generated')",
      compare_config, sweep_config, simulate_config));
}

TEST_CASE("A v1 store is migrated to v2 when opened: one meaning per column, one config layout") {
  TempPath path("migrate-v1.db");
  WriteV1Store(path.str());
  ResultStore store = ResultStore::OpenExisting(path.str());
  CHECK(store.SchemaVersion() == StoreSchemaVersion());

  // compare's TeraPipe row: the slicing "1:[512,512]x2" is 2 micro-batches of 1 sequence, each
  // cut into 2 slices: microbatches 2 (per replica), slices 4 (what v1 stored as
  // microbatches).
  const StoredRun compare = store.ReadRun(1);
  CHECK(compare.record.microbatches == 2);
  CHECK(compare.record.slices == 4);
  const nlohmann::json& c = compare.record.config;
  CHECK(c.at("command") == "compare");
  CHECK(c.at("model") == "gpt3-1b");
  CHECK(c.at("batch") == 2);
  CHECK(c.at("schedule").at("microbatches") == 2);
  CHECK(c.at("schedule").at("strategy") == "terapipe");
  CHECK(c.at("options").at("granularity") == 8);
  CHECK(c.at("options").at("families") == "all");

  // sweep's row: batch 8 / (dp 2 x micro-batch size 1) = 4 micro-batches per replica, each in 4
  // uniform slices: 16 units; config_key untouched (a resumed sweep still finds the point).
  const StoredRun sweep = store.ReadRun(2);
  CHECK(sweep.record.microbatches == 4);
  CHECK(sweep.record.slices == 16);
  CHECK(sweep.record.config.at("command") == "sweep");
  CHECK(sweep.record.config.at("schedule").at("microbatches") == 4);
  CHECK(sweep.record.config.at("schedule").at("slices") == 4);
  CHECK(sweep.record.config.at("options").at("nic_gbps") == 0.0);
  CHECK(sweep.record.config_key.rfind("sweep {\"batch\":8", 0) == 0);
  CHECK(store.FindRunByConfigKey(sweep.record.config_key) == 2);

  // simulate's flag dump: the dashed names move into "schedule" with underscores.
  const StoredRun simulate = store.ReadRun(3);
  CHECK(simulate.record.config.at("command") == "simulate");
  CHECK(simulate.record.config.at("schedule").at("microbatch_size") == 2);
  CHECK(simulate.record.config.at("schedule").at("microbatches") == 4);
  CHECK(simulate.record.slices == 4);

  // The same top-level keys in every row.
  for (const StoredRun& run : store.ListRuns()) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : run.record.config.items()) keys.push_back(k);
    CHECK(keys == std::vector<std::string>{"batch", "cluster", "command", "cost_model", "model",
                                           "network", "options", "schedule"});
  }
  // Opening again changes nothing.
  ResultStore again = ResultStore::OpenExisting(path.str());
  CHECK(again.ReadRun(1).record.config == c);
}

TEST_CASE("A run written at v2 stores slices, defaulting to its micro-batches") {
  TempPath path("v2-slices.db");
  ResultStore store = ResultStore::OpenOrCreate(path.str());
  RunRecord r;
  r.microbatches = 3;
  const int64_t plain = store.WriteRun(r, {});
  r.slices = 12;
  const int64_t sliced = store.WriteRun(r, {});
  CHECK(store.ReadRun(plain).record.slices == 3);
  CHECK(store.ReadRun(sliced).record.slices == 12);
}

TEST_CASE("Op keys split into a pattern and up to four numbers that print back the same") {
  const KeyPattern k = SplitKeyPattern("F.s3.m12.t0-704.r1");
  // Five numbers: the first four become bytes 1..4, the fifth stays in the pattern.
  CHECK(k.pattern == std::string("F.s\x01.m\x02.t\x03-\x04.r1"));
  CHECK(k.numbers == std::vector<int64_t>{3, 12, 0, 704});
  // A leading zero would not print back: "007" stays text and takes no slot.
  const KeyPattern z = SplitKeyPattern("x007.y5");
  CHECK(z.pattern == std::string("x007.y\x01"));
  CHECK(z.numbers == std::vector<int64_t>{5});
  // A key holding a placeholder byte is stored whole.
  // ("a\x02b3" as one literal would be one out-of-range hex escape, not \x02 then "b3".)
  const std::string key = std::string("a\x02") + "b3";
  const KeyPattern raw = SplitKeyPattern(key);
  CHECK(raw.pattern == key);
  CHECK(raw.numbers.empty());
}

TEST_CASE("A v2 store's ops move to the compact v3 encoding, read back the same") {
  TempPath path("migrate-v2.db");
  const Trace sample = testing::SampleTrace();
  std::vector<TraceRow> rows = sample.rows;
  // Keys the encoding must keep as they are: leading zeros, many numbers, a placeholder byte,
  // no number at all, a 19-digit number.
  const std::vector<std::string> odd = {"x007.y5", "F.s3.m12.t0-704.r1.l2", std::string("a\x01b"),
                                        "OPT", "n1234567890123456789"};
  for (size_t i = 0; i < odd.size(); ++i) {
    TraceRow r = rows[i % rows.size()];
    r.key = odd[i];
    rows.push_back(r);
  }
  {
    Database db = Database::Open(path.str(), Database::Mode::kCreate);
    db.Exec(StoreMigrations()[0].sql);
    db.Exec(StoreMigrations()[1].sql);
    db.Exec("PRAGMA user_version = 2");
    db.Exec(
        "INSERT INTO runs (kind, created_at, model) VALUES ('sim', '2026-01-01T00:00:00Z', 'a'), "
        "('sim', '2026-01-01T00:00:00Z', 'b')");
    Statement insert = db.Prepare(
        "INSERT INTO ops (run_id, iteration, key, kind, device, stream, start_ns, end_ns, bytes, "
        "flops) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    // Run 2's rows interleave with run 1's in rowid order: each run keeps its own order.
    for (size_t i = 0; i < rows.size(); ++i) {
      for (int64_t run : {int64_t{1}, int64_t{2}}) {
        const TraceRow& r = run == 1 ? rows[i] : rows[rows.size() - 1 - i];
        insert.Reset();
        insert.Bind(1, run)
            .Bind(2, int64_t{r.iteration})
            .Bind(3, r.key)
            .Bind(4, std::string(OpKindName(r.kind)))
            .Bind(5, int64_t{r.device})
            .Bind(6, r.stream)
            .Bind(7, r.start_ns)
            .Bind(8, r.end_ns)
            .Bind(9, r.bytes)
            .Bind(10, r.flops);
        insert.Run();
      }
    }
  }
  ResultStore store = ResultStore::OpenExisting(path.str());
  CHECK(store.SchemaVersion() == 3);
  std::vector<TraceRow> reversed(rows.rbegin(), rows.rend());
  for (int64_t run : {int64_t{1}, int64_t{2}}) {
    const Trace trace = store.ReadRunTrace(run);
    const std::vector<TraceRow>& expected = run == 1 ? rows : reversed;
    REQUIRE(trace.rows.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      CHECK(trace.rows[i].key == expected[i].key);
      CHECK(trace.rows[i].kind == expected[i].kind);
      CHECK(trace.rows[i].device == expected[i].device);
      CHECK(trace.rows[i].stream == expected[i].stream);
      CHECK(trace.rows[i].start_ns == expected[i].start_ns);
      CHECK(trace.rows[i].end_ns == expected[i].end_ns);
      CHECK(trace.rows[i].bytes == expected[i].bytes);
      CHECK(trace.rows[i].flops == expected[i].flops);
    }
  }
  // The v2 table is gone; SQL on `ops` sees the v2 columns (plus seq), decoded.
  CHECK(store.Query("SELECT count(*) FROM sqlite_master WHERE name = 'ops_v2'").rows[0][0] ==
        SqlValue{int64_t{0}});
  CHECK(store.Query("SELECT key FROM ops WHERE run_id = 1 AND key = 'F.s3.m12.t0-704.r1.l2'")
            .rows.size() == 1);
  CHECK(store.Query("SELECT count(*) FROM ops WHERE run_id = 2").rows[0][0] ==
        SqlValue{static_cast<int64_t>(rows.size())});
  // An update through the view reaches the stored row; a key cannot be changed.
  store.Query("UPDATE ops SET end_ns = start_ns + 7 WHERE run_id = 1 AND seq = 0");
  CHECK(store.ReadRunTrace(1).rows[0].end_ns == rows[0].start_ns + 7);
  CHECK_THROWS_WITH(store.Query("UPDATE ops SET key = 'z' WHERE run_id = 1 AND seq = 0"),
                    Catch::Contains("cannot be changed"));
  // Deleting a run deletes its rows.
  store.Query("DELETE FROM runs WHERE id = 2");
  CHECK(store.Query("SELECT count(*) FROM op_rows WHERE run_id = 2").rows[0][0] ==
        SqlValue{int64_t{0}});
}

}  // namespace
}  // namespace terasim

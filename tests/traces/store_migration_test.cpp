// Schema migration v1 -> v2 of the results store: a store written by the previous version
// opens, is migrated in place, and reads with one meaning per column and one config layout.
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
  CHECK(store.SchemaVersion() == 2);
  CHECK(StoreSchemaVersion() == 2);

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

}  // namespace
}  // namespace terasim

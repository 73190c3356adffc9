#include "traces/store_schema.h"

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "schedule/slicing_spec.h"
#include "traces/run_config.h"
#include "traces/sqlite_handle.h"

namespace terasim {
namespace {

constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE runs (
  id            INTEGER PRIMARY KEY,
  kind          TEXT NOT NULL CHECK (kind IN ('sim', 'exec')),
  created_at    TEXT NOT NULL,               -- UTC, ISO 8601
  model         TEXT NOT NULL DEFAULT '',
  cluster       TEXT NOT NULL DEFAULT '',    -- e.g. 'p3.16xlarge:48'
  strategy      TEXT NOT NULL DEFAULT '',    -- e.g. 'terapipe', 'gpipe', '1f1b'
  dp            INTEGER NOT NULL DEFAULT 1,
  pp            INTEGER NOT NULL DEFAULT 1,
  tp            INTEGER NOT NULL DEFAULT 1,
  microbatches  INTEGER NOT NULL DEFAULT 1,
  slicing       TEXT NOT NULL DEFAULT '',    -- token slicing, e.g. '[704,688,656]'
  config_json   TEXT NOT NULL DEFAULT '{}',  -- the full configuration
  config_key    TEXT NOT NULL DEFAULT '',    -- what a resumable sweep looks up
  code_version  TEXT NOT NULL DEFAULT '',    -- git describe of the binary
  seed          INTEGER NOT NULL DEFAULT 0,
  host          TEXT NOT NULL DEFAULT '',
  label         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_model ON runs (model, cluster, strategy);
CREATE INDEX runs_by_cluster ON runs (cluster);
CREATE INDEX runs_by_strategy ON runs (strategy);
CREATE INDEX runs_by_config_key ON runs (config_key);

CREATE TABLE metrics (
  run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  name    TEXT NOT NULL,
  value   REAL,
  PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
CREATE INDEX metrics_by_name ON metrics (name, value);

CREATE TABLE ops (
  run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  iteration  INTEGER NOT NULL,
  key        TEXT NOT NULL,
  kind       TEXT NOT NULL,
  device     INTEGER NOT NULL,
  stream     TEXT NOT NULL,
  start_ns   INTEGER NOT NULL,
  end_ns     INTEGER NOT NULL,
  bytes      INTEGER NOT NULL DEFAULT 0,
  flops      REAL NOT NULL DEFAULT 0
);
CREATE INDEX ops_by_run ON ops (run_id, iteration, device);

CREATE TABLE comparisons (
  id           INTEGER PRIMARY KEY,
  name         TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  config_json  TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE comparison_runs (
  comparison_id  INTEGER NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
  position       INTEGER NOT NULL,  -- order within the comparison (0 first)
  run_id         INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  PRIMARY KEY (comparison_id, position)
);
CREATE INDEX comparison_runs_by_run ON comparison_runs (run_id);
)sql";

// v2: one meaning per column and one layout of config_json across commands.
//   microbatches  micro-batches per data-parallel replica per iteration (v1 compare rows held
//                 TeraPipe's (micro-batch, slice) units here)
//   slices        pipeline units per replica per iteration: (micro-batch, token slice) pairs,
//                 = microbatches when no sequence is cut
constexpr std::string_view kSchemaV2 = R"sql(
ALTER TABLE runs ADD COLUMN slices INTEGER NOT NULL DEFAULT 1;
UPDATE runs SET slices = microbatches;
)sql";

int IntOr(const nlohmann::json& j, const char* key, int fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int>() : fallback;
}

// A v1 configuration in the v2 layout (traces/run_config.h). v1 wrote three layouts: compare
// ({model, cluster, batch, network, cost_model, granularity, families, schedule: {...}}),
// sweep (flat: {model, cluster, batch, strategy, dp, pp, tp, microbatch_size, virtual_stages,
// slices, order, boundary, network, calib, nic_gbps, nic_latency_us}) and the flag dumps of
// simulate and validate. Known fields move to their v2 place; the rest go under "options".
nlohmann::json UpgradeConfigV1(const nlohmann::json& old, const std::string& label,
                               const std::string& config_key) {
  nlohmann::json rest = old.is_object() ? old : nlohmann::json::object();
  RunConfig c;
  c.command = config_key.rfind("sweep ", 0) == 0                          ? "sweep"
              : config_key.rfind("validate ", 0) == 0                     ? "validate"
              : label == "terasim compare"                                ? "compare"
              : rest.contains("schedule") && rest["schedule"].is_object() ? "compare"
                                                                          : "simulate";
  auto take_string = [&](const char* key) {
    std::string value;
    auto it = rest.find(key);
    if (it != rest.end() && it->is_string()) {
      value = it->get<std::string>();
      rest.erase(it);
    }
    return value;
  };
  c.model = take_string("model");
  c.cluster = take_string("cluster");
  c.network = take_string("network");
  c.cost_model = take_string("cost_model");
  c.batch = IntOr(rest, "batch", 0);
  rest.erase("batch");
  if (rest.contains("schedule") && rest["schedule"].is_object()) {
    c.schedule = rest["schedule"];
    rest.erase("schedule");
    // v1 compare: TeraPipe's micro-batches are the slicing's groups.
    const std::string slicing = c.schedule.value("slicing", std::string());
    if (!slicing.empty()) {
      int microbatches = 0;
      for (const MicrobatchSlicing& g : ParseSlicingSpec(slicing)) microbatches += g.count;
      c.schedule["microbatches"] = microbatches;
      c.schedule["microbatch_size"] = 0;
    }
    if (!c.schedule.contains("slices")) c.schedule["slices"] = 0;
  } else {
    for (const char* key : {"strategy", "dp", "pp", "tp", "microbatches", "microbatch_size",
                            "virtual_stages", "slicing", "slices", "order", "boundary"}) {
      // simulate's flag dump spells them with dashes.
      std::string dashed = key;
      std::replace(dashed.begin(), dashed.end(), '_', '-');
      for (const std::string& name : {std::string(key), dashed}) {
        auto it = rest.find(name);
        if (it == rest.end()) continue;
        c.schedule[key] = *it;
        rest.erase(it);
        break;
      }
    }
    if (c.command == "sweep" && c.batch > 0) {
      const int dp = IntOr(c.schedule, "dp", 1), size = IntOr(c.schedule, "microbatch_size", 1);
      if (dp > 0 && size > 0) c.schedule["microbatches"] = c.batch / (dp * size);
    }
  }
  c.options = rest;
  nlohmann::json out = RunConfigJson(c);
  return out;
}

// Rewrites each run's config_json into the v2 layout and fixes v1 compare rows, whose
// `microbatches` held TeraPipe's pipeline units: those move to `slices`, and `microbatches`
// becomes the slicing's micro-batch count. config_key is left as written, so a resumable
// sweep still finds its v1 points.
void RewriteV2(Database& db) {
  struct Row {
    int64_t id;
    std::string config, label, key;
    int microbatches;
  };
  std::vector<Row> rows;
  {
    Statement s =
        db.Prepare("SELECT id, config_json, label, config_key, microbatches FROM runs ORDER BY id");
    while (s.Step()) {
      rows.push_back({s.Int(0), s.Text(1), s.Text(2), s.Text(3), static_cast<int>(s.Int(4))});
    }
  }
  Statement update =
      db.Prepare("UPDATE runs SET config_json = ?1, microbatches = ?2, slices = ?3 WHERE id = ?4");
  for (const Row& r : rows) {
    nlohmann::json old = nlohmann::json::parse(r.config, nullptr, /*allow_exceptions=*/false);
    if (old.is_discarded()) continue;  // left for the reader to report
    nlohmann::json config = UpgradeConfigV1(old, r.label, r.key);
    int microbatches = r.microbatches;
    int slices = r.microbatches;
    if (config["command"] == "compare" && config["schedule"].value("strategy", "") == "terapipe") {
      microbatches = IntOr(config["schedule"], "microbatches", r.microbatches);
    } else {
      const int uniform = IntOr(config["schedule"], "slices", 0);
      if (uniform > 1) slices = microbatches * uniform;
    }
    update.Bind(1, config.dump())
        .Bind(2, int64_t{microbatches})
        .Bind(3, int64_t{slices})
        .Bind(4, r.id);
    update.Run();
  }
}

}  // namespace

const std::vector<StoreMigration>& StoreMigrations() {
  static const std::vector<StoreMigration> kMigrations = {{1, kSchemaV1, nullptr},
                                                          {2, kSchemaV2, &RewriteV2}};
  return kMigrations;
}

int StoreSchemaVersion() { return StoreMigrations().back().version; }

}  // namespace terasim

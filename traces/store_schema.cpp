#include "traces/store_schema.h"

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

}  // namespace

const std::vector<StoreMigration>& StoreMigrations() {
  static const std::vector<StoreMigration> kMigrations = {{1, kSchemaV1}};
  return kMigrations;
}

int StoreSchemaVersion() { return StoreMigrations().back().version; }

}  // namespace terasim

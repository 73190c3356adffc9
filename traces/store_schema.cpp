#include "traces/store_schema.h"

#include <algorithm>
#include <cctype>
#include <charconv>
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

// v3: ops in a compact form (a default compare's store went from 2.99 MB to under 2 MB). The
// rows move to `op_rows`: strings (kinds, streams, key patterns) are interned in `op_names`,
// a key is stored as its pattern plus up to four numbers, the end as a duration, rows clustered
// by (run_id, seq) with no separate index. `ops` becomes a view with the v2 columns (plus
// `seq`) that decodes them; UPDATE and DELETE through it reach op_rows.
constexpr std::string_view kSchemaV3 = R"sql(
ALTER TABLE ops RENAME TO ops_v2;
CREATE TABLE op_names (
  id    INTEGER PRIMARY KEY,
  name  TEXT NOT NULL UNIQUE
);
CREATE TABLE op_rows (
  run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq          INTEGER NOT NULL,  -- position in the run's rows as written (0 first)
  iteration    INTEGER NOT NULL,
  pattern      INTEGER NOT NULL REFERENCES op_names (id),
  n1           INTEGER,
  n2           INTEGER,
  n3           INTEGER,
  n4           INTEGER,
  kind         INTEGER NOT NULL REFERENCES op_names (id),
  device       INTEGER NOT NULL,
  stream       INTEGER NOT NULL REFERENCES op_names (id),
  start_ns     INTEGER NOT NULL,
  duration_ns  INTEGER NOT NULL,
  bytes        INTEGER NOT NULL DEFAULT 0,
  flops        REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE VIEW ops AS
SELECT o.run_id AS run_id, o.seq AS seq, o.iteration AS iteration,
       replace(replace(replace(replace(p.name, char(1), ifnull(o.n1, char(1))),
                                       char(2), ifnull(o.n2, char(2))),
                       char(3), ifnull(o.n3, char(3))),
               char(4), ifnull(o.n4, char(4))) AS key,
       k.name AS kind, o.device AS device, s.name AS stream, o.start_ns AS start_ns,
       o.start_ns + o.duration_ns AS end_ns, o.bytes AS bytes, o.flops AS flops
FROM op_rows o
JOIN op_names p ON p.id = o.pattern
JOIN op_names k ON k.id = o.kind
JOIN op_names s ON s.id = o.stream;
CREATE TRIGGER ops_update INSTEAD OF UPDATE ON ops BEGIN
  SELECT raise(ABORT, 'ops: run_id, seq, key, kind and stream cannot be changed')
  WHERE NEW.run_id IS NOT OLD.run_id OR NEW.seq IS NOT OLD.seq OR NEW.key IS NOT OLD.key
     OR NEW.kind IS NOT OLD.kind OR NEW.stream IS NOT OLD.stream;
  UPDATE op_rows SET iteration = NEW.iteration, device = NEW.device, start_ns = NEW.start_ns,
                     duration_ns = NEW.end_ns - NEW.start_ns, bytes = NEW.bytes,
                     flops = NEW.flops
  WHERE run_id = OLD.run_id AND seq = OLD.seq;
END;
CREATE TRIGGER ops_delete INSTEAD OF DELETE ON ops BEGIN
  DELETE FROM op_rows WHERE run_id = OLD.run_id AND seq = OLD.seq;
END;
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

// Moves the v2 rows (ops_v2) into op_rows, in their rowid order, and drops ops_v2.
void RewriteV3(Database& db) {
  {
    OpRowWriter writer(db);
    Statement s = db.Prepare(
        "SELECT run_id, iteration, key, kind, device, stream, start_ns, end_ns, bytes, flops "
        "FROM ops_v2 ORDER BY run_id, rowid");
    int64_t run = -1, seq = 0;
    while (s.Step()) {
      if (s.Int(0) != run) {
        run = s.Int(0);
        seq = 0;
      }
      writer.Write(run, seq++, s.Int(1), s.Text(2), s.Text(3), s.Int(4), s.Text(5), s.Int(6),
                   s.Int(7), s.Int(8), s.Real(9));
    }
  }
  db.Exec("DROP TABLE ops_v2");
}

}  // namespace

KeyPattern SplitKeyPattern(std::string_view key) {
  KeyPattern out;
  // A key that holds a placeholder byte itself is stored whole.
  if (key.find_first_of(std::string_view("\x01\x02\x03\x04", 4)) != std::string_view::npos) {
    out.pattern = key;
    return out;
  }
  out.pattern.reserve(key.size());
  size_t i = 0;
  while (i < key.size()) {
    if (!std::isdigit(static_cast<unsigned char>(key[i]))) {
      // A run of other characters goes in whole.
      size_t end = i + 1;
      while (end < key.size() && !std::isdigit(static_cast<unsigned char>(key[end]))) ++end;
      out.pattern.append(key.data() + i, end - i);
      i = end;
      continue;
    }
    size_t end = i;
    while (end < key.size() && std::isdigit(static_cast<unsigned char>(key[end]))) ++end;
    const std::string_view run = key.substr(i, end - i);
    // Only numbers that print back the same (no leading zero, fits in int64).
    const bool canonical = run.size() <= 18 && (run.size() == 1 || run[0] != '0');
    if (canonical && out.numbers.size() < kKeyPatternNumbers) {
      int64_t value = 0;
      std::from_chars(run.data(), run.data() + run.size(), value);
      out.numbers.push_back(value);
      out.pattern += static_cast<char>(out.numbers.size());  // placeholder byte 1..4
    } else {
      out.pattern += run;
    }
    i = end;
  }
  return out;
}

OpRowWriter::OpRowWriter(Database& db)
    : find_name_(db.Prepare("SELECT id FROM op_names WHERE name = ?1")),
      add_name_(db.Prepare("INSERT INTO op_names (name) VALUES (?1)")),
      insert_(db.Prepare(
          "INSERT INTO op_rows (run_id, seq, iteration, pattern, n1, n2, n3, n4, kind, device, "
          "stream, start_ns, duration_ns, bytes, flops) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)")),
      db_(db) {}

int64_t OpRowWriter::NameId(std::string_view name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  find_name_.Reset();
  find_name_.Bind(1, name);
  int64_t id = 0;
  if (find_name_.Step()) {
    id = find_name_.Int(0);
  } else {
    add_name_.Reset();
    add_name_.Bind(1, name);
    add_name_.Run();
    id = db_.LastInsertRowId();
  }
  find_name_.Reset();
  ids_.emplace(name, id);
  return id;
}

void OpRowWriter::Write(int64_t run_id, int64_t seq, int64_t iteration, std::string_view key,
                        std::string_view kind, int64_t device, std::string_view stream,
                        int64_t start_ns, int64_t end_ns, int64_t bytes, double flops) {
  const KeyPattern k = SplitKeyPattern(key);
  const int64_t pattern = NameId(k.pattern);
  const int64_t kind_id = NameId(kind);
  const int64_t stream_id = NameId(stream);
  insert_.Reset();
  insert_.Bind(1, run_id).Bind(2, seq).Bind(3, iteration).Bind(4, pattern);
  for (size_t n = 0; n < kKeyPatternNumbers; ++n) {
    if (n < k.numbers.size()) {
      insert_.Bind(5 + static_cast<int>(n), k.numbers[n]);
    } else {
      insert_.BindNull(5 + static_cast<int>(n));
    }
  }
  insert_.Bind(9, kind_id)
      .Bind(10, device)
      .Bind(11, stream_id)
      .Bind(12, start_ns)
      .Bind(13, end_ns - start_ns)
      .Bind(14, bytes)
      .Bind(15, flops);
  insert_.Run();
}

const std::vector<StoreMigration>& StoreMigrations() {
  static const std::vector<StoreMigration> kMigrations = {
      {1, kSchemaV1, nullptr}, {2, kSchemaV2, &RewriteV2}, {3, kSchemaV3, &RewriteV3}};
  return kMigrations;
}

int StoreSchemaVersion() { return StoreMigrations().back().version; }

}  // namespace terasim

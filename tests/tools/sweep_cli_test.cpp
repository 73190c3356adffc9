// `terasim sweep` end to end: a small grid stored, skipped on a second run, and resumed after
// the process is killed with SIGKILL part-way; and the message that carries a point's result
// to rank 0 under mpirun (tools/sweep_mpi.h; the mpirun cases are in sweep_mpi_test.cpp).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "models/errors.h"
#include "tests/tools/run_command.h"
#include "tests/tools/sweep_dir.h"
#include "tools/sweep_mpi.h"
#include "traces/result_store.h"

namespace terasim {
namespace {

// 2 batches x 3 strategies on one p3.16xlarge = 6 points, plus one strategy that needs more
// GPUs than the node has (left out of the grid) for each batch.
constexpr const char* kSpec = R"({
  "models": ["tiny"],
  "instances": ["p3.16xlarge"],
  "counts": [1],
  "batches": [4, 8],
  "strategies": [
    {"strategy": "gpipe", "pp": 2},
    {"strategy": "1f1b", "pp": 2, "tp": 2},
    {"strategy": "terapipe", "pp": 4, "slices": 2},
    {"strategy": "1f1b", "pp": 4, "tp": 4}
  ],
  "network": "analytic"
})";

// 5 batches x 4 strategies = 20 points, all on one p3.16xlarge.
constexpr const char* kTwentyPointSpec = R"({
  "models": ["tiny"],
  "instances": ["p3.16xlarge"],
  "counts": [1],
  "batches": [4, 8, 12, 16, 20],
  "strategies": [
    {"strategy": "gpipe", "pp": 2},
    {"strategy": "1f1b", "pp": 2, "tp": 2},
    {"strategy": "terapipe", "pp": 4, "slices": 2},
    {"strategy": "gpipe", "pp": 4}
  ],
  "network": "analytic"
})";

// `terasim sweep SPEC --db DB --jobs 2 --json EXTRA` in `d`; its JSON summary (null if none).
nlohmann::json RunSweep(const testing::SweepDir& d, const std::string& extra, int* status) {
  std::string out;
  *status = testing::RunCommand(std::string(TERASIM_BINARY) + " sweep " + d.spec + " --db " + d.db +
                                    " --jobs 2 --json " + extra + " 2>/dev/null",
                                &out);
  return out.empty() ? nlohmann::json() : nlohmann::json::parse(out);
}

TEST_CASE("terasim sweep stores every point once and skips them all on a second run",
          "[tools][sweep]") {
  const testing::SweepDir d("twice", kSpec);
  int status = 0;
  const nlohmann::json first = RunSweep(d, "", &status);
  REQUIRE(status == 0);
  // 2 batches x 4 strategies = 8 points; the tp=4 x pp=4 one needs 16 GPUs of 8: 2 left out.
  CHECK(first.at("points") == 6);
  CHECK(first.at("left_out") == 2);
  CHECK(first.at("stored") == 6);
  CHECK(first.at("skipped") == 0);
  const nlohmann::json second = RunSweep(d, "", &status);
  REQUIRE(status == 0);
  // Everything is in the store already.
  CHECK(second.at("stored") == 0);
  CHECK(second.at("skipped") == 6);
  CHECK(d.Count("SELECT count(*) FROM runs") == 6);
  CHECK(d.Count("SELECT count(DISTINCT config_key) FROM runs") == 6);
}

TEST_CASE("terasim sweep resumes after kill -9 with nothing lost or duplicated", "[tools][sweep]") {
  const testing::SweepDir d("killed", kTwentyPointSpec);
  int status = 0;
  RunSweep(d, "--kill-after 7", &status);
  // Killed by SIGKILL (9) right after its seventh result was committed.
  CHECK(status == 128 + 9);
  CHECK(d.Count("SELECT count(*) FROM runs") == 7);
  const nlohmann::json resumed = RunSweep(d, "", &status);
  REQUIRE(status == 0);
  // The 7 stored points are skipped, the other 13 run: exactly 20 runs, one per point.
  CHECK(resumed.at("points") == 20);
  CHECK(resumed.at("skipped") == 7);
  CHECK(resumed.at("stored") == 13);
  CHECK(d.Count("SELECT count(*) FROM runs") == 20);
  CHECK(d.Count("SELECT count(DISTINCT config_key) FROM runs") == 20);
  // Every stored run has its metrics; no per-op rows (a sweep's --store-ops is none by default).
  CHECK(d.Count("SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM metrics m WHERE "
                "m.run_id = r.id AND m.name = 'iteration_time_s')") == 0);
  CHECK(d.Count("SELECT count(*) FROM ops") == 0);
  // Every run's configuration has the one layout (traces/run_config.h): the command, the
  // schedule object and the sweep's own settings under options.
  CHECK(d.Count("SELECT count(*) FROM runs WHERE json_extract(config_json, '$.command') = 'sweep' "
                "AND json_extract(config_json, '$.schedule.strategy') = strategy "
                "AND json_extract(config_json, '$.options.nic_gbps') IS NOT NULL") == 20);
}

TEST_CASE("terasim sweep shards split the grid without overlap", "[tools][sweep]") {
  const testing::SweepDir d("shards", kSpec);
  int status = 0;
  const nlohmann::json a = RunSweep(d, "--shard 0/2", &status);
  REQUIRE(status == 0);
  const nlohmann::json b = RunSweep(d, "--shard 1/2", &status);
  REQUIRE(status == 0);
  // 6 points over 2 shards: 3 each, all stored once.
  CHECK(a.at("stored") == 3);
  CHECK(b.at("stored") == 3);
  CHECK(d.Count("SELECT count(DISTINCT config_key) FROM runs") == 6);
}

TEST_CASE("terasim sweep names a bad spec field", "[tools][sweep]") {
  const testing::SweepDir d("bad", kSpec);
  std::ofstream(d.spec) << R"({"models": ["tiny"], "instances": ["p3.16xlarge"], "counts": [1],
    "batches": [4], "strategies": [{"strategy": "gpipe", "pipes": 2}]})";
  std::string out;
  const int status = testing::RunCommand(
      std::string(TERASIM_BINARY) + " sweep " + d.spec + " --db " + d.db + " 2>&1", &out);
  // Exit 1 and the field's place.
  CHECK(status == 1);
  CHECK_THAT(out, Catch::Matchers::Contains("strategies[0]") && Catch::Matchers::Contains("pipes"));
}

TEST_CASE("a sweep result comes out of its MPI message as it went in", "[tools][sweep]") {
  cli::SweepResult sent;
  sent.job = 41;
  sent.rank = 2;
  RunRecord r;
  r.model = "tiny";
  r.cluster = "p3.16xlarge:1";
  r.strategy = "terapipe";
  r.dp = 2;
  r.pp = 4;
  r.tp = 1;
  r.microbatches = 3;
  r.slicing = "[64,64]";
  r.config = {{"batch", 8}, {"nic_gbps", 12.5}};
  r.config_key = "sweep {\"batch\":8}";
  r.seed = -7;
  r.label = "sweep spec.json (rank 2 of 3)";
  r.metrics = {{"iteration_time_s", 0.1 + 0.2}, {"odd", std::nan("")}};
  sent.record = r;
  TraceRow row;
  row.iteration = 1;
  row.key = "F.s0.m1.t0-64";
  row.kind = OpKind::kSend;
  row.device = 3;
  row.stream = "send";
  row.start_ns = 1234567890123;
  row.end_ns = 1234567890999;
  row.bytes = int64_t{1} << 40;
  row.flops = 1.0 / 3.0;
  sent.rows = {row, row};
  const cli::SweepResult got = cli::DecodeSweepResult(cli::EncodeSweepResult(sent));
  // Every field as sent, doubles to the last bit; an empty host becomes the sender's.
  CHECK(got.job == 41);
  CHECK(got.rank == 2);
  REQUIRE(got.record);
  const RunRecord& g = *got.record;
  CHECK(g.kind == "sim");
  CHECK(g.model == r.model);
  CHECK(g.cluster == r.cluster);
  CHECK(g.strategy == r.strategy);
  CHECK((g.dp == 2 && g.pp == 4 && g.tp == 1 && g.microbatches == 3));
  CHECK(g.slicing == r.slicing);
  CHECK(g.config == r.config);
  CHECK(g.config_key == r.config_key);
  CHECK(g.seed == -7);
  CHECK_FALSE(g.host.empty());
  CHECK(g.label == r.label);
  CHECK(g.metrics.at("iteration_time_s") == 0.1 + 0.2);
  // A NaN metric travels as null and comes back NaN (the store then rejects it).
  CHECK(std::isnan(g.metrics.at("odd")));
  REQUIRE(got.rows.size() == 2);
  const TraceRow& t = got.rows[1];
  CHECK((t.iteration == 1 && t.key == row.key && t.kind == OpKind::kSend && t.device == 3));
  CHECK(t.stream == "send");
  CHECK((t.start_ns == row.start_ns && t.end_ns == row.end_ns && t.bytes == row.bytes));
  CHECK(t.flops == 1.0 / 3.0);

  cli::SweepResult failed;
  failed.job = 5;
  failed.error = "pp 4 does not divide 6 layers";
  const cli::SweepResult back = cli::DecodeSweepResult(cli::EncodeSweepResult(failed));
  // A failed point: its error, no record.
  CHECK_FALSE(back.record);
  CHECK(back.error == failed.error);
  // Garbage is an internal error, not a crash.
  CHECK_THROWS_AS(cli::DecodeSweepResult("{\"job\": 1}"), InternalError);
}

}  // namespace
}  // namespace terasim

#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/tools/run_command.h"

using terasim::testing::RunCommand;

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("terasim compare ranks every family, stores them and draws the chart", "[tools][cli]") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("terasim_compare_cli_test_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "t.db").string();
  std::string out;
  const int rc = RunCommand(std::string(TERASIM_BINARY) +
                                " compare --model gpt3-1b --cluster p3.16xlarge:2 --batch 4"
                                " --max-evaluations 1 --store-ops all --json --db " +
                                db + " --out " + (dir / "out").string() + " 2>/dev/null",
                            &out);
  REQUIRE(rc == 0);
  const nlohmann::json j = nlohmann::json::parse(out);
  const auto& rows = j.at("strategies");
  // gpipe, 1f1b, interleaved, zero-bubble, megatron, terapipe, interleaved-zb, zb-v, dualpipe-v
  REQUIRE(rows.size() == 9);
  double best = 1e300, best_without = 1e300;
  for (const auto& r : rows) {
    REQUIRE(r.at("found").get<bool>());
    // D x P x T uses all 16 GPUs of two p3.16xlarge.
    CHECK(r.at("dp").get<int>() * r.at("pp").get<int>() * r.at("tp").get<int>() == 16);
    const double t = r.at("iteration_time_s").get<double>();
    best = std::min(best, t);
    if (r.at("family") != "terapipe") best_without = std::min(best_without, t);
  }
  for (const auto& r : rows) {
    // speedup = best time without token slicing / this time.
    CHECK(r.at("speedup").get<double>() ==
          Approx(best_without / r.at("iteration_time_s").get<double>()));
  }
  // The winner is the fastest row.
  for (const auto& r : rows) {
    if (r.at("family") == j.at("winner")) CHECK(r.at("iteration_time_s").get<double>() == best);
  }
  // The comparison and its nine runs, each with its trace rows (--store-ops all), are in the
  // database.
  std::string runs;
  REQUIRE(RunCommand(std::string(TERASIM_BINARY) + " db query --csv --db " + db +
                         " \"SELECT count(*) FROM comparison_runs WHERE comparison_id = " +
                         std::to_string(j.at("comparison_id").get<int>()) + "\"",
                     &runs) == 0);
  CHECK(runs.find("\n9") != std::string::npos);
  std::string ops;
  REQUIRE(RunCommand(std::string(TERASIM_BINARY) + " db query --csv --db " + db +
                         " \"SELECT count(DISTINCT run_id) FROM ops\"",
                     &ops) == 0);
  CHECK(ops.find("\n9") != std::string::npos);
  // The chart is an SVG with one bar label per family; the trace is JSON.
  const std::string svg = Slurp(j.at("chart").get<std::string>());
  CHECK(svg.rfind("<svg", 0) == 0);
  for (const char* family : {"gpipe", "1f1b", "interleaved", "zero-bubble", "megatron", "terapipe",
                             "interleaved-zb", "zb-v", "dualpipe-v"}) {
    CHECK(svg.find(family) != std::string::npos);
  }
  CHECK_NOTHROW(nlohmann::json::parse(Slurp(j.at("trace").get<std::string>())));
  // The winner's timeline beside the chart: one op rect per row of the winner's trace.
  const std::string timeline = Slurp(j.at("timeline").get<std::string>());
  CHECK(timeline.rfind("<svg", 0) == 0);
  CHECK(timeline.find("class=\"op\"") != std::string::npos);
  // Each family's search account adds up: every configuration simulated, over memory, not
  // generated or pruned (by the bound, the budget of 1 or the op budget).
  for (const auto& r : rows) {
    const auto& a = r.at("search");
    CHECK(a.at("candidates").get<int>() ==
          a.at("simulated").get<int>() + a.at("over_memory").get<int>() +
              a.at("not_generated").get<int>() + a.at("pruned_by_bound").get<int>() +
              a.at("pruned_by_budget").get<int>() + a.at("pruned_by_ops").get<int>());
    CHECK(a.at("simulated").get<int>() == 1);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("terasim compare stores only the winner's ops by default, micro-batches per replica",
          "[tools][cli]") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("terasim_compare_store_ops_test_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "t.db").string();
  std::string out;
  REQUIRE(RunCommand(std::string(TERASIM_BINARY) +
                         " compare --model gpt3-1b --cluster p3.16xlarge:2 --batch 4"
                         " --max-evaluations 1 --json --no-trace --out '' --db " +
                         db + " 2>/dev/null",
                     &out) == 0);
  const nlohmann::json j = nlohmann::json::parse(out);
  int winner_id = -1;
  for (const auto& r : j.at("strategies")) {
    if (r.at("family") == j.at("winner")) winner_id = r.at("run_id").get<int>();
  }
  REQUIRE(winner_id > 0);
  // Ops rows belong to one run, the winner's.
  std::string ops;
  REQUIRE(RunCommand(std::string(TERASIM_BINARY) + " db query --csv --db " + db +
                         " \"SELECT DISTINCT run_id FROM ops\"",
                     &ops) == 0);
  CHECK(ops == "run_id\n" + std::to_string(winner_id) + "\n");
  // microbatches = micro-batches per replica (the schedule's), slices = (micro-batch, slice)
  // units per replica; for the micro-batch families the two are equal.
  std::string cols;
  REQUIRE(RunCommand(std::string(TERASIM_BINARY) + " db query --json --db " + db +
                         " \"SELECT strategy, microbatches, slices, "
                         "json_extract(config_json, '$.schedule.microbatches') AS config_mb "
                         "FROM runs\"",
                     &cols) == 0);
  for (const auto& r : nlohmann::json::parse(cols)) {
    CHECK(r.at("microbatches") == r.at("config_mb"));
    if (r.at("strategy") != "terapipe") CHECK(r.at("slices") == r.at("microbatches"));
    if (r.at("strategy") == "terapipe") {
      CHECK(r.at("slices").get<int>() >= r.at("microbatches").get<int>());
    }
  }
  std::filesystem::remove_all(dir);
}

// The default budget must find what an unlimited one finds on a small cluster (the issue's
// case: gpt3-1b on two p3.16xlarge, where 4 evaluations per family missed TeraPipe's best).
TEST_CASE("terasim compare's default budget finds TeraPipe's best on p3.16xlarge:2",
          "[tools][cli]") {
  auto terapipe_time = [](const std::string& extra) {
    std::string out;
    const int rc = RunCommand(std::string(TERASIM_BINARY) +
                                  " compare --model gpt3-1b --cluster p3.16xlarge:2"
                                  " --strategy terapipe --db '' --out '' --json" +
                                  extra + " 2>/dev/null",
                              &out);
    REQUIRE(rc == 0);
    return nlohmann::json::parse(out).at("strategies").at(0).at("iteration_time_s").get<double>();
  };
  CHECK(terapipe_time("") == terapipe_time(" --max-evaluations 1000"));
}

TEST_CASE("terasim compare exits 4 when nothing fits, names the closest, removes stale outputs",
          "[tools][cli]") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("terasim_compare_nothing_fits_test_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "out");
  // An earlier run's outputs.
  for (const char* name : {"compare.svg", "winner.trace.json", "winner.gantt.svg"}) {
    std::ofstream(dir / "out" / name) << "stale";
  }
  std::string out;
  // gpt3-175b on one p3.16xlarge: 175e9 parameters x 16 bytes of training state is 2.8 TB
  // against 8 x 16 GB; no configuration fits.
  const int rc = RunCommand(
      std::string(TERASIM_BINARY) + " compare --model gpt3-175b --cluster p3.16xlarge:1 --db " +
          (dir / "t.db").string() + " --out " + (dir / "out").string() + " 2>&1",
      &out);
  CHECK(rc == 4);
  CHECK(out.find("no configuration of any family fits in memory on p3.16xlarge:1") !=
        std::string::npos);
  // The closest is the one with the smallest peak; with 16 bytes per parameter its largest
  // term is the optimizer state (12 of the 16).
  CHECK(out.find("the closest is") != std::string::npos);
  CHECK(out.find("largest term optimizer state") != std::string::npos);
  for (const char* name : {"compare.svg", "winner.trace.json", "winner.gantt.svg"}) {
    CHECK_FALSE(std::filesystem::exists(dir / "out" / name));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("terasim compare --paper stores its runs in --db and draws --out/paper.svg",
          "[tools][cli][paper]") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("terasim_compare_paper_db_test_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "p.db").string();
  std::string out;
  REQUIRE(RunCommand(std::string(TERASIM_BINARY) +
                         " compare --paper --setting 5 --network analytic --json --db " + db +
                         " --out " + (dir / "out").string() + " 2>/dev/null",
                     &out) == 0);
  // stdout is still the JSON array of settings.
  CHECK(nlohmann::json::parse(out).size() == 1);
  // Two runs: without (gpipe) and with (terapipe) token slicing, one comparison.
  std::string runs;
  REQUIRE(RunCommand(std::string(TERASIM_BINARY) + " db query --csv --db " + db +
                         " \"SELECT strategy FROM runs ORDER BY id\"",
                     &runs) == 0);
  CHECK(runs == "strategy\ngpipe\nterapipe\n");
  CHECK(Slurp((dir / "out" / "paper.svg").string()).rfind("<svg", 0) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("terasim plan slices each sequence into tokens that sum to it", "[tools][cli]") {
  std::string out;
  REQUIRE(RunCommand(std::string(TERASIM_BINARY) +
                         " plan --model gpt3-1b --cluster p3.16xlarge:2 --pp 4 --tp 4 --batch 4"
                         " --granularity 16 --json",
                     &out) == 0);
  const nlohmann::json j = nlohmann::json::parse(out);
  // estimate = sum + (K - 1) x max, the pipeline latency of DESIGN.md section 3.
  CHECK(j.at("estimate_s").get<double>() ==
        Approx(j.at("sum_s").get<double>() + 3 * j.at("max_unit_s").get<double>()));
  const std::string spec = j.at("slicing");
  CHECK(spec.find(':') != std::string::npos);
}

TEST_CASE("terasim compare --paper rejects an unknown setting", "[tools][cli]") {
  std::string out;
  CHECK(RunCommand(std::string(TERASIM_BINARY) + " compare --paper --setting 99 2>&1", &out) == 1);
  CHECK(out.find("--setting 99: no such setting") != std::string::npos);
}

namespace {

// `terasim compare --paper --setting S --json`'s one row (analytic network: the test is about
// the calibration, and the flow model agrees with it on these point-to-point pipelines).
nlohmann::json PaperRow(const std::string& setting) {
  std::string out;
  const int rc = RunCommand(std::string(TERASIM_BINARY) + " compare --paper --setting " + setting +
                                " --network analytic --db '' --out '' --json 2>/dev/null",
                            &out);
  REQUIRE(rc == 0);
  const nlohmann::json rows = nlohmann::json::parse(out);
  REQUIRE(rows.size() == 1);
  return rows[0];
}

// FACTS.md's calibration points were measured on the paper's cluster; the V100 and
// p3.16xlarge network parameters were fitted once to them (tools/fit/fit_p3.py), so the
// paper's own settings must come back within 10 %.
void CheckCalibrationPoints(const nlohmann::json& row) {
  CHECK(row.at("fits").get<bool>());
  const double without_s = row.at("without_s").get<double>();
  const double with_s = row.at("with_s").get<double>();
  CHECK(without_s == Approx(row.at("published_without_s").get<double>()).epsilon(0.10));
  CHECK(with_s == Approx(row.at("published_with_s").get<double>()).epsilon(0.10));
  // The planner's slicing beats no slicing.
  CHECK(with_s < without_s);
}

}  // namespace

TEST_CASE("terasim compare --paper reproduces setting 5's calibration points",
          "[tools][cli][paper]") {
  const nlohmann::json row = PaperRow("5");
  // FACTS.md: 1.863 s without token slicing, 1.328 s with [704, 688, 656] per sequence.
  CHECK(row.at("published_without_s").get<double>() == 1.863);
  CheckCalibrationPoints(row);
}

TEST_CASE("terasim compare --paper reproduces setting 9 and its uniform-slicing curve",
          "[tools][cli][paper]") {
  const nlohmann::json row = PaperRow("9");
  // FACTS.md: 9.990 s without, 1.481 s with the published slicing.
  CHECK(row.at("published_with_s").get<double>() == 1.481);
  CheckCalibrationPoints(row);
  const nlohmann::json& curve = row.at("uniform");
  // FACTS.md: n = 1, 4, 8, 16, 32, 64, 128 slices per sequence; the measured minimum is at 16
  // (1.547 s), with 8 and 32 close, and too many slices hurt (3.252 s at 128).
  REQUIRE(curve.size() == 7);
  int best_slices = 0;
  double best_s = 1e300;
  for (const nlohmann::json& point : curve) {
    const double predicted_s = point.at("predicted_s").get<double>();
    INFO("slices " << point.at("slices") << ": " << predicted_s << " s");
    // Every point of the measured curve within 15 %.
    CHECK(predicted_s == Approx(point.at("published_s").get<double>()).epsilon(0.15));
    if (predicted_s < best_s) {
      best_s = predicted_s;
      best_slices = point.at("slices").get<int>();
    }
  }
  CHECK(best_slices >= 8);
  CHECK(best_slices <= 32);
  // Too many slices hurt: 128 slices are slower than the best by more than half.
  CHECK(curve.back().at("predicted_s").get<double>() > 1.5 * best_s);
}

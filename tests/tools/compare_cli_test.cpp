#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

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
  const auto dir = std::filesystem::temp_directory_path() / "terasim_compare_cli_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "t.db").string();
  std::string out;
  const int rc = RunCommand(std::string(TERASIM_BINARY) +
                                " compare --model gpt3-1b --cluster p3.16xlarge:2 --batch 4"
                                " --max-evaluations 1 --json --db " +
                                db + " --out " + (dir / "out").string() + " 2>/dev/null",
                            &out);
  REQUIRE(rc == 0);
  const nlohmann::json j = nlohmann::json::parse(out);
  const auto& rows = j.at("strategies");
  REQUIRE(rows.size() == 5);
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
  // The comparison and its five runs, each with its trace rows, are in the database.
  std::string runs;
  REQUIRE(RunCommand(std::string(TERASIM_BINARY) + " db query --csv --db " + db +
                         " \"SELECT count(*) FROM comparison_runs WHERE comparison_id = " +
                         std::to_string(j.at("comparison_id").get<int>()) + "\"",
                     &runs) == 0);
  CHECK(runs.find("\n5") != std::string::npos);
  std::string ops;
  REQUIRE(RunCommand(std::string(TERASIM_BINARY) + " db query --csv --db " + db +
                         " \"SELECT count(DISTINCT run_id) FROM ops\"",
                     &ops) == 0);
  CHECK(ops.find("\n5") != std::string::npos);
  // The chart is an SVG with one bar label per family; the trace is JSON.
  const std::string svg = Slurp(j.at("chart").get<std::string>());
  CHECK(svg.rfind("<svg", 0) == 0);
  for (const char* family : {"gpipe", "1f1b", "interleaved", "megatron", "terapipe"}) {
    CHECK(svg.find(family) != std::string::npos);
  }
  CHECK_NOTHROW(nlohmann::json::parse(Slurp(j.at("trace").get<std::string>())));
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

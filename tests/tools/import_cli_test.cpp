#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/tools/run_command.h"

using terasim::testing::RunCommand;

TEST_CASE("terasim import torch-csv round-trips: import, check, simulate", "[tools][cli]") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("terasim_import_cli_test_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string bin(TERASIM_BINARY);
  const std::string golden = std::string(TERASIM_TEST_DATA) + "/../golden/torch_csv/";
  for (const std::string name : {"looped_bfs_p2_v2_m2", "zbv_p2_m2_comms"}) {
    INFO(name);
    const std::string pir = (dir / (name + ".pir")).string();
    std::string out;
    REQUIRE(RunCommand(bin + " import torch-csv " + golden + name + ".csv --model tiny -o " + pir +
                           " --json 2>&1",
                       &out) == 0);
    const nlohmann::json j = nlohmann::json::parse(out);
    CHECK(j.at("ranks").get<int>() == 2);
    CHECK(j.at("stages").get<int>() == 4);
    CHECK(j.at("microbatches").get<int>() == 2);
    out.clear();
    CHECK(RunCommand(bin + " check " + pir + " 2>&1", &out) == 0);
    out.clear();
    REQUIRE(RunCommand(bin + " simulate " + pir + " --cluster p3.16xlarge:1 --json 2>/dev/null",
                       &out) == 0);
    CHECK(nlohmann::json::parse(out).at("iteration_time_s").get<double>() > 0);
  }
  // A table that breaks the rules: one clear error naming the cell, non-zero exit.
  const std::string bad = (dir / "bad.csv").string();
  std::ofstream(bad) << "0F0,0W0\n";
  std::string out;
  CHECK(RunCommand(bin + " import torch-csv " + bad + " -o " + (dir / "bad.pir").string() + " 2>&1",
                   &out) != 0);
  CHECK_THAT(out, Catch::Contains("bad.csv:1:2: 0W0: a weight gradient without its input"));
  std::filesystem::remove_all(dir);
}

// `terasim db` end to end: runs the built binary against a store written by the library.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/traces/sample_trace.h"
#include "traces/chrome_trace.h"
#include "traces/result_store.h"
#include "traces/trace_csv.h"

namespace terasim {
namespace {

using testing::SampleTrace;
using testing::TempPath;

struct Result {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs `terasim ARGS` (ARGS already shell-quoted) capturing stdout and stderr.
Result Terasim(const std::string& args) {
  TempPath err("cli-stderr.txt");
  std::string command = std::string(TERASIM_BINARY) + " " + args + " 2>" + err.str();
  Result r;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.out.append(buffer, n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = ReadAll(err.str());
  return r;
}

// A store with one sim run (id 1) of the sample trace.
void WriteSampleStore(const std::string& path) {
  ResultStore store = ResultStore::OpenOrCreate(path);
  RunRecord r;
  r.model = "gpt3-1b";
  r.cluster = "p3.16xlarge:24";
  r.strategy = "terapipe";
  r.pp = 24;
  r.metrics = {{"iteration_time_s", 1.5}};
  store.WriteRun(r, SampleTrace().rows);
}

TEST_CASE("terasim db runs lists the stored runs as JSON") {
  TempPath db("cli-runs.db");
  WriteSampleStore(db.str());
  Result r = Terasim("db runs --json --db '" + db.str() + "'");
  REQUIRE(r.exit_code == 0);
  nlohmann::json runs = nlohmann::json::parse(r.out);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].at("id") == 1);
  CHECK(runs[0].at("strategy") == "terapipe");
  CHECK(runs[0].at("pp") == 24);
  CHECK(runs[0].at("metrics").at("iteration_time_s") == 1.5);
  // The text table names the run too.
  Result text = Terasim("db runs --db '" + db.str() + "'");
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("terapipe") && Catch::Contains("(1 row)"));
}

TEST_CASE("terasim db query prints CSV and JSON") {
  TempPath db("cli-query.db");
  WriteSampleStore(db.str());
  std::string sql = "\"SELECT name, value FROM metrics ORDER BY name\"";
  Result csv = Terasim("db query " + sql + " --csv --db '" + db.str() + "'");
  CHECK(csv.exit_code == 0);
  CHECK(csv.out == "name,value\niteration_time_s,1.5\n");
  Result json = Terasim("db query " + sql + " --json --db '" + db.str() + "'");
  CHECK(json.exit_code == 0);
  CHECK(nlohmann::json::parse(json.out) ==
        nlohmann::json::parse(R"([{"name": "iteration_time_s", "value": 1.5}])"));
}

TEST_CASE("terasim db query reports bad SQL on one line and exits 1") {
  TempPath db("cli-bad-sql.db");
  WriteSampleStore(db.str());
  Result r = Terasim("db query 'SELEC 1' --db '" + db.str() + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "terasim: " + db.str() + ": SQL: near \"SELEC\": syntax error\n");
}

TEST_CASE("terasim db on a missing file names it and creates nothing") {
  TempPath db("cli-missing.db");
  Result r = Terasim("db runs --db '" + db.str() + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.err == "terasim: " + db.str() + ": no such database file\n");
  CHECK_FALSE(std::filesystem::exists(db.str()));
}

TEST_CASE("terasim db export writes the run's trace as Perfetto JSON and CSV") {
  TempPath db("cli-export.db");
  TempPath json("cli-export.json");
  TempPath csv("cli-export.csv");
  WriteSampleStore(db.str());
  Result r = Terasim("db export 1 --trace '" + json.str() + "' --csv '" + csv.str() + "' --db '" +
                     db.str() + "'");
  REQUIRE(r.exit_code == 0);
  ResultStore store = ResultStore::OpenExisting(db.str());
  Trace trace = store.ReadRunTrace(1);
  // The files hold exactly what the writers make of the stored trace; CSV's run column is 1.
  CHECK(ReadAll(json.str()) == ChromeTraceJson(trace));
  CHECK(ReadAll(csv.str()) == TraceCsv(trace, "1"));
  Result missing = Terasim("db export 9 --trace '" + json.str() + "' --db '" + db.str() + "'");
  CHECK(missing.exit_code == 1);
  CHECK(missing.err == "terasim: " + db.str() + ": no run 9\n");
}

}  // namespace
}  // namespace terasim

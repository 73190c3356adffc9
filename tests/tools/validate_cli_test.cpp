// `terasim calibrate` and `terasim validate` end to end on the tiny model: the calibration
// table reads back, validate reports every number it promises, stores three runs and one
// comparison, and writes the scatter and the traces. (How close the prediction is depends on
// the machine's load; that is measured and reported, not asserted: see traces/data/README.md.)
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/calibrated_cost.h"
#include "schedule/pir_format.h"
#include "tests/tools/run_command.h"
#include "traces/result_store.h"

namespace terasim {
namespace {

TEST_CASE("terasim calibrate writes a table and validate compares, stores and plots",
          "[tools][validate]") {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("terasim_validate_cli_" + std::to_string(getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string calib = dir + "/calib.json";
  std::string out;
  int status = testing::RunCommand(std::string(TERASIM_BINARY) +
                                       " calibrate --model tiny --tokens 1,8,16,32 --contexts "
                                       "0,8,16 --repetitions 1 -o " +
                                       calib + " --json 2>/dev/null",
                                   &out);
  REQUIRE(status == 0);
  const nlohmann::json fit = nlohmann::json::parse(out);
  // Forward and backward of rows 1, and the optimizer.
  CHECK(fit.at("fits").size() == 3);
  const CalibrationTable table = LoadCalibrationTable(calib);
  CHECK(table.model == "tiny");
  CHECK(table.device == "local-cpu");
  REQUIRE(table.tables.size() == 3);
  // 4 lengths in the base curve; lengths 1, 8 and 16 after contexts 8 and 16 fit the 32-token
  // sequence (32 does not): 3 x 2 context points.
  CHECK(table.tables[0].curves.at(0).tokens.size() == 4);
  CHECK(table.tables[0].curves.at(0).context.points == 6);

  out.clear();
  const std::string golden = std::string(TERASIM_TEST_DATA) + "/../golden/gpipe_p2_m2.pir";
  status = testing::RunCommand(std::string(TERASIM_BINARY) + " validate " + golden + " --calib " +
                                   calib + " --iterations 2 --warmup 1 --db " + dir +
                                   "/v.db --out " + dir + "/out --json 2>/dev/null",
                               &out);
  REQUIRE(status == 0);
  const nlohmann::json v = nlohmann::json::parse(out);
  // The simulated machine is local:2 (the schedule's 2 devices).
  CHECK(v.at("cluster") == "local:2");
  CHECK(v.at("measured_iteration_times_s").size() == 2);
  // A point-to-point schedule on the in-process transport: one thread per device.
  CHECK(v.at("exec_threads") == "device");
  // One profiling round on one thread measured no speed factors: no jitter.
  CHECK(v.at("jitter").is_null());
  for (const char* part : {"calibrated_model", "replay"}) {
    const nlohmann::json& c = v.at(part);
    CHECK(c.at("measured").at("iteration_time_s").get<double>() > 0);
    CHECK(c.at("predicted").at("iteration_time_s").get<double>() > 0);
    CHECK(c.at("critical_path_agreement").get<double>() >= 0);
    CHECK(c.at("critical_path_agreement").get<double>() <= 1);
    // FWD, BWD (one length, context 0), OPTIMIZER, SEND and RECV groups at least.
    CHECK(c.at("groups").size() >= 5);
  }
  // Exec run, calibrated simulation, replay, and one comparison of the three.
  ResultStore store = ResultStore::OpenExisting(dir + "/v.db");
  const std::vector<StoredRun> runs = store.ListRuns();
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].record.kind == "exec");
  CHECK(runs[1].record.kind == "sim");
  // The measured and the calibrated run share a configuration key (README's sim-vs-exec query).
  CHECK(runs[0].record.config_key == runs[1].record.config_key);
  CHECK(store.ComparisonRuns(v.at("stored").at("comparison").get<int64_t>()) ==
        std::vector<int64_t>{runs[0].id, runs[1].id, runs[2].id});
  for (const char* file : {"scatter.svg", "measured.json", "predicted.json", "replay.json"}) {
    CHECK(std::filesystem::exists(dir + "/out/" + file));
  }
  // The three timelines share one time axis: the same tick labels in each (the axis spans the
  // longest iteration of the three), and one op rect per op of the schedule's iteration.
  auto ticks_of = [&](const std::string& file) {
    std::ifstream in(dir + "/out/" + file);
    const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(svg.find("<svg") != std::string::npos);
    std::vector<std::string> ticks;
    for (size_t at = svg.find("class=\"tick\""); at != std::string::npos;
         at = svg.find("class=\"tick\"", at + 1)) {
      const size_t open = svg.find('>', at), close = svg.find('<', open);
      ticks.push_back(svg.substr(open + 1, close - open - 1));
    }
    return ticks;
  };
  const std::vector<std::string> measured_ticks = ticks_of("measured.gantt.svg");
  CHECK(measured_ticks.size() >= 2);
  CHECK(ticks_of("predicted.gantt.svg") == measured_ticks);
  CHECK(ticks_of("replay.gantt.svg") == measured_ticks);
  // The trace exec wrote and the one sim wrote for the same schedule: both JSON with a
  // traceEvents array, and the same op keys (the event names), every op of the schedule.
  auto keys_of = [&](const std::string& file) {
    std::ifstream in(dir + "/out/" + file);
    const nlohmann::json doc = nlohmann::json::parse(in);
    std::set<std::string> keys;
    REQUIRE(doc.at("traceEvents").is_array());
    for (const nlohmann::json& e : doc.at("traceEvents")) {
      if (e.at("ph") == "X") keys.insert(e.at("name").get<std::string>());
    }
    return keys;
  };
  const std::set<std::string> exec_keys = keys_of("measured.json");
  CHECK(exec_keys.size() == ReadPirFile(golden).ops.size());
  CHECK(exec_keys == keys_of("predicted.json"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("terasim validate --calib auto profiles the schedule's slice shapes between iterations",
          "[tools][validate]") {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("terasim_validate_auto_" + std::to_string(getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  const std::string golden = std::string(TERASIM_TEST_DATA) + "/../golden/terapipe_flush_p2.pir";
  const Schedule schedule = ReadPirFile(golden);
  std::string out;
  const int status = testing::RunCommand(std::string(TERASIM_BINARY) + " validate " + golden +
                                             " --calib auto --iterations 2 --warmup 1 --out " +
                                             dir + " --json 2>/dev/null",
                                         &out);
  REQUIRE(status == 0);
  const nlohmann::json v = nlohmann::json::parse(out);
  CHECK(v.at("calib") == "auto");
  // Two rounds, one measured iteration each.
  CHECK(v.at("measured_iteration_times_s").size() == 2);
  CHECK(v.at("calibrated_model").at("predicted").at("iteration_time_s").get<double>() > 0);
  // 2 rounds x 2 profiler threads: 2 rows of 2 speed factors, so the model and the replay are
  // the medians of 101 jittered iterations by default.
  CHECK(v.at("jitter").at("samples") == 101);
  CHECK(v.at("jitter").at("model_speed_factors").size() == 2);
  CHECK(v.at("jitter").at("model_speed_factors").at(0).size() == 2);
  CHECK(v.at("jitter").at("model_p10_s").get<double>() <=
        v.at("calibrated_model").at("predicted").at("iteration_time_s").get<double>());
  // The table it measured: one base curve per pass over length 1 and the schedule's slice
  // lengths, on a stack of as many layers as a stage holds.
  const CalibrationTable table = LoadCalibrationTable(dir + "/calib.json");
  CHECK(table.model == schedule.model);
  CHECK(table.speed_factors.size() == 2);
  // What it measured, one row per measurement: every round and thread of the profile.
  std::ifstream csv(dir + "/profile.csv");
  std::string header;
  std::getline(csv, header);
  CHECK(header == "round,thread,pass,rows,tokens,context,time_ns");
  std::set<std::string> round_thread;
  for (std::string line; std::getline(csv, line);) {
    round_thread.insert(line.substr(0, line.find(',', line.find(',') + 1)));
  }
  CHECK(round_thread == std::set<std::string>{"0,0", "0,1", "1,0", "1,1"});
  CHECK(table.source.find("--calib auto") != std::string::npos);
  // Flush order: device 0 forwards every slice before the first backward, so the profile holds
  // as many slices in flight as device 0 has forwards.
  int forwards = 0;
  for (const Op& op : schedule.ops) forwards += op.device == 0 && op.kind == OpKind::kFwd;
  CHECK(table.source.find(fmt::format("{} slices in flight", forwards)) != std::string::npos);
  std::set<double> lengths = {1};
  for (const Op& op : schedule.ops) {
    if (op.kind == OpKind::kFwd) lengths.insert(op.tokens.end - op.tokens.begin);
  }
  REQUIRE(!table.tables.empty());
  const RowsCurve& forward = table.tables.at(0).curves.at(0);
  CHECK(std::set<double>(forward.tokens.begin(), forward.tokens.end()) == lengths);
  std::filesystem::remove_all(dir);
}

TEST_CASE("terasim validate requires a calibration table", "[tools][validate]") {
  std::string out;
  const std::string golden = std::string(TERASIM_TEST_DATA) + "/../golden/gpipe_p2_m2.pir";
  const int status =
      testing::RunCommand(std::string(TERASIM_BINARY) + " validate " + golden + " 2>&1", &out);
  // Exit 1, naming the flag.
  CHECK(status == 1);
  CHECK_THAT(out, Catch::Matchers::Contains("--calib is required"));
}

}  // namespace
}  // namespace terasim

// Chrome / Perfetto trace JSON: the writer's layout, its determinism and the reader.
#include "traces/chrome_trace.h"

#include <algorithm>
#include <fstream>
#include <map>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/errors.h"
#include "tests/traces/sample_trace.h"
#include "traces/trace_file.h"

namespace terasim {
namespace {

using testing::CanonicalRows;
using testing::SameRows;
using testing::SampleTrace;

std::vector<nlohmann::json> EventsWithPhase(const nlohmann::json& doc, const std::string& ph) {
  std::vector<nlohmann::json> out;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == ph) out.push_back(e);
  }
  return out;
}

TEST_CASE("Chrome trace JSON has one X event per row with ts and dur in microseconds") {
  Trace trace = SampleTrace();
  nlohmann::json doc = nlohmann::json::parse(ChromeTraceJson(trace));
  std::vector<nlohmann::json> events = EventsWithPhase(doc, "X");
  // One complete event per trace row.
  REQUIRE(events.size() == trace.rows.size());
  std::vector<TraceRow> rows = CanonicalRows(trace);
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& e = events[i];
    // ts = start_ns / 1000 and dur = (end_ns - start_ns) / 1000 microseconds.
    CHECK(e.at("ts").get<double>() == Approx(rows[i].start_ns / 1e3));
    CHECK(e.at("dur").get<double>() == Approx((rows[i].end_ns - rows[i].start_ns) / 1e3));
    // pid is the device; the event is named after the op key; args carry the op's fields.
    CHECK(e.at("pid") == rows[i].device);
    CHECK(e.at("name") == rows[i].key);
    CHECK(e.at("args").at("kind") == std::string(OpKindName(rows[i].kind)));
    CHECK(e.at("args").at("iteration") == rows[i].iteration);
    CHECK(e.at("args").at("bytes") == rows[i].bytes);
  }
  // The row 12000 -> 123456789012 ns: ts 12 us, dur 123456777.012 us, exactly representable
  // in the printed digits.
  auto dp = std::find_if(events.begin(), events.end(),
                         [](const nlohmann::json& e) { return e.at("name") == "DP.s0.d0"; });
  REQUIRE(dp != events.end());
  CHECK(dp->at("ts").get<double>() == 12.0);
  CHECK(dp->at("dur").get<double>() == 123456777.012);
}

TEST_CASE("Chrome trace names each device's process GPU n and each stream's thread") {
  nlohmann::json doc = nlohmann::json::parse(ChromeTraceJson(SampleTrace()));
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  for (const auto& e : EventsWithPhase(doc, "M")) {
    if (e.at("name") == "process_name") processes[e.at("pid")] = e.at("args").at("name");
    if (e.at("name") == "thread_name")
      threads[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
  }
  // Devices 0 and 1 -> "GPU 0", "GPU 1".
  CHECK(processes == std::map<int, std::string>{{0, "GPU 0"}, {1, "GPU 1"}});
  // Streams in name order get tids 1.. on every device: compute 1, dp 2, recv 3, send 4;
  // device 0 uses compute, dp, send; device 1 uses compute, recv.
  CHECK(threads == std::map<std::pair<int, int>, std::string>{{{0, 1}, "compute"},
                                                              {{0, 2}, "dp"},
                                                              {{0, 4}, "send"},
                                                              {{1, 1}, "compute"},
                                                              {{1, 3}, "recv"}});
  // Every X event sits on a named thread of its device.
  for (const auto& e : EventsWithPhase(doc, "X")) {
    CHECK(threads.count({e.at("pid"), e.at("tid")}) == 1);
  }
}

TEST_CASE("Chrome trace round trip restores every row, the label and the metadata") {
  Trace trace = SampleTrace();
  Trace back = ReadChromeTrace(ChromeTraceJson(trace), "sample.json");
  // Rows come back in canonical order, every field equal.
  CHECK(SameRows(back.rows, CanonicalRows(trace)));
  CHECK(back.run_kind == "sim");
  CHECK(back.label == "sample");
  CHECK(back.metadata == trace.metadata);
}

TEST_CASE("Chrome trace output is byte-identical for the same rows in any order") {
  Trace a = SampleTrace();
  Trace b = SampleTrace();
  std::reverse(b.rows.begin(), b.rows.end());
  // Same rows, reversed input order -> the same bytes.
  CHECK(ChromeTraceJson(a) == ChromeTraceJson(b));
  CHECK(ChromeTraceJson(a) == ChromeTraceJson(a));
}

TEST_CASE("Chrome trace writes counter series as C events in a counters process") {
  CounterSeries link{"link 0->1", "utilization", {{0, 0.0}, {1500, 0.75}, {2250, 0.0}}};
  nlohmann::json doc = nlohmann::json::parse(ChromeTraceJson(SampleTrace(), {link}));
  std::vector<nlohmann::json> counters = EventsWithPhase(doc, "C");
  // Three samples -> three C events at 0, 1.5 and 2.25 us.
  REQUIRE(counters.size() == 3);
  CHECK(counters[1].at("ts").get<double>() == 1.5);
  CHECK(counters[1].at("args").at("utilization").get<double>() == 0.75);
  // The counters process follows the last device (pid 2) and is named "counters".
  CHECK(counters[0].at("pid") == 2);
  bool named = false;
  for (const auto& e : EventsWithPhase(doc, "M")) {
    if (e.at("name") == "process_name" && e.at("pid") == 2)
      named = e.at("args").at("name") == "counters";
  }
  CHECK(named);
  // The reader skips counter events: the rows are the same as without counters.
  Trace back = ReadChromeTrace(ChromeTraceJson(SampleTrace(), {link}), "c.json");
  CHECK(back.rows.size() == SampleTrace().rows.size());
}

TEST_CASE("Chrome trace reader accepts the plain array form with thread names") {
  std::string text = R"([
    {"name":"thread_name","ph":"M","pid":3,"tid":7,"args":{"name":"compute"}},
    {"name":"F.s0.m0.t0-8","cat":"FWD","ph":"X","pid":3,"tid":7,"ts":1.5,"dur":2}
  ])";
  Trace t = ReadChromeTrace(text, "array.json");
  REQUIRE(t.rows.size() == 1);
  // key and kind from name and cat; stream from the thread name; 1.5 us -> 1500 ns.
  CHECK(t.rows[0].key == "F.s0.m0.t0-8");
  CHECK(t.rows[0].kind == OpKind::kFwd);
  CHECK(t.rows[0].device == 3);
  CHECK(t.rows[0].stream == "compute");
  CHECK(t.rows[0].start_ns == 1500);
  CHECK(t.rows[0].end_ns == 3500);
}

TEST_CASE("Chrome trace reader names the event with an unknown op kind") {
  std::string text = R"({"traceEvents":[
    {"name":"x","ph":"X","pid":0,"tid":1,"ts":0,"dur":1,"args":{"kind":"FORWARD"}}]})";
  CHECK_THROWS_WITH(ReadChromeTrace(text, "bad.json"),
                    "bad.json: traceEvents[0]: args: kind: unknown op kind 'FORWARD'");
  CHECK_THROWS_AS(ReadChromeTrace("{\"traceEvents\": 3}", "bad.json"), InputError);
  CHECK_THROWS_WITH(
      ReadChromeTrace("[{\"ph\":\"X\",\"pid\":0,\"ts\":0,\"dur\":-1,\"name\":\"a\"}]", "neg.json"),
      "neg.json: traceEvents[0]: dur: must be >= 0 (got -1)");
}

TEST_CASE("Trace files are written and read in the format of their extension") {
  Trace trace = SampleTrace();
  testing::TempPath json("file.json");
  testing::TempPath csv("file.csv");
  WriteTraceFile(json.str(), trace);
  WriteTraceFile(csv.str(), trace);
  // Both files read back to the same rows.
  CHECK(SameRows(ReadTraceFile(json.str()).rows, CanonicalRows(trace)));
  CHECK(SameRows(ReadTraceFile(csv.str()).rows, CanonicalRows(trace)));
  // The JSON file holds exactly ChromeTraceJson's bytes.
  std::ifstream in(json.str(), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(bytes == ChromeTraceJson(trace));
  CHECK_THROWS_WITH(ReadTraceFile("trace.txt"),
                    "trace.txt: unknown trace format (expected .json or .csv)");
  CHECK_THROWS_WITH(ReadTraceFile("/nonexistent/t.json"), "/nonexistent/t.json: cannot read");
}

}  // namespace
}  // namespace terasim

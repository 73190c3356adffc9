// Chrome / Perfetto trace JSON: the writer's layout, its determinism and the reader.
#include "traces/chrome_trace.h"
#include "traces/trace_order.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/errors.h"
#include "models/model_card.h"
#include "schedule/generator.h"
#include "schedule/pir_format.h"
#include "tests/traces/sample_trace.h"
#include "traces/trace_file.h"
#include "traces/trace_links.h"

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

// A trace of tests/golden/tp2_1f1b_p2_m2.pir (1F1B, pp 2, tp 2: SEND/RECV between the stages
// and tensor-parallel ALLREDUCEs) with made-up times: op i of the file runs [1000 i, 1000 i +
// 800); a RECV is posted at 10 i (early, so it waits) and its data is in 400 ns after its SEND
// starts.
struct LinkedTrace {
  Schedule schedule;
  Trace trace;
};

LinkedTrace GoldenLinkedTrace() {
  LinkedTrace t;
  t.schedule = ReadPirFile(std::string(TERASIM_TEST_DATA) + "/../golden/tp2_1f1b_p2_m2.pir");
  std::map<std::string, TimeNs> send_start;  // by tensor
  for (size_t i = 0; i < t.schedule.ops.size(); ++i) {
    const Op& op = t.schedule.ops[i];
    if (op.kind == OpKind::kSend) send_start[op.tensor] = 1000 * static_cast<TimeNs>(i);
  }
  for (size_t i = 0; i < t.schedule.ops.size(); ++i) {
    const Op& op = t.schedule.ops[i];
    TraceRow row{0,
                 op.key,
                 op.kind,
                 op.device,
                 op.stream,
                 1000 * static_cast<TimeNs>(i),
                 1000 * static_cast<TimeNs>(i) + 800,
                 op.bytes,
                 0};
    if (op.kind == OpKind::kRecv) {
      row.start_ns = 10 * static_cast<TimeNs>(i);
      row.end_ns = send_start.at(op.tensor) + 400;
    }
    t.trace.rows.push_back(row);
  }
  return t;
}

TEST_CASE("Chrome trace with its schedule follows the Trace Event Format, flows matched") {
  const LinkedTrace t = GoldenLinkedTrace();
  const nlohmann::json doc = nlohmann::json::parse(ChromeTraceJson(t.trace, {}, &t.schedule));
  int recvs = 0, allreduces = 0;
  for (const Op& op : t.schedule.ops) {
    recvs += op.kind == OpKind::kRecv;
    allreduces += op.kind == OpKind::kAllReduce;
  }
  REQUIRE(recvs > 0);
  REQUIRE(allreduces > 0);

  // Every event has a known ph; ts is a number of microseconds; X has dur >= 0.
  const std::set<std::string> phases = {"X", "M", "C", "s", "t", "f"};
  std::set<int> pids_named;
  std::set<std::pair<int, int>> threads_named;
  for (const auto& e : doc.at("traceEvents")) {
    const std::string ph = e.at("ph");
    REQUIRE(phases.count(ph) == 1);
    if (ph == "M" && e.at("name") == "process_name") pids_named.insert(e.at("pid").get<int>());
    if (ph == "M" && e.at("name") == "thread_name") {
      threads_named.emplace(e.at("pid").get<int>(), e.at("tid").get<int>());
    }
    if (ph != "M") REQUIRE(e.at("ts").is_number());
    if (ph == "X") REQUIRE(e.at("dur").get<double>() >= 0);
  }
  // X slices, by thread, to find what each flow event binds to.
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;
  std::map<std::string, nlohmann::json> by_key;
  for (const auto& e : EventsWithPhase(doc, "X")) {
    // Each X event sits on a named process and a named thread (the metadata events).
    CHECK(pids_named.count(e.at("pid").get<int>()) == 1);
    CHECK(threads_named.count({e.at("pid").get<int>(), e.at("tid").get<int>()}) == 1);
    const double ts = e.at("ts").get<double>();
    slices[{e.at("pid"), e.at("tid")}].emplace_back(ts, ts + e.at("dur").get<double>());
    if (!e.at("args").contains("part")) by_key[e.at("name")] = e;
  }
  // One slice per op, plus a "transfer" (and, when it waited, a "wait") inside each RECV.
  CHECK(by_key.size() == t.schedule.ops.size());
  for (const auto& e : EventsWithPhase(doc, "X")) {
    if (!e.at("args").contains("part")) continue;
    const nlohmann::json& parent = by_key.at(e.at("args").at("of").get<std::string>());
    CHECK(parent.at("args").at("kind") == "RECV");
    CHECK(e.at("pid") == parent.at("pid"));
    CHECK(e.at("tid") == parent.at("tid"));
    // Inside the RECV: the wait starts with it, the transfer ends with it.
    const double begin = e.at("ts").get<double>();
    const double end = begin + e.at("dur").get<double>();
    const double parent_begin = parent.at("ts").get<double>();
    const double parent_end = parent_begin + parent.at("dur").get<double>();
    CHECK(begin >= parent_begin);
    CHECK(end <= parent_end + 1e-9);
    if (e.at("args").at("part") == "wait") CHECK(begin == Approx(parent_begin).margin(1e-9));
    if (e.at("args").at("part") == "transfer") CHECK(end == Approx(parent_end).margin(1e-9));
  }

  // Flows: per id one "s" and one "f" (bp "e"), "t" only between, the same cat and name;
  // each flow event lies inside an X slice of its thread.
  struct Flow {
    int s = 0, t = 0, f = 0;
    std::set<std::string> names;
  };
  std::map<int64_t, Flow> flows;
  for (const auto& e : doc.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph != "s" && ph != "t" && ph != "f") continue;
    Flow& flow = flows[e.at("id").get<int64_t>()];
    (ph == "s" ? flow.s : ph == "t" ? flow.t : flow.f) += 1;
    flow.names.insert(e.at("cat").get<std::string>() + "/" + e.at("name").get<std::string>());
    if (ph != "s") CHECK(e.at("bp") == "e");
    const double ts = e.at("ts").get<double>();
    bool inside = false;
    for (const auto& [begin, end] : slices[{e.at("pid"), e.at("tid")}]) {
      inside = inside || (begin <= ts && ts <= end);
    }
    CHECK(inside);
  }
  int p2p = 0, collective = 0;
  for (const auto& [id, flow] : flows) {
    CHECK(flow.s == 1);
    CHECK(flow.f == 1);
    CHECK(flow.names.size() == 1);
    if (*flow.names.begin() == "p2p/SEND->RECV") {
      ++p2p;
      CHECK(flow.t == 0);
    } else {
      ++collective;
      // tp = 2: two members, no middle steps.
      CHECK(flow.t == 0);
    }
  }
  // One flow per SEND/RECV pair, one per ALLREDUCE instance (two members each, tp = 2).
  CHECK(p2p == recvs);
  CHECK(collective == allreduces / 2);
}

TEST_CASE("Chrome trace with links computed beforehand is the same bytes, rows in any order") {
  const LinkedTrace t = GoldenLinkedTrace();
  const std::string expected = ChromeTraceJson(t.trace, {}, &t.schedule);
  // The links LinkTrace gives, handed to the file writer (compare shares them with the timeline).
  testing::TempPath json("linked.json");
  WriteChromeTraceFile(json.str(), t.trace, LinkTrace(t.schedule, t.trace));
  std::ifstream in(json.str(), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(bytes == expected);
  // Rows in reverse order: the same SEND/RECV pairs and collective members are linked, and the
  // canonical order writes the same bytes.
  Trace reversed = t.trace;
  std::reverse(reversed.rows.begin(), reversed.rows.end());
  CHECK(ChromeTraceJson(reversed, {}, &t.schedule) == expected);
  const TraceLinks forward = LinkTrace(t.schedule, t.trace);
  const TraceLinks backward = LinkTrace(t.schedule, reversed);
  REQUIRE(!forward.p2p.empty());
  CHECK(backward.p2p.size() == forward.p2p.size());  // every RECV still finds its SEND
  CHECK(backward.collectives.size() == forward.collectives.size());
}

TEST_CASE("Chrome trace draws a RECV as its wait until the SEND is posted, then its transfer") {
  const LinkedTrace t = GoldenLinkedTrace();
  const nlohmann::json doc = nlohmann::json::parse(ChromeTraceJson(t.trace, {}, &t.schedule));
  // RB.s0.m0... on device 0 is posted at 10 i ns; its SEND (on device 2) starts at 1000 j ns
  // with j > i, so it waits [10 i, 1000 j) and transfers [1000 j, 1000 j + 400).
  const std::map<std::string, int> index = KeyIndex(t.schedule);
  const Op& recv = t.schedule.ops[index.at("RB.s0.m0.t0-32.r0")];
  int send = -1;
  for (size_t j = 0; j < t.schedule.ops.size(); ++j) {
    if (t.schedule.ops[j].kind == OpKind::kSend && t.schedule.ops[j].tensor == recv.tensor) {
      send = static_cast<int>(j);
    }
  }
  REQUIRE(send >= 0);
  std::map<std::string, nlohmann::json> parts;
  for (const auto& e : EventsWithPhase(doc, "X")) {
    if (e.at("args").contains("part") && e.at("args").at("of") == recv.key) {
      parts[e.at("args").at("part")] = e;
    }
  }
  REQUIRE(parts.size() == 2);
  const double posted_us = 10.0 * index.at(recv.key) / 1e3;
  const double send_us = 1000.0 * send / 1e3;
  CHECK(parts.at("wait").at("ts").get<double>() == Approx(posted_us));
  CHECK(parts.at("wait").at("dur").get<double>() == Approx(send_us - posted_us));
  CHECK(parts.at("transfer").at("ts").get<double>() == Approx(send_us));
  CHECK(parts.at("transfer").at("dur").get<double>() == Approx(0.4));
  // The reader takes back one row per op: the parts are not rows.
  const Trace back = ReadChromeTrace(ChromeTraceJson(t.trace, {}, &t.schedule), "linked.json");
  CHECK(SameRows(back.rows, CanonicalRows(t.trace)));
  // Without the schedule: no parts, no flows (the trace alone has no tensors or peers).
  const nlohmann::json plain = nlohmann::json::parse(ChromeTraceJson(t.trace));
  CHECK(EventsWithPhase(plain, "X").size() == t.trace.rows.size());
  CHECK(EventsWithPhase(plain, "s").empty());
}

TEST_CASE("StreamRanks numbers each row's stream by its name order, past the linear-search size") {
  // 20 names (more than the 16 searched in turn), each used twice, appended in reverse order:
  // name "s00".."s19" must get rank 0..19 whatever order they first appear in.
  std::vector<TraceRow> rows;
  for (int pass = 0; pass < 2; ++pass) {
    for (int k = 19; k >= 0; --k) {
      TraceRow row;
      row.stream = fmt::format("s{:02}", k);
      rows.push_back(row);
    }
  }
  std::vector<std::string_view> names;
  const std::vector<int> rank = StreamRanks(rows, &names);
  REQUIRE(names.size() == 20);
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(rank[i] == 19 - static_cast<int>(i % 20));  // row i holds "s{19 - i % 20}"
    CHECK(names[rank[i]] == rows[i].stream);
  }
}

TEST_CASE("Chrome trace writes times, FLOPs and strings as fmt's shortest round trip would") {
  // The writer's own digits for times (ns / 1000 us), whole-number FLOPs and escapes, checked
  // against fmt's "{}" of the same double: exact decimals up to 2^41 us, fmt beyond.
  const std::vector<TimeNs> times = {0,
                                     1,
                                     10,
                                     999,
                                     1000,
                                     1001,
                                     1010,
                                     123456789,
                                     -5,
                                     -1000,
                                     -123456,
                                     (TimeNs{1} << 41) * 1000 - 1,
                                     (TimeNs{1} << 41) * 1000,
                                     (TimeNs{1} << 52) + 1,
                                     -((TimeNs{1} << 41) * 1000)};
  const std::vector<double> flops = {0.0,        -0.0,   1.0,   0.5,  45902462976.0,
                                     0x1p53 - 1, 0x1p53, 1e300, -3.0, 0.1};
  const std::vector<std::string> keys = {"plain.key.with.more.than.8",
                                         "q\"uote.after.eight",
                                         "12345678\\",
                                         std::string("ctl\x01.in.a.longer.key", 20),
                                         "tab\there",
                                         "utf8 \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 ok"};
  Trace trace;
  trace.run_kind = "sim";
  for (size_t i = 0; i < times.size(); ++i) {
    TraceRow row;
    row.key = fmt::format("{}.{}", keys[i % keys.size()], i);
    row.device = static_cast<int>(i);
    row.stream = "compute";
    row.start_ns = times[i];
    row.end_ns = times[i] + 1000 * static_cast<TimeNs>(i);
    row.flops = flops[i % flops.size()];
    trace.rows.push_back(row);
  }
  const std::string json = ChromeTraceJson(trace);
  for (const TraceRow& row : trace.rows) {
    // Each row's event, found by its pid (its device), carries fmt's digits.
    const std::string expected = fmt::format(R"(,"ph":"X","pid":{},"tid":1,"ts":{},"dur":{},)",
                                             row.device, static_cast<double>(row.start_ns) / 1e3,
                                             static_cast<double>(row.end_ns - row.start_ns) / 1e3);
    CHECK(json.find(expected) != std::string::npos);
    CHECK(json.find(fmt::format(R"("flops":{}}})", row.flops)) != std::string::npos);
  }
  // The JSON parses back to the same keys (quotes, backslashes, control characters escaped;
  // UTF-8 through), times and FLOPs.
  const nlohmann::json doc = nlohmann::json::parse(json);
  std::map<int, nlohmann::json> by_pid;
  for (const auto& e : EventsWithPhase(doc, "X")) by_pid[e.at("pid").get<int>()] = e;
  REQUIRE(by_pid.size() == trace.rows.size());
  for (const TraceRow& row : trace.rows) {
    const nlohmann::json& e = by_pid.at(row.device);
    CHECK(e.at("name").get<std::string>() == row.key);
    CHECK(e.at("ts").get<double>() == static_cast<double>(row.start_ns) / 1e3);
    CHECK(e.at("args").at("flops").get<double>() == row.flops);
  }
  CHECK(json.find(R"("name":"q\"uote.after.eight.1")") != std::string::npos);
  CHECK(json.find(R"("name":"12345678\\.2")") != std::string::npos);
  CHECK(json.find(R"("name":"ctl\u0001.in.a.longer.key.3")") != std::string::npos);
}

TEST_CASE("LinkTrace finds a generated schedule's ops in row order as its key index does") {
  // A generated schedule (AfterOps set) is walked in op order; the same schedule without
  // AfterOps goes through the key index. Rows: every op in op order, some left out (as a
  // representatives-only trace leaves devices out), one key unknown, then two rows out of
  // order (the walk gives up and the index takes over).
  GenerateOptions o;
  o.model = LoadModelCard("tiny");
  o.strategy = Strategy::kOneFOneB;
  o.pp = 2;
  o.tp = 2;
  o.microbatches = 4;
  const Schedule generated = Generate(o);
  REQUIRE(!generated.after_ops.Empty());
  Schedule by_index = generated;
  by_index.after_ops = {};
  Trace trace;
  for (size_t i = 0; i < generated.ops.size(); ++i) {
    if (i % 7 == 3) continue;
    const Op& op = generated.ops[i];
    trace.rows.push_back({0, op.key, op.kind, op.device, op.stream, static_cast<TimeNs>(100 * i),
                          static_cast<TimeNs>(100 * i + 50), op.bytes, 0});
    if (i == generated.ops.size() / 3) {
      trace.rows.push_back({0, "not.an.op", OpKind::kFwd, op.device, op.stream, 0, 1, 0, 0});
    }
  }
  auto same = [](const TraceLinks& a, const TraceLinks& b) {
    if (a.p2p.size() != b.p2p.size() || a.collectives != b.collectives) return false;
    for (size_t k = 0; k < a.p2p.size(); ++k) {
      if (a.p2p[k].send != b.p2p[k].send || a.p2p[k].recv != b.p2p[k].recv) return false;
    }
    return true;
  };
  const TraceLinks walked = LinkTrace(generated, trace);
  const TraceLinks indexed = LinkTrace(by_index, trace);
  // 1F1B over pp 2 links SEND/RECV pairs (those whose two rows are both kept) and tp 2
  // collectives.
  REQUIRE(!indexed.p2p.empty());
  REQUIRE(!indexed.collectives.empty());
  CHECK(same(walked, indexed));
  // Rows out of op order: the last row moved to the front.
  std::rotate(trace.rows.rbegin(), trace.rows.rbegin() + 1, trace.rows.rend());
  CHECK(same(LinkTrace(generated, trace), LinkTrace(by_index, trace)));
}

}  // namespace
}  // namespace terasim

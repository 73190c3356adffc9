// The pipeline timeline (traces/gantt_svg.h): well-formed SVG, one rect per op (runs of
// sub-pixel ops share one), the critical path from the rows alone, RECV waits, merged replicas.
#include "traces/gantt_svg.h"

#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "models/errors.h"

namespace terasim {
namespace {

// A small well-formedness check without an XML library: every start tag is closed in order,
// attribute values are quoted, and text holds no raw '<' or bare '&'. Returns "" when well
// formed, else what is wrong.
std::string XmlProblem(const std::string& xml) {
  std::vector<std::string> open;
  size_t i = 0;
  while (i < xml.size()) {
    if (xml[i] != '<') {
      if (xml[i] == '&') {
        const size_t semi = xml.find(';', i);
        if (semi == std::string::npos || semi - i > 6) return "bare & at " + std::to_string(i);
      }
      ++i;
      continue;
    }
    const size_t end = xml.find('>', i);
    if (end == std::string::npos) return "unclosed tag at " + std::to_string(i);
    std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (!tag.empty() && (tag[0] == '?' || tag[0] == '!')) continue;
    // Quotes in attributes come in pairs (values never hold '>' in these writers).
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return "odd quotes in <" + tag + ">";
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "unexpected </" + name + ">";
      open.pop_back();
      continue;
    }
    const bool self_closing = !tag.empty() && tag.back() == '/';
    const std::string name = tag.substr(0, tag.find_first_of(" /"));
    if (!self_closing) open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  return "";
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// GPipe on 2 stages with 2 micro-batches, times in microseconds (one forward 1 us, one
// backward 2 us, a transfer 0.5 us):
//   GPU 0: F0 [0,1) F1 [1,2)                      B1 [6.5,8.5) B0 [8.5,10.5)
//   GPU 1:       F0 [1.5,2.5) F1 [2.5,3.5) B1 [3.5,5.5)? ...
// written out below; device 1 waits for its first forward.
Trace PipelineTrace() {
  Trace t;
  t.run_kind = "sim";
  auto row = [&](std::string key, OpKind kind, int dev, std::string stream, TimeNs s, TimeNs e) {
    t.rows.push_back({0, std::move(key), kind, dev, std::move(stream), s, e, 0, 0});
  };
  row("F.s0.m0.t0-8", OpKind::kFwd, 0, "compute", 0, 1000);
  row("SF.s0.m0.t0-8", OpKind::kSend, 0, "send", 1000, 1500);
  row("F.s0.m1.t0-8", OpKind::kFwd, 0, "compute", 1000, 2000);
  row("SF.s0.m1.t0-8", OpKind::kSend, 0, "send", 2000, 2500);
  row("RF.s1.m0.t0-8", OpKind::kRecv, 1, "recv", 0, 1500);
  row("F.s1.m0.t0-8", OpKind::kFwd, 1, "compute", 1500, 2500);
  row("RF.s1.m1.t0-8", OpKind::kRecv, 1, "recv", 1500, 2500);
  row("F.s1.m1.t0-8", OpKind::kFwd, 1, "compute", 2500, 3500);
  row("B.s1.m1.t0-8", OpKind::kBwd, 1, "compute", 3500, 5500);
  row("SB.s1.m1.t0-8", OpKind::kSend, 1, "send", 5500, 6000);
  row("B.s1.m0.t0-8", OpKind::kBwd, 1, "compute", 5500, 7500);
  row("SB.s1.m0.t0-8", OpKind::kSend, 1, "send", 7500, 8000);
  row("RB.s0.m1.t0-8", OpKind::kRecv, 0, "recv", 2000, 6000);
  row("B.s0.m1.t0-8", OpKind::kBwd, 0, "compute", 6000, 8000);
  row("RB.s0.m0.t0-8", OpKind::kRecv, 0, "recv", 6000, 8000);
  row("B.s0.m0.t0-8", OpKind::kBwd, 0, "compute", 8000, 10000);
  row("OPT.s0", OpKind::kOptimizer, 0, "compute", 10000, 10200);
  return t;
}

TEST_CASE("Gantt SVG is well-formed XML with one rect per op") {
  const Trace trace = PipelineTrace();
  const std::string svg = GanttSvg(trace, {});
  CHECK(XmlProblem(svg).empty());
  CHECK(svg.rfind("<svg", 0) == 0);
  // One <rect class="op"> per trace row (17), each with the op's key in its tooltip.
  CHECK(Count(svg, "<rect class=\"op\"") == trace.rows.size());
  for (const TraceRow& r : trace.rows) CHECK(Count(svg, "<title>" + r.key + " (") == 1);
  // One row per device: two "GPU n" labels; a legend entry for each kind present.
  CHECK(Count(svg, ">GPU 0<") == 1);
  CHECK(Count(svg, ">GPU 1<") == 1);
  for (const char* legend : {"forward", "backward", "send / recv", "optimizer", "critical path"}) {
    CHECK(svg.find(std::string(">") + legend + "<") != std::string::npos);
  }
  // The span is 10.2 us: the axis is in us with a tick at 10.
  CHECK(svg.find("time (us)") != std::string::npos);
  CHECK(svg.find(">10</text>") != std::string::npos);
  // Labels: the forward of micro-batch 1 (no token slices) reads "1".
  CHECK(svg.find("fill=\"white\">1</text>") != std::string::npos);
  // Idle of device 1's compute lane: busy [1.5, 7.5) = 6 of 10.2 us -> 41.2 %.
  CHECK(svg.find(">41.2%</text>") != std::string::npos);
  // Same input, same bytes.
  CHECK(GanttSvg(trace, {}) == svg);
}

TEST_CASE("Critical path from the rows follows the ops that ended as the next began") {
  const Trace trace = PipelineTrace();
  std::vector<std::string> keys;
  for (size_t i : CriticalPathFromChains(trace)) keys.push_back(trace.rows[i].key);
  // From the last op (OPT.s0 ends at 10.2 us) back: B.s0.m0 started at 8.0 when B.s0.m1 and
  // RB.s0.m0 ended (same device: B.s0.m1 on the compute stream first); B.s0.m1 started at 6.0
  // when RB.s0.m1 (device 0) and SB.s1.m1 (device 1) ended: device 0's RECV; it started at 2.0
  // when F.s0.m1 ended; F.s0.m1 started at 1.0 after F.s0.m0.
  const std::vector<std::string> expected = {"F.s0.m0.t0-8", "F.s0.m1.t0-8", "RB.s0.m1.t0-8",
                                             "B.s0.m1.t0-8", "B.s0.m0.t0-8", "OPT.s0"};
  CHECK(keys == expected);
  // Drawn: 6 op rects marked critical; outlines around the runs that touch in a lane:
  // [F.s0.m0, F.s0.m1] on the compute lane, RB.s0.m1 on the recv lane, [B.s0.m1, B.s0.m0,
  // OPT.s0] on the compute lane: 3 outlines and 2 links between lanes.
  const std::string svg = GanttSvg(trace, {});
  CHECK(Count(svg, "data-critical=\"1\"") == expected.size());
  CHECK(Count(svg, "<rect class=\"critical\"") == 3);
  CHECK(Count(svg, "<line class=\"critical-link\"") == 2);
  // A given path (e.g. the simulator's) replaces the chain: two ops on two devices.
  GanttOptions given;
  given.critical_path = {"F.s0.m0.t0-8", "F.s1.m0.t0-8"};
  const std::string with_given = GanttSvg(trace, given);
  CHECK(Count(with_given, "data-critical=\"1\"") == 2);
  CHECK(Count(with_given, "<rect class=\"critical\"") == 2);
}

TEST_CASE("Gantt draws a RECV's wait before its transfer when the transfer start is known") {
  const Trace trace = PipelineTrace();
  GanttOptions options;
  options.recv_transfer_start["RB.s0.m1.t0-8"] = 5500;  // its SEND started at 5.5 us
  const std::string svg = GanttSvg(trace, options);
  CHECK(XmlProblem(svg).empty());
  // One pale wait rect; still one op rect per row.
  CHECK(Count(svg, "<rect class=\"wait\"") == 1);
  CHECK(Count(svg, "<rect class=\"op\"") == trace.rows.size());
}

TEST_CASE("Gantt merges identical device rows and labels token slices") {
  Trace trace;
  // Two data-parallel replicas (devices 0 and 1) with the same timeline; micro-batch 0 cut
  // into two token slices: labels "0.0" and "0.1".
  for (int dev : {0, 1}) {
    trace.rows.push_back({0, "F.s0.m0.t0-512", OpKind::kFwd, dev, "compute", 0, 4000, 0, 0});
    trace.rows.push_back({0, "F.s0.m0.t512-1024", OpKind::kFwd, dev, "compute", 4000, 9000, 0, 0});
    trace.rows.push_back({0, "AR.d", OpKind::kAllReduce, dev, "dp", 9000, 12000, 0, 0});
  }
  const std::string merged = GanttSvg(trace, {});
  CHECK(XmlProblem(merged).empty());
  CHECK(Count(merged, "<rect class=\"op\"") == 3);
  CHECK(merged.find("GPU 0 (+1 alike)") != std::string::npos);
  CHECK(merged.find(">0.0</text>") != std::string::npos);
  CHECK(merged.find(">0.1</text>") != std::string::npos);
  GanttOptions separate;
  separate.merge_identical = false;
  CHECK(Count(GanttSvg(trace, separate), "<rect class=\"op\"") == 6);
  // Per stream: devices x streams rows (2 x 2, merged to 2).
  GanttOptions per_stream;
  per_stream.per_stream = true;
  const std::string streams = GanttSvg(trace, per_stream);
  CHECK(streams.find("GPU 0 compute (+1 alike)") != std::string::npos);
  CHECK(streams.find("GPU 0 dp (+1 alike)") != std::string::npos);
}

TEST_CASE("Gantt draws runs of ops narrower than 3 px in one lane as one rect") {
  Trace trace;
  // Device 0: 1000 forwards of 10 ns back to back, then one of 1 ms; the axis spans 1.01 ms
  // over 1000 px, so each short op is 0.0099 px wide (< 3 px) and they touch: one rect for the
  // 1000 (data-ops="1000"), one for the long op. Device 1: two 10 ns backwards 0.5 ms apart
  // (495 px): not adjacent, two rects. 1000 + 1 + 2 rows -> 4 op rects.
  for (int i = 0; i < 1000; ++i) {
    trace.rows.push_back(
        {0, "F.s0.m" + std::to_string(i), OpKind::kFwd, 0, "compute", i * 10, i * 10 + 10, 0, 0});
  }
  trace.rows.push_back({0, "F.s0.m1000", OpKind::kFwd, 0, "compute", 10'000, 1'010'000, 0, 0});
  trace.rows.push_back({0, "B.s1.m0", OpKind::kBwd, 1, "compute", 0, 10, 0, 0});
  trace.rows.push_back({0, "B.s1.m1", OpKind::kBwd, 1, "compute", 500'000, 500'010, 0, 0});
  const std::string svg = GanttSvg(trace, {});
  CHECK(XmlProblem(svg).empty());
  CHECK(Count(svg, "<rect class=\"op\"") == 4);
  CHECK(Count(svg, "data-ops=\"1000\"") == 1);
  CHECK(svg.find("<title>1000 ops (forward 1000) F.s0.m0 .. F.s0.m999 GPU 0 compute") !=
        std::string::npos);
  // A 10 ns backward among the short forwards joins the run; the rect keeps the colour of the
  // kind with the most time (forward, 9990 of 10000 ns) and counts both kinds.
  trace.rows[500].kind = OpKind::kBwd;
  const std::string mixed = GanttSvg(trace, {});
  CHECK(Count(mixed, "<rect class=\"op\"") == 4);
  CHECK(mixed.find("data-ops=\"1000\" x=\"130.00\" y=\"92\" width=\"9.90\" height=\"24\" "
                   "fill=\"#4e79a7\"") != std::string::npos);
  CHECK(mixed.find("(forward 999, backward 1)") != std::string::npos);
  // An op 3 px or wider is drawn alone: 30.3 us is 30 px; it splits the run in two.
  trace.rows[500].end_ns = trace.rows[500].start_ns + 30'300;
  for (size_t i = 501; i < 1000; ++i) {
    trace.rows[i].start_ns += 30'290;
    trace.rows[i].end_ns += 30'290;
  }
  CHECK(Count(GanttSvg(trace, {}), "<rect class=\"op\"") == 6);
}

TEST_CASE("Gantt of an iteration without rows is an input error") {
  GanttOptions options;
  options.iteration = 3;
  CHECK_THROWS_WITH(GanttSvg(PipelineTrace(), options),
                    "gantt: the trace has no rows for iteration 3");
}

}  // namespace
}  // namespace terasim

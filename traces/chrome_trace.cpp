#include "traces/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/limits.h"
#include "traces/atomic_file.h"
#include "traces/trace_links.h"
#include "traces/trace_order.h"

namespace terasim {
namespace {

// A JSON string literal (quotes included). UTF-8 passes through unchanged.
std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Nanoseconds as microseconds, in the shortest digits that read back to the same double
// (exact for any time below 2^53 ns, about 104 days).
std::string Micros(TimeNs ns) { return fmt::format("{}", static_cast<double>(ns) / 1e3); }

std::string Number(double value) {
  TERASIM_CHECK(std::isfinite(value), "trace value {} is not finite", value);
  return fmt::format("{}", value);
}

}  // namespace

void WriteChromeTrace(const Trace& trace, const std::vector<CounterSeries>& counters,
                      std::ostream& out, const Schedule* schedule) {
  std::set<int> devices;
  std::set<std::string> streams;
  for (const TraceRow& row : trace.rows) {
    devices.insert(row.device);
    streams.insert(row.stream);
  }
  // One tid per stream name, the same on every device, in name order (tid 0 is left free).
  std::map<std::string, int> tid;
  for (const std::string& s : streams) tid.emplace(s, static_cast<int>(tid.size()) + 1);

  out << "{\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"run_kind\":" << Quote(trace.run_kind)
      << ",\"label\":" << Quote(trace.label) << ",\"metadata\":{";
  bool first = true;
  for (const auto& [k, v] : trace.metadata) {
    out << (first ? "" : ",") << Quote(k) << ":" << Quote(v);
    first = false;
  }
  out << "}},\n\"traceEvents\":[\n";

  first = true;
  auto event = [&](const std::string& text) {
    out << (first ? "" : ",\n") << text;
    first = false;
  };
  std::set<std::pair<int, std::string>> tracks;
  for (const TraceRow& row : trace.rows) tracks.emplace(row.device, row.stream);
  for (int d : devices) {
    event(fmt::format(
        R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":"GPU {}"}}}})", d, d));
    event(fmt::format(
        R"({{"name":"process_sort_index","ph":"M","pid":{},"tid":0,"args":{{"sort_index":{}}}}})",
        d, d));
  }
  for (const auto& [d, s] : tracks) {
    event(fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})",
                      d, tid.at(s), Quote(s)));
    event(fmt::format(
        R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
        d, tid.at(s), tid.at(s)));
  }

  const std::vector<size_t> canonical = CanonicalRowOrder(trace.rows);
  TraceLinks links;
  std::map<size_t, TimeNs> transfer_start;
  if (schedule != nullptr) {
    links = LinkTrace(*schedule, trace);
    transfer_start = RecvTransferStarts(trace, links);
  }
  for (size_t i : canonical) {
    const TraceRow& row = trace.rows[i];
    TERASIM_CHECK(row.end_ns >= row.start_ns, "trace row {} ends ({}) before it starts ({})",
                  row.key, row.end_ns, row.start_ns);
    std::string_view kind = OpKindName(row.kind);
    event(fmt::format(
        R"({{"name":{},"cat":"{}","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},)"
        R"("args":{{"key":{},"kind":"{}","iteration":{},"stream":{},"bytes":{},"flops":{}}}}})",
        Quote(row.key), kind, row.device, tid.at(row.stream), Micros(row.start_ns),
        Micros(row.end_ns - row.start_ns), Quote(row.key), kind, row.iteration, Quote(row.stream),
        row.bytes, Number(row.flops)));
    auto transfer = transfer_start.find(i);
    if (transfer == transfer_start.end()) continue;
    auto part = [&](std::string_view name, TimeNs begin, TimeNs end) {
      event(fmt::format(
          R"({{"name":"{}","cat":"recv.{}","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},)"
          R"("args":{{"part":"{}","of":{}}}}})",
          name, name, row.device, tid.at(row.stream), Micros(begin), Micros(end - begin), name,
          Quote(row.key)));
    };
    if (transfer->second > row.start_ns) part("wait", row.start_ns, transfer->second);
    part("transfer", transfer->second, row.end_ns);
  }

  // Flows, numbered in the canonical order of the RECV / the first member.
  std::vector<size_t> position(trace.rows.size());
  for (size_t k = 0; k < canonical.size(); ++k) position[canonical[k]] = k;
  auto flow = [&](char ph, std::string_view cat, std::string_view name, int64_t id, size_t r,
                  TimeNs ts) {
    const TraceRow& row = trace.rows[r];
    event(fmt::format(R"({{"name":"{}","cat":"{}","ph":"{}","id":{},"pid":{},"tid":{},"ts":{}{}}})",
                      name, cat, ph, id, row.device, tid.at(row.stream), Micros(ts),
                      ph == 's' ? "" : R"(,"bp":"e")"));
  };
  std::vector<TraceLinks::P2p> p2p = links.p2p;
  std::sort(p2p.begin(), p2p.end(), [&](const TraceLinks::P2p& a, const TraceLinks::P2p& b) {
    return position[a.recv] < position[b.recv];
  });
  int64_t id = 0;
  for (const TraceLinks::P2p& p : p2p) {
    ++id;
    flow('s', "p2p", "SEND->RECV", id, p.send, trace.rows[p.send].start_ns);
    flow('f', "p2p", "SEND->RECV", id, p.recv, transfer_start.at(p.recv));
  }
  std::vector<std::vector<size_t>> collectives;
  for (const std::vector<size_t>& members : links.collectives) {
    if (members.size() >= 2) collectives.push_back(members);
  }
  std::sort(collectives.begin(), collectives.end(), [&](const auto& a, const auto& b) {
    return position[a.front()] < position[b.front()];
  });
  for (const std::vector<size_t>& members : collectives) {
    ++id;
    const std::string_view name = OpKindName(trace.rows[members.front()].kind);
    for (size_t k = 0; k < members.size(); ++k) {
      const char ph = k == 0 ? 's' : k + 1 == members.size() ? 'f' : 't';
      flow(ph, "collective", name, id, members[k], trace.rows[members[k]].start_ns);
    }
  }

  if (!counters.empty()) {
    int pid = devices.empty() ? 0 : *devices.rbegin() + 1;
    event(fmt::format(
        R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":"counters"}}}})",
        pid));
    event(fmt::format(
        R"({{"name":"process_sort_index","ph":"M","pid":{},"tid":0,"args":{{"sort_index":{}}}}})",
        pid, pid));
    for (const CounterSeries& series : counters) {
      for (const CounterSample& sample : series.samples) {
        event(fmt::format(R"({{"name":{},"ph":"C","pid":{},"tid":0,"ts":{},"args":{{{}:{}}}}})",
                          Quote(series.name), pid, Micros(sample.time_ns), Quote(series.value_name),
                          Number(sample.value)));
      }
    }
  }
  out << "\n]}\n";
}

std::string ChromeTraceJson(const Trace& trace, const std::vector<CounterSeries>& counters,
                            const Schedule* schedule) {
  std::ostringstream out;
  WriteChromeTrace(trace, counters, out, schedule);
  return out.str();
}

void WriteChromeTraceFile(const std::string& path, const Trace& trace,
                          const std::vector<CounterSeries>& counters, const Schedule* schedule) {
  AtomicFile file(path);
  WriteChromeTrace(trace, counters, file.stream(), schedule);
  file.Commit();
}

Trace ReadChromeTrace(const std::string& text, const std::string& origin) {
  nlohmann::json doc = ParseJson(text, origin);
  Trace trace;
  const nlohmann::json* events = &doc;
  if (doc.is_object()) {
    JsonReader top(doc, origin);
    events = &top.RequireArray("traceEvents");
    if (top.Has("otherData")) {
      JsonReader other = top.Child("otherData");
      trace.run_kind = other.OptionalString("run_kind", "");
      trace.label = other.OptionalString("label", "");
      if (other.Has("metadata")) {
        JsonReader meta = other.Child("metadata");
        for (const auto& [k, v] : other.RequireObject("metadata").items()) {
          trace.metadata[k] = meta.RequireString(k);
        }
      }
    }
  } else if (!doc.is_array()) {
    ThrowInput("{}: must be a JSON object with traceEvents or an array of events", origin);
  }

  // Thread names first: they may follow the events that use them.
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  for (size_t i = 0; i < events->size(); ++i) {
    JsonReader e = JsonReader::Element(*events, i, origin, "traceEvents");
    if (e.OptionalString("ph", "") != "M" || e.OptionalString("name", "") != "thread_name") {
      continue;
    }
    thread_names[{e.RequireInt("pid"), e.OptionalInt("tid", 0)}] =
        e.Child("args").RequireString("name");
  }

  for (size_t i = 0; i < events->size(); ++i) {
    JsonReader e = JsonReader::Element(*events, i, origin, "traceEvents");
    if (e.OptionalString("ph", "") != "X") continue;
    if (e.Has("args") && e.Child("args").Has("part")) continue;  // a RECV's wait or transfer
    TraceRow row;
    // pid is the device: an input number like any other, refused above the device limit.
    int64_t pid = e.RequireInt("pid", 0, limits::kMaxDevices - 1, "kMaxDevices");
    int64_t tid = e.OptionalInt("tid", 0);
    row.device = static_cast<int>(pid);
    // Microseconds; bounded so that start and end stay representable nanoseconds.
    const double max_us = static_cast<double>(limits::kMaxDurationNs) / 1e3;
    double ts_us = e.RequireDoubleIn("ts", -max_us, max_us);
    double dur_us = e.RequireDouble("dur");
    if (!(dur_us >= 0)) ThrowInput("{}: dur: must be >= 0 (got {})", e.where(), dur_us);
    if (dur_us > max_us) {
      ThrowInput("{}: dur: {} us exceeds the limit {} us (kMaxDurationNs, models/limits.h)",
                 e.where(), dur_us, max_us);
    }
    row.start_ns = std::llround(ts_us * 1e3);
    row.end_ns = row.start_ns + std::llround(dur_us * 1e3);

    nlohmann::json empty = nlohmann::json::object();
    JsonReader args = e.Has("args") ? e.Child("args") : JsonReader(empty, e.where() + ": args");
    row.key = args.OptionalString("key", e.OptionalString("name", ""));
    if (row.key.empty()) ThrowInput("{}: name: missing (the op key)", e.where());
    std::string kind = args.OptionalString("kind", e.OptionalString("cat", ""));
    std::optional<OpKind> parsed = ParseOpKind(kind);
    if (!parsed) ThrowInput("{}: args: kind: unknown op kind '{}'", e.where(), kind);
    row.kind = *parsed;
    row.iteration = static_cast<int>(args.OptionalInt("iteration", 0, 0, INT32_MAX));
    auto name = thread_names.find({pid, tid});
    row.stream = args.OptionalString(
        "stream", name != thread_names.end() ? name->second : fmt::format("tid{}", tid));
    row.bytes = args.OptionalInt("bytes", 0, 0, limits::kMaxBytes, "kMaxBytes");
    row.flops = args.OptionalDouble("flops", 0);
    trace.rows.push_back(std::move(row));
  }
  return trace;
}

Trace ReadChromeTraceFile(const std::string& path) {
  return ReadChromeTrace(ReadTextFile(path), path);
}

}  // namespace terasim

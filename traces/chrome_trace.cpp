#include "traces/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/limits.h"
#include "traces/atomic_file.h"
#include "traces/trace_links.h"
#include "traces/trace_order.h"

namespace terasim {
namespace {

// The JSON text of a trace, built in memory and handed to the stream in large pieces.
class JsonOut {
 public:
  explicit JsonOut(std::ostream& out) : out_(out), buf_(new char[kCapacity]) {}
  JsonOut(const JsonOut&) = delete;
  JsonOut& operator=(const JsonOut&) = delete;

  JsonOut& operator<<(std::string_view text) {
    Put(text.data(), text.size());
    return *this;
  }
  JsonOut& operator<<(char c) {
    Put(&c, 1);
    return *this;
  }
  JsonOut& operator<<(int64_t value) {
    const fmt::format_int digits(value);
    Put(digits.data(), digits.size());
    return *this;
  }
  JsonOut& operator<<(int value) { return *this << static_cast<int64_t>(value); }
  // A JSON string literal (quotes included). UTF-8 passes through unchanged.
  void Quote(std::string_view text) {
    *this << '"';
    // Runs of characters that need no escape go in whole.
    size_t plain = 0;
    // Eight characters at a time while none of them is a control character, '"' or '\\'.
    while (plain + 8 <= text.size() && !NeedsEscapeIn8(text.data() + plain)) plain += 8;
    while (plain < text.size() && NeedsNoEscape(text[plain])) ++plain;
    *this << text.substr(0, plain);
    for (char c : text.substr(plain)) {
      switch (c) {
        case '"':
          *this << "\\\"";
          break;
        case '\\':
          *this << "\\\\";
          break;
        case '\n':
          *this << "\\n";
          break;
        case '\r':
          *this << "\\r";
          break;
        case '\t':
          *this << "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            Format("\\u{:04x}", static_cast<unsigned>(c));
          } else {
            *this << c;
          }
      }
    }
    *this << '"';
  }
  // Whether any of the 8 bytes at `p` is below 0x20, '"' or '\\' (a byte with its high bit set,
  // part of a UTF-8 sequence, is none of these). Exact: a borrow can only run from a byte that
  // is itself a match.
  static bool NeedsEscapeIn8(const char* p) {
    uint64_t x = 0;
    std::memcpy(&x, p, 8);
    constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
    auto has_zero = [&](uint64_t v) { return ((v - kOnes) & ~v & kHigh) != 0; };
    const bool below_space = ((x - kOnes * 0x20) & ~x & kHigh) != 0;
    return below_space || has_zero(x ^ (kOnes * '"')) || has_zero(x ^ (kOnes * '\\'));
  }
  static bool NeedsNoEscape(char c) {
    return static_cast<unsigned char>(c) >= 0x20 && c != '"' && c != '\\';
  }
  // Nanoseconds as microseconds, in the shortest digits that read back to the same double
  // (exact for any time below 2^53 ns, about 104 days).
  void Micros(TimeNs ns) {
    // Below 2^41 us the double nearest ns / 1000 is at most 2^-12 us from its neighbours'
    // midpoints, closer than any other decimal of at most 3 fraction digits (those differ by
    // 0.001 or more): the exact quotient, its trailing zeros cut, is the shortest round trip,
    // which fmt writes in fixed notation (it uses an exponent from 1e16 or under 1e-4 only).
    constexpr TimeNs kExactNs = (TimeNs{1} << 41) * 1000;
    if (ns <= -kExactNs || ns >= kExactNs) {
      Format("{}", static_cast<double>(ns) / 1e3);
      return;
    }
    if (ns < 0) *this << '-';
    const uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
    *this << static_cast<int64_t>(magnitude / 1000);
    unsigned fraction = static_cast<unsigned>(magnitude % 1000);
    if (fraction == 0) return;
    char digits[4] = {'.', static_cast<char>('0' + fraction / 100),
                      static_cast<char>('0' + fraction / 10 % 10),
                      static_cast<char>('0' + fraction % 10)};
    size_t size = 4;
    while (digits[size - 1] == '0') --size;
    Put(digits, size);
  }
  void Number(double value) {
    TERASIM_CHECK(std::isfinite(value), "trace value {} is not finite", value);
    // A whole number below 2^53 (FLOPs, bytes) is its own shortest round trip, written by fmt
    // without a fraction or exponent; -0 keeps fmt's sign.
    if (value >= 0 && value < 0x1p53 && value == std::floor(value) && !std::signbit(value)) {
      *this << static_cast<int64_t>(value);
      return;
    }
    Format("{}", value);
  }
  // Events are separated by ",\n"; the first has no separator.
  void BeginEvent() {
    if (!first_event_) *this << ",\n";
    first_event_ = false;
    if (size_ >= kFlushBytes) Flush();
  }
  void Flush() {
    out_.write(buf_.get(), static_cast<std::streamsize>(size_));
    size_ = 0;
  }

 private:
  // Copied inline: an event is a few dozen short pieces.
  void Put(const char* data, size_t size) {
    if (size > kCapacity - size_) {
      Flush();
      if (size > kCapacity) {
        out_.write(data, static_cast<std::streamsize>(size));
        return;
      }
    }
    std::memcpy(buf_.get() + size_, data, size);
    size_ += size;
  }
  template <typename... Args>
  void Format(fmt::format_string<Args...> format, Args&&... args) {
    fmt::memory_buffer text;
    fmt::format_to(std::back_inserter(text), format, std::forward<Args>(args)...);
    Put(text.data(), text.size());
  }

  static constexpr size_t kFlushBytes = 1 << 20;
  static constexpr size_t kCapacity = 2 * kFlushBytes;
  std::ostream& out_;
  std::unique_ptr<char[]> buf_;
  size_t size_ = 0;
  bool first_event_ = true;
};

// WriteChromeTrace with the rows' links (nullptr: no RECV split, no flows).
void WriteLinked(const Trace& trace, const std::vector<CounterSeries>& counters,
                 std::ostream& stream, const TraceLinks* links) {
  // One tid per stream name, the same on every device, in name order (tid 0 is left free).
  std::vector<std::string_view> streams;
  std::vector<int> tid = StreamRanks(trace.rows, &streams);  // of each row
  for (int& t : tid) ++t;
  // (device, tid), distinct, in (device, stream name) order; rows come in long runs of one.
  std::vector<std::pair<int, int>> tracks;
  for (size_t i = 0; i < trace.rows.size(); ++i) {
    const std::pair<int, int> track(trace.rows[i].device, tid[i]);
    if (tracks.empty() || tracks.back() != track) tracks.push_back(track);
  }
  std::sort(tracks.begin(), tracks.end());
  tracks.erase(std::unique(tracks.begin(), tracks.end()), tracks.end());
  std::vector<int> devices;  // distinct, ascending
  for (const auto& [d, t] : tracks) {
    if (devices.empty() || devices.back() != d) devices.push_back(d);
  }

  JsonOut out(stream);
  out << "{\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"run_kind\":";
  out.Quote(trace.run_kind);
  out << ",\"label\":";
  out.Quote(trace.label);
  out << ",\"metadata\":{";
  bool first = true;
  for (const auto& [k, v] : trace.metadata) {
    out << (first ? "" : ",");
    out.Quote(k);
    out << ':';
    out.Quote(v);
    first = false;
  }
  out << "}},\n\"traceEvents\":[\n";

  for (int d : devices) {
    out.BeginEvent();
    out << R"({"name":"process_name","ph":"M","pid":)" << d << R"(,"tid":0,"args":{"name":"GPU )"
        << d << "\"}}";
    out.BeginEvent();
    out << R"({"name":"process_sort_index","ph":"M","pid":)" << d
        << R"(,"tid":0,"args":{"sort_index":)" << d << "}}";
  }
  for (const auto& [d, t] : tracks) {
    out.BeginEvent();
    out << R"({"name":"thread_name","ph":"M","pid":)" << d << R"(,"tid":)" << t
        << R"(,"args":{"name":)";
    out.Quote(streams[t - 1]);
    out << "}}";
    out.BeginEvent();
    out << R"({"name":"thread_sort_index","ph":"M","pid":)" << d << R"(,"tid":)" << t
        << R"(,"args":{"sort_index":)" << t << "}}";
  }

  const std::vector<size_t> canonical = CanonicalRowOrder(trace.rows);
  // When each linked RECV's data began to move (RecvTransferStarts), -1 where none is known.
  std::vector<TimeNs> transfer_start;
  if (links != nullptr) {
    transfer_start.assign(trace.rows.size(), -1);
    for (const auto& [recv, start] : RecvTransferStarts(trace, *links)) {
      transfer_start[recv] = start;
    }
  }
  for (size_t i : canonical) {
    const TraceRow& row = trace.rows[i];
    TERASIM_CHECK(row.end_ns >= row.start_ns, "trace row {} ends ({}) before it starts ({})",
                  row.key, row.end_ns, row.start_ns);
    const std::string_view kind = OpKindName(row.kind);
    out.BeginEvent();
    out << R"({"name":)";
    out.Quote(row.key);
    out << R"(,"cat":")" << kind << R"(","ph":"X","pid":)" << row.device << R"(,"tid":)" << tid[i]
        << R"(,"ts":)";
    out.Micros(row.start_ns);
    out << R"(,"dur":)";
    out.Micros(row.end_ns - row.start_ns);
    out << R"(,"args":{"key":)";
    out.Quote(row.key);
    out << R"(,"kind":")" << kind << R"(","iteration":)" << row.iteration << R"(,"stream":)";
    out.Quote(row.stream);
    out << R"(,"bytes":)" << static_cast<int64_t>(row.bytes) << R"(,"flops":)";
    out.Number(row.flops);
    out << "}}";
    if (transfer_start.empty() || transfer_start[i] < 0) continue;
    auto part = [&](std::string_view name, TimeNs begin, TimeNs end) {
      out.BeginEvent();
      out << R"({"name":")" << name << R"(","cat":"recv.)" << name << R"(","ph":"X","pid":)"
          << row.device << R"(,"tid":)" << tid[i] << R"(,"ts":)";
      out.Micros(begin);
      out << R"(,"dur":)";
      out.Micros(end - begin);
      out << R"(,"args":{"part":")" << name << R"(","of":)";
      out.Quote(row.key);
      out << "}}";
    };
    if (transfer_start[i] > row.start_ns) part("wait", row.start_ns, transfer_start[i]);
    part("transfer", transfer_start[i], row.end_ns);
  }

  // Flows, numbered in the canonical order of the RECV / the first member.
  std::vector<size_t> position(trace.rows.size());
  for (size_t k = 0; k < canonical.size(); ++k) position[canonical[k]] = k;
  auto flow = [&](char ph, std::string_view cat, std::string_view name, int64_t id, size_t r,
                  TimeNs ts) {
    const TraceRow& row = trace.rows[r];
    out.BeginEvent();
    out << R"({"name":")" << name << R"(","cat":")" << cat << R"(","ph":")" << ph << R"(","id":)"
        << id << R"(,"pid":)" << row.device << R"(,"tid":)" << tid[r] << R"(,"ts":)";
    out.Micros(ts);
    out << (ph == 's' ? "" : R"(,"bp":"e")") << '}';
  };
  if (links != nullptr) {
    std::vector<TraceLinks::P2p> p2p = links->p2p;
    std::sort(p2p.begin(), p2p.end(), [&](const TraceLinks::P2p& a, const TraceLinks::P2p& b) {
      return position[a.recv] < position[b.recv];
    });
    int64_t id = 0;
    for (const TraceLinks::P2p& p : p2p) {
      ++id;
      flow('s', "p2p", "SEND->RECV", id, p.send, trace.rows[p.send].start_ns);
      flow('f', "p2p", "SEND->RECV", id, p.recv, transfer_start[p.recv]);
    }
    std::vector<const std::vector<size_t>*> collectives;
    for (const std::vector<size_t>& members : links->collectives) {
      if (members.size() >= 2) collectives.push_back(&members);
    }
    std::sort(collectives.begin(), collectives.end(), [&](const auto* a, const auto* b) {
      return position[a->front()] < position[b->front()];
    });
    for (const std::vector<size_t>* members : collectives) {
      ++id;
      const std::string_view name = OpKindName(trace.rows[members->front()].kind);
      for (size_t k = 0; k < members->size(); ++k) {
        const char ph = k == 0 ? 's' : k + 1 == members->size() ? 'f' : 't';
        const size_t r = (*members)[k];
        flow(ph, "collective", name, id, r, trace.rows[r].start_ns);
      }
    }
  }

  if (!counters.empty()) {
    const int pid = devices.empty() ? 0 : *devices.rbegin() + 1;
    out.BeginEvent();
    out << R"({"name":"process_name","ph":"M","pid":)" << pid
        << R"(,"tid":0,"args":{"name":"counters"}})";
    out.BeginEvent();
    out << R"({"name":"process_sort_index","ph":"M","pid":)" << pid
        << R"(,"tid":0,"args":{"sort_index":)" << pid << "}}";
    for (const CounterSeries& series : counters) {
      for (const CounterSample& sample : series.samples) {
        out.BeginEvent();
        out << R"({"name":)";
        out.Quote(series.name);
        out << R"(,"ph":"C","pid":)" << pid << R"(,"tid":0,"ts":)";
        out.Micros(sample.time_ns);
        out << R"(,"args":{)";
        out.Quote(series.value_name);
        out << ':';
        out.Number(sample.value);
        out << "}}";
      }
    }
  }
  out << "\n]}\n";
  out.Flush();
}

}  // namespace

void WriteChromeTrace(const Trace& trace, const std::vector<CounterSeries>& counters,
                      std::ostream& out, const Schedule* schedule) {
  if (schedule == nullptr) {
    WriteLinked(trace, counters, out, nullptr);
    return;
  }
  const TraceLinks links = LinkTrace(*schedule, trace);
  WriteLinked(trace, counters, out, &links);
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

void WriteChromeTraceFile(const std::string& path, const Trace& trace, const TraceLinks& links,
                          const std::vector<CounterSeries>& counters) {
  AtomicFile file(path);
  WriteLinked(trace, counters, file.stream(), &links);
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

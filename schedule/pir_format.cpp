#include "schedule/pir_format.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/limits.h"

namespace terasim {
namespace {

constexpr std::string_view kMagic = "terasim-pir";

std::string JoinInts(const std::vector<int>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(values[i]);
  }
  return out;
}

std::vector<std::string_view> SplitWhitespace(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    parts.push_back(text.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

// The largest value a field may take, and the name of that limit for messages.
struct Limit {
  int64_t value;
  const char* name;
};
constexpr Limit kDevices{limits::kMaxDevices, "kMaxDevices"};
constexpr Limit kDeviceIndex{limits::kMaxDevices - 1, "kMaxDevices"};
constexpr Limit kLayers{limits::kMaxLayers, "kMaxLayers"};
constexpr Limit kSequence{limits::kMaxSequence, "kMaxSequence"};
constexpr Limit kBatch{limits::kMaxBatch, "kMaxBatch"};
constexpr Limit kMicrobatchIndex{limits::kMaxMicrobatches - 1, "kMaxMicrobatches"};
constexpr Limit kBytes{limits::kMaxBytes, "kMaxBytes"};
constexpr Limit kVersion{INT32_MAX, "INT32_MAX"};
constexpr Limit kZeroStage{3, "ZeRO stage 3"};

// Parses the text of one line; `Fail` prefixes every message with origin:line[: key].
class LineParser {
 public:
  LineParser(const std::string& origin, int line) : origin_(origin), line_(line) {}
  void SetKey(std::string_view key) { key_ = std::string(key); }

  template <typename... Args>
  [[noreturn]] void Fail(fmt::format_string<Args...> format, Args&&... args) const {
    std::string message = fmt::format(format, std::forward<Args>(args)...);
    if (key_.empty()) ThrowInput("{}:{}: {}", origin_, line_, message);
    ThrowInput("{}:{}: {}: {}", origin_, line_, key_, message);
  }

  // An integer in [min_value, limit.value]; the error names the limit (models/limits.h).
  int64_t Int(std::string_view field, std::string_view text, int64_t min_value, Limit limit) const {
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc::result_out_of_range) {
      Fail("{}: '{}' exceeds the limit {} ({}, models/limits.h)", field, text, limit.value,
           limit.name);
    }
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      Fail("{}: '{}' is not an integer", field, text);
    }
    if (value < min_value) Fail("{}: {} must be >= {}", field, value, min_value);
    if (value > limit.value) {
      Fail("{}: {} exceeds the limit {} ({}, models/limits.h)", field, value, limit.value,
           limit.name);
    }
    return value;
  }
  int Int32(std::string_view field, std::string_view text, int64_t min_value, Limit limit) const {
    return static_cast<int>(Int(field, text, min_value, limit));
  }

  Range ParseRange(std::string_view field, std::string_view text, Limit limit) const {
    size_t dash = text.find('-');
    if (dash == std::string_view::npos || dash == 0)
      Fail("{}: '{}' is not a range A-B", field, text);
    Range r{Int32(field, text.substr(0, dash), 0, limit),
            Int32(field, text.substr(dash + 1), 0, limit)};
    if (r.end <= r.begin) Fail("{}: range {}-{} is empty", field, r.begin, r.end);
    return r;
  }

  std::string Name(std::string_view field, std::string_view text) const {
    if (text.empty()) Fail("{}: must not be empty", field);
    if (text.find(',') != std::string_view::npos || text.find('=') != std::string_view::npos) {
      Fail("{}: '{}' must not contain ',' or '='", field, text);
    }
    return std::string(text);
  }

 private:
  const std::string& origin_;
  int line_;
  std::string key_;
};

void ParseOpFields(const std::vector<std::string_view>& words, LineParser& p, Op& op) {
  std::set<std::string_view> seen;
  for (size_t i = 3; i < words.size(); ++i) {
    std::string_view word = words[i];
    size_t eq = word.find('=');
    if (eq == std::string_view::npos) p.Fail("'{}' is not a name=value field", word);
    std::string_view name = word.substr(0, eq);
    std::string_view value = word.substr(eq + 1);
    if (!seen.insert(name).second) p.Fail("field '{}' given twice", name);
    if (name == "dev") {
      op.device = p.Int32(name, value, 0, kDeviceIndex);
    } else if (name == "stream") {
      op.stream = p.Name(name, value);
    } else if (name == "stage") {
      op.stage = p.Int32(name, value, 0, kDeviceIndex);
    } else if (name == "layers") {
      op.layers = p.ParseRange(name, value, kLayers);
    } else if (name == "part") {
      if (value == "attn") {
        op.part = LayerPart::kAttention;
      } else if (value == "mlp") {
        op.part = LayerPart::kMlp;
      } else {
        p.Fail("part: '{}' must be attn or mlp", value);
      }
    } else if (name == "mb") {
      op.microbatch = p.Int32(name, value, 0, kMicrobatchIndex);
    } else if (name == "rows") {
      op.rows = p.Int32(name, value, 1, kBatch);
    } else if (name == "tokens") {
      op.tokens = p.ParseRange(name, value, kSequence);
    } else if (name == "group") {
      op.group = p.Name(name, value);
    } else if (name == "peer") {
      op.peer = p.Int32(name, value, 0, kDeviceIndex);
    } else if (name == "tensor") {
      op.tensor = p.Name(name, value);
    } else if (name == "bytes") {
      op.bytes = p.Int(name, value, 0, kBytes);
    } else if (name == "recompute") {
      std::optional<Recompute> r = ParseRecompute(value);
      if (!r || *r == Recompute::kNone) p.Fail("recompute: '{}' must be selective or full", value);
      op.recompute = *r;
    } else if (name == "sp") {
      if (value != "1") p.Fail("sp: '{}' must be 1", value);
      op.sequence_parallel = true;
    } else if (name == "zero") {
      op.zero = static_cast<int>(p.Int(name, value, 1, kZeroStage));
      if (op.zero > 3) p.Fail("zero: {} must be 1, 2 or 3", op.zero);
    } else if (name == "after") {
      for (std::string_view dep : Split(value, ',')) {
        if (dep.empty()) p.Fail("after: empty key in '{}'", value);
        op.after.emplace_back(dep);
      }
    } else {
      p.Fail("unknown field '{}'", name);
    }
  }
  if (!seen.count("dev")) p.Fail("missing field 'dev'");
  if (!seen.count("stream")) p.Fail("missing field 'stream'");
}

}  // namespace

std::string WritePir(const Schedule& s) {
  std::string out;
  out += fmt::format("{} {}\n", kMagic, kPirFormatVersion);
  out += fmt::format("model {}\n", s.model);
  out += fmt::format("layers {}\n", s.layers);
  out += fmt::format("sequence {}\n", s.sequence);
  out += fmt::format("devices {}\n", s.devices);
  out += fmt::format("batch {}\n", s.batch);
  out += fmt::format("shape strategy={} dp={} pp={} tp={} v={}\n",
                     s.shape.strategy.empty() ? "-" : s.shape.strategy, s.shape.dp, s.shape.pp,
                     s.shape.tp, s.shape.virtual_stages);
  for (const Group& g : s.groups) out += fmt::format("group {} {}\n", g.name, JoinInts(g.ranks));
  int last_device = -1;
  for (const Op& op : s.ops) {
    if (op.device != last_device) {
      out += fmt::format("# device {}\n", op.device);
      last_device = op.device;
    }
    out +=
        fmt::format("op {} {} dev={} stream={}", op.key, OpKindName(op.kind), op.device, op.stream);
    if (op.stage >= 0) out += fmt::format(" stage={}", op.stage);
    if (!op.layers.Empty()) out += fmt::format(" layers={}-{}", op.layers.begin, op.layers.end);
    if (op.part != LayerPart::kWhole) out += fmt::format(" part={}", LayerPartName(op.part));
    if (op.microbatch >= 0) out += fmt::format(" mb={}", op.microbatch);
    if (op.rows > 0) out += fmt::format(" rows={}", op.rows);
    if (!op.tokens.Empty()) out += fmt::format(" tokens={}-{}", op.tokens.begin, op.tokens.end);
    if (!op.group.empty()) out += fmt::format(" group={}", op.group);
    if (op.peer >= 0) out += fmt::format(" peer={}", op.peer);
    if (!op.tensor.empty()) out += fmt::format(" tensor={}", op.tensor);
    if (op.bytes > 0) out += fmt::format(" bytes={}", op.bytes);
    if (op.recompute != Recompute::kNone) {
      out += fmt::format(" recompute={}", RecomputeName(op.recompute));
    }
    if (op.sequence_parallel) out += " sp=1";
    if (op.zero > 0) out += fmt::format(" zero={}", op.zero);
    if (!op.after.empty()) {
      out += " after=";
      for (size_t i = 0; i < op.after.size(); ++i) {
        if (i > 0) out += ',';
        out += op.after[i];
      }
    }
    out += '\n';
  }
  return out;
}

Schedule ReadPir(const std::string& text, const std::string& origin) {
  Schedule s;
  s.source = origin;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  // Header lines must come in this order, each once, before groups and ops.
  const std::vector<std::string> header = {"model",   "layers", "sequence",
                                           "devices", "batch",  "shape"};
  size_t next_header = 0;
  bool saw_magic = false;
  while (std::getline(in, line)) {
    ++line_no;
    LineParser p(origin, line_no);
    std::vector<std::string_view> words = SplitWhitespace(line);
    if (!saw_magic) {
      if (words.size() != 2 || words[0] != kMagic) {
        p.Fail("first line must be '{} {}'", kMagic, kPirFormatVersion);
      }
      int64_t version = p.Int("version", words[1], 0, kVersion);
      if (version != kPirFormatVersion) {
        p.Fail("format version {} is not supported (this terasim reads version {})", version,
               kPirFormatVersion);
      }
      saw_magic = true;
      continue;
    }
    if (words.empty() || words[0].front() == '#') continue;
    std::string_view directive = words[0];
    if (next_header < header.size()) {
      if (directive != header[next_header]) {
        p.Fail("expected header line '{}', found '{}'", header[next_header], directive);
      }
      ++next_header;
      if (directive == "shape") {
        for (size_t i = 1; i < words.size(); ++i) {
          size_t eq = words[i].find('=');
          if (eq == std::string_view::npos) p.Fail("shape: '{}' is not name=value", words[i]);
          std::string_view name = words[i].substr(0, eq), value = words[i].substr(eq + 1);
          if (name == "strategy") {
            s.shape.strategy = value == "-" ? "" : std::string(value);
          } else if (name == "dp") {
            s.shape.dp = p.Int32(name, value, 1, kDevices);
          } else if (name == "pp") {
            s.shape.pp = p.Int32(name, value, 1, kDevices);
          } else if (name == "tp") {
            s.shape.tp = p.Int32(name, value, 1, kDevices);
          } else if (name == "v") {
            s.shape.virtual_stages = p.Int32(name, value, 1, kLayers);
          } else {
            p.Fail("shape: unknown field '{}'", name);
          }
        }
        continue;
      }
      if (words.size() != 2) p.Fail("'{}' takes exactly one value", directive);
      if (directive == "model") {
        s.model = std::string(words[1]);
      } else if (directive == "layers") {
        s.layers = p.Int32(directive, words[1], 1, kLayers);
      } else if (directive == "sequence") {
        s.sequence = p.Int32(directive, words[1], 1, kSequence);
      } else if (directive == "devices") {
        s.devices = p.Int32(directive, words[1], 1, kDevices);
      } else if (directive == "batch") {
        s.batch = p.Int32(directive, words[1], 0, kBatch);
      }
      continue;
    }
    if (directive == "group") {
      if (words.size() != 3) p.Fail("group takes a name and a rank list");
      Group g;
      g.name = p.Name("group", words[1]);
      g.line = line_no;
      for (std::string_view r : Split(words[2], ',')) {
        if (g.ranks.size() >= static_cast<size_t>(limits::kMaxDevices)) {
          p.Fail("group ranks: more than the limit {} (kMaxDevices, models/limits.h)",
                 limits::kMaxDevices);
        }
        g.ranks.push_back(p.Int32("group ranks", r, 0, kDeviceIndex));
      }
      s.groups.push_back(std::move(g));
    } else if (directive == "op") {
      if (words.size() < 3) p.Fail("op takes a key, a kind and fields");
      if (s.ops.size() >= static_cast<size_t>(limits::kMaxOps)) {
        p.Fail("more than the limit {} ops (kMaxOps, models/limits.h)", limits::kMaxOps);
      }
      Op op;
      op.key = p.Name("key", words[1]);
      p.SetKey(op.key);
      op.line = line_no;
      std::optional<OpKind> kind = ParseOpKind(words[2]);
      if (!kind) p.Fail("unknown op kind '{}'", words[2]);
      op.kind = *kind;
      ParseOpFields(words, p, op);
      s.ops.push_back(std::move(op));
    } else {
      p.Fail("unknown directive '{}'", directive);
    }
  }
  if (!saw_magic)
    ThrowInput("{}:1: empty file (expected '{} {}')", origin, kMagic, kPirFormatVersion);
  if (next_header < header.size()) {
    ThrowInput("{}:{}: missing header line '{}'", origin, line_no, header[next_header]);
  }
  return s;
}

Schedule ReadPirFile(const std::string& path) { return ReadPir(ReadTextFile(path), path); }

void WritePirFile(const Schedule& schedule, const std::string& path) {
  // Write beside the target and rename, so that a failed write leaves no half file.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) ThrowInput("{}: cannot write", path);
    out << WritePir(schedule);
    if (!out.flush()) ThrowInput("{}: write failed", path);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) ThrowInput("{}: cannot write: {}", path, ec.message());
}

}  // namespace terasim

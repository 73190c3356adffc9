#include "schedule/pir_format.h"

#include <array>
#include <bit>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#ifdef __SSE2__
#include <emmintrin.h>  // WordEnd, sixteen bytes at a time
#endif

#include <fmt/format.h>

#include "models/errors.h"
#include "models/limits.h"
#include "schedule/compact_check.h"

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

// Splits `line` into `words` (cleared first; its capacity is reused across lines).
void SplitWhitespace(std::string_view line, std::vector<std::string_view>& words) {
  words.clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
}

// Calls `visit` with each part of `text` between `sep`s (an empty part where two meet).
template <typename Visit>
void ForEachPart(std::string_view text, char sep, Visit&& visit) {
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    visit(text.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
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
  void SetKey(std::string_view key) { key_ = key; }

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

  std::string_view Name(std::string_view field, std::string_view text) const {
    return Name(field, text, HasCommaOrEquals(text));
  }
  // The same with `comma_or_equals` == HasCommaOrEquals(text).
  std::string_view Name(std::string_view field, std::string_view text, bool comma_or_equals) const {
    if (text.empty()) Fail("{}: must not be empty", field);
    if (comma_or_equals) Fail("{}: '{}' must not contain ',' or '='", field, text);
    return text;
  }

  // Whether `text` holds a ',' or a '=', eight bytes at a time.
  static bool HasCommaOrEquals(std::string_view text) {
    constexpr uint64_t kOnes = 0x0101010101010101ULL;
    constexpr uint64_t kHigh = kOnes * 0x80;
    auto flagged = [](uint64_t word) {
      const uint64_t comma = word ^ (kOnes * ','), equals = word ^ (kOnes * '=');
      // A zero byte in either: the exact test (no false positives across bytes).
      auto zero = [](uint64_t v) { return ~(((v & ~kHigh) + ~kHigh) | v) & kHigh; };
      return (zero(comma) | zero(equals)) != 0;
    };
    const char* p = text.data();
    size_t n = text.size();
    for (; n >= 8; n -= 8, p += 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      if (flagged(word)) return true;
    }
    if (n == 0) return false;
    uint64_t word = 0;  // the zero padding is neither ',' nor '='
    std::memcpy(&word, p, n);
    return flagged(word);
  }

 private:
  const std::string& origin_;
  int line_;
  std::string_view key_;
};

// The op fields, as bits of the set already seen on a line.
namespace field {
enum Bit : uint32_t {
  kDev = 1u << 0,
  kStream = 1u << 1,
  kStage = 1u << 2,
  kLayers = 1u << 3,
  kPart = 1u << 4,
  kMb = 1u << 5,
  kRows = 1u << 6,
  kTokens = 1u << 7,
  kGroup = 1u << 8,
  kPeer = 1u << 9,
  kTensor = 1u << 10,
  kBytes = 1u << 11,
  kRecompute = 1u << 12,
  kSp = 1u << 13,
  kZero = 1u << 14,
  kAfter = 1u << 15,
};
// The bit's position, 0-15: what ParseOpFields switches on (a jump table; a switch on the bits
// themselves compiled to a search).
constexpr int Index(Bit bit) { return std::countr_zero(static_cast<uint32_t>(bit)); }
}  // namespace field

uint32_t FieldBit(std::string_view name) {
  // By length first: one comparison per field rather than up to sixteen.
  auto is = [&](std::string_view n, field::Bit bit) { return name == n ? bit : 0u; };
  switch (name.size()) {
    case 2:
      return name[0] == 'm' ? is("mb", field::kMb) : is("sp", field::kSp);
    case 3:
      return is("dev", field::kDev);
    case 4:
      switch (name[0]) {
        case 'p':
          return is("part", field::kPart) | is("peer", field::kPeer);
        case 'r':
          return is("rows", field::kRows);
        case 'z':
          return is("zero", field::kZero);
      }
      return 0;
    case 5:
      return name[0] == 's' ? is("stage", field::kStage)
                            : is("group", field::kGroup) | is("bytes", field::kBytes) |
                                  is("after", field::kAfter);
    case 6:
      return name[0] == 's'   ? is("stream", field::kStream)
             : name[0] == 'l' ? is("layers", field::kLayers)
             : name[0] == 't' ? is("tokens", field::kTokens) | is("tensor", field::kTensor)
                              : 0;
    case 9:
      return is("recompute", field::kRecompute);
  }
  return 0;
}

// One comparison for the characters of names and numbers (all above ' ').
bool IsSpace(char c) {
  return static_cast<unsigned char>(c) <= ' ' && (c == ' ' || c == '\t' || c == '\r');
}

// `name` (at most 8 characters) as a little-endian number, for FieldBitOfWord.
constexpr uint64_t NameWord(std::string_view name) {
  uint64_t word = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    word |= static_cast<uint64_t>(static_cast<unsigned char>(name[i])) << (8 * i);
  }
  return word;
}

// The field names of at most 7 characters ("recompute" is longer: FieldBit), as NameWord.
struct FieldName {
  uint64_t word = 0;
  uint32_t bit = 0;
};
constexpr std::array<FieldName, 15> kShortFields = {{
    {NameWord("dev"), field::kDev},
    {NameWord("stream"), field::kStream},
    {NameWord("stage"), field::kStage},
    {NameWord("layers"), field::kLayers},
    {NameWord("part"), field::kPart},
    {NameWord("mb"), field::kMb},
    {NameWord("rows"), field::kRows},
    {NameWord("tokens"), field::kTokens},
    {NameWord("group"), field::kGroup},
    {NameWord("peer"), field::kPeer},
    {NameWord("tensor"), field::kTensor},
    {NameWord("bytes"), field::kBytes},
    {NameWord("sp"), field::kSp},
    {NameWord("zero"), field::kZero},
    {NameWord("after"), field::kAfter},
}};

// A perfect hash of kShortFields into 32 slots (a multiplier found by trying; the
// static_assert below proves it collision free): one multiply and one compare per field
// rather than a search of fifteen.
constexpr uint64_t kFieldHashMultiplier = 0x8c5fe8f8dc3bf365ULL;
constexpr size_t FieldSlot(uint64_t word) { return (word * kFieldHashMultiplier) >> 59; }
constexpr std::array<FieldName, 32> kFieldTable = [] {
  std::array<FieldName, 32> table{};
  for (const FieldName& f : kShortFields) table[FieldSlot(f.word)] = f;
  return table;
}();
constexpr bool FieldTableHoldsAll() {
  for (const FieldName& f : kShortFields) {
    if (kFieldTable[FieldSlot(f.word)].word != f.word) return false;
  }
  return true;
}
static_assert(FieldTableHoldsAll(), "two field names share a slot: pick another multiplier");

// FieldBit of a name of at most 7 characters given as NameWord (zero above the name).
uint32_t FieldBitOfWord(uint64_t word) {
  const FieldName& f = kFieldTable[FieldSlot(word)];
  return f.word == word ? f.bit : 0;  // an empty slot holds word 0: the empty name, bit 0
}

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHigh = kOnes * 0x80;

// The high bit of each zero byte of `v` (exact: no false positives).
uint64_t ZeroBytes(uint64_t v) { return ~(((v & ~kHigh) + ~kHigh) | v) & kHigh; }

// The end of the word that starts at `p` (its first space, or `end`), eight bytes at a time;
// sets `comma_or_equals` when the word holds a ',' or a '='.
[[gnu::always_inline]] inline const char* WordEnd(const char* p, const char* end,
                                                  bool& comma_or_equals) {
  static_assert(std::endian::native == std::endian::little);
  while (true) {
#ifdef __SSE2__
    if (end - p >= 16) {
      // Sixteen bytes at a time: bytes up to ' ' (then checked for a separator), ',' and '='.
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i low = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(' ')), v);
      const __m128i comma = _mm_cmpeq_epi8(v, _mm_set1_epi8(','));
      const __m128i equals = _mm_cmpeq_epi8(v, _mm_set1_epi8('='));
      const unsigned flags =
          static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(low, _mm_or_si128(comma, equals))));
      if (flags == 0) {
        p += 16;
        continue;
      }
      p += std::countr_zero(flags);
    } else if (end - p >= 8) {
#else
    if (end - p >= 8) {
#endif
      uint64_t word;
      std::memcpy(&word, p, 8);
      // Bytes below '!' (then checked for a separator), ',' and '='. The lowest flagged byte
      // is exact: the first term's false positives sit above a true one.
      const uint64_t flags = ((word - kOnes * '!') & ~word & kHigh) |
                             ZeroBytes(word ^ (kOnes * ',')) | ZeroBytes(word ^ (kOnes * '='));
      if (flags == 0) {
        p += 8;
        continue;
      }
      p += std::countr_zero(flags) / 8;
    } else {
      while (p < end && !IsSpace(*p) && *p != ',' && *p != '=') ++p;
      if (p == end) return p;
    }
    if (IsSpace(*p)) return p;
    if (*p == ',' || *p == '=') comma_or_equals = true;
    ++p;
  }
}

// The words of a line, one at a time (separated as SplitWhitespace separates them).
class WordCursor {
 public:
  explicit WordCursor(std::string_view line) : p_(line.data()), end_(line.data() + line.size()) {}
  // The next word, or an empty view at the end of the line; `comma_or_equals` is set when it
  // holds a ',' or a '='.
  std::string_view Next(bool& comma_or_equals) {
    while (p_ < end_ && IsSpace(*p_)) ++p_;
    const char* start = p_;
    comma_or_equals = false;
    p_ = WordEnd(p_, end_, comma_or_equals);
    return std::string_view(start, static_cast<size_t>(p_ - start));
  }
  std::string_view Next() {
    bool comma_or_equals;
    return Next(comma_or_equals);
  }
  // The rest of the line is read by ParseOpFields from here.
  const char*& Position() { return p_; }
  const char* End() const { return end_; }

 private:
  const char* p_;
  const char* end_;
};

// Field values read in place, advancing `q` past the value: the common forms (plain digits,
// "A-B", a name) are checked here; anything else goes to LineParser's checked path with the
// whole value, for the same result or message.
class FieldReader {
 public:
  FieldReader(const LineParser& p, const char* q, const char* end) : p_(p), q_(q), end_(end) {}
  // The read position, which the caller may move too. (Held here rather than by reference,
  // so that it stays in a register.)
  const char*& Position() { return q_; }

  [[gnu::always_inline]] int64_t Int(std::string_view field, int64_t min_value, Limit limit) {
    const char* start = q_;
    const int64_t value = Digits(18);
    if (value >= min_value && value >= 0 && AtWordEnd() && value <= limit.value) return value;
    return p_.Int(field, Rest(start), min_value, limit);
  }
  [[gnu::always_inline]] int Int32(std::string_view field, int64_t min_value, Limit limit) {
    return static_cast<int>(Int(field, min_value, limit));
  }

  [[gnu::always_inline]] Range ParseRange(std::string_view field, Limit limit) {
    const char* start = q_;
    const int64_t begin = Digits(9);
    if (begin >= 0 && q_ < end_ && *q_ == '-') {
      ++q_;
      const int64_t end = Digits(9);
      if (end > begin && end <= limit.value && AtWordEnd()) {
        return Range{static_cast<int>(begin), static_cast<int>(end)};
      }
    }
    return p_.ParseRange(field, Rest(start), limit);
  }

  [[gnu::always_inline]] std::string_view Name(std::string_view field) {
    const char* start = q_;
    bool comma_or_equals = false;
    q_ = WordEnd(q_, end_, comma_or_equals);
    return p_.Name(field, std::string_view(start, static_cast<size_t>(q_ - start)),
                   comma_or_equals);
  }

  // The value as text, for the fields read as words.
  [[gnu::always_inline]] std::string_view Word() {
    const char* start = q_;
    return Rest(start);
  }

 private:
  // 1 to `most` (8 to 18) digits at q_, which moves past them: their value, else -1.
  [[gnu::always_inline]] int64_t Digits(ptrdiff_t most) {
    if (end_ - q_ >= 8) {
      // Eight bytes at once: up to seven digits and the byte after them (the common case).
      uint64_t word;
      std::memcpy(&word, q_, 8);
      const int n = LeadingDigits(word);
      if (n < 8) {
        if (n == 0) return -1;
        q_ += n;
        return DigitsValue(word << (8 * (8 - n)));
      }
    }
    const char* start = q_;
    int64_t value = 0;
    while (q_ < end_ && q_ - start < most) {
      const unsigned digit = static_cast<unsigned char>(*q_) - static_cast<unsigned>('0');
      if (digit > 9) break;
      value = value * 10 + digit;
      ++q_;
    }
    return q_ > start ? value : -1;
  }
  // How many of the bytes of `word` (in text order) are digits before the first that is not
  // (8: all). A byte is a digit when its high nibble is 3 and stays 3 with 6 added (no carry
  // reaches the first non-digit: the bytes below it are digits, 0x36-0x3f with 6 added).
  static int LeadingDigits(uint64_t word) {
    constexpr uint64_t kHighNibbles = kOnes * 0xf0;
    const uint64_t not_digit = ((word & kHighNibbles) ^ (kOnes * 0x30)) |
                               (((word + kOnes * 6) & kHighNibbles) ^ (kOnes * 0x30));
    return not_digit == 0 ? 8 : std::countr_zero(not_digit) / 8;
  }
  // The number whose digits are the high bytes of `word` in text order, with zero bytes (as
  // leading zeros) below them: pairs, then fours, then all eight combined by multiplies.
  static int64_t DigitsValue(uint64_t word) {
    word = ((word & (kOnes * 0x0f)) * (10 * 256 + 1)) >> 8;
    word = ((word & 0x00ff00ff00ff00ffULL) * (100 * 65536 + 1)) >> 16;
    word = ((word & 0x0000ffff0000ffffULL) * (10000 * (uint64_t{1} << 32) + 1)) >> 32;
    return static_cast<int64_t>(word);
  }
  [[gnu::always_inline]] bool AtWordEnd() const { return q_ == end_ || IsSpace(*q_); }
  // The word from `start` on; q_ moves to its end.
  [[gnu::always_inline]] std::string_view Rest(const char* start) {
    bool comma_or_equals = false;
    q_ = WordEnd(start, end_, comma_or_equals);
    return std::string_view(start, static_cast<size_t>(q_ - start));
  }

  const LineParser& p_;
  const char* q_;
  const char* end_;
};

// Interns op fields whose value is mostly the one of the previous op (the stream, the group,
// an `after` naming a recent op) by comparing with those first: most look-ups then neither
// hash nor touch the table.
class RecentNames {
 public:
  int Intern(NamePool& names, std::string_view text, int& last) {
    if (last >= 0 && NamePool::Same(names.View(last), text)) return last;
    last = names.Intern(text);
    return last;
  }
  int InternAfter(NamePool& names, std::string_view text) {
    for (int id : keys_) {
      if (id >= 0 && NamePool::Same(names.View(id), text)) return id;
    }
    return names.Intern(text);
  }
  void AddKey(int id) {
    keys_[next_] = id;
    next_ = (next_ + 1) % keys_.size();
  }
  int stream = -1;
  int group = -1;

 private:
  std::array<int, 4> keys_{-1, -1, -1, -1};  // the keys of the last ops
  size_t next_ = 0;
};

// The fields of an op line (the words after the kind) into `op`; strings are interned in
// `s.names` and `after` references appended to `s.after_name`, except the tensor: its name
// and NamePool::Hash are returned in `tensor` and `tensor_hash` (empty when none), its table
// slot being loaded (NamePool::Prefetch).
void ParseOpFields(WordCursor& words, LineParser& p, CompactSchedule& s, RecentNames& recent,
                   CompactOp& op, std::string_view& tensor, uint64_t& tensor_hash) {
  uint32_t seen = 0;
  // One pass over each field: its name up to the '=', then its value in place (FieldReader).
  const char* const end = words.End();
  FieldReader read(p, words.Position(), end);
  const char*& q = read.Position();
  while (true) {
    if (q < end && *q == ' ') ++q;  // the one space between fields
    while (q < end && IsSpace(*q)) ++q;
    if (q == end) break;
    const char* const start = q;
    uint32_t bit = 0;
    // A name of up to 7 characters and its '=' are in the next eight bytes (all but one
    // field name): found by one load and compared as a number.
    uint64_t word = 0;
    uint64_t equals = 0;
    if (end - q >= 8) {
      std::memcpy(&word, q, 8);
      equals = ZeroBytes(word ^ (kOnes * '='));
      const uint64_t below = (word - kOnes * '!') & ~word & kHigh;  // lowest one exact
      if (below != 0 && std::countr_zero(below) < std::countr_zero(equals)) equals = 0;
    }
    if (equals != 0) {
      const int length = std::countr_zero(equals) / 8;
      q += length;
      bit = FieldBitOfWord(word & ((uint64_t{1} << (8 * length)) - 1));
    } else {
      while (q < end && *q != '=' && !IsSpace(*q)) ++q;
      if (q == end || *q != '=') {
        p.Fail("'{}' is not a name=value field",
               std::string_view(start, static_cast<size_t>(q - start)));
      }
      bit = FieldBit(std::string_view(start, static_cast<size_t>(q - start)));
    }
    const std::string_view name(start, static_cast<size_t>(q - start));
    ++q;  // the value's first character
    if (bit == 0) p.Fail("unknown field '{}'", name);
    if (seen & bit) p.Fail("field '{}' given twice", name);
    seen |= bit;
    switch (std::countr_zero(bit)) {
      case field::Index(field::kDev):
        op.device = read.Int32(name, 0, kDeviceIndex);
        break;
      case field::Index(field::kStream):
        op.stream = recent.Intern(s.names, read.Name(name), recent.stream);
        break;
      case field::Index(field::kStage):
        op.stage = read.Int32(name, 0, kDeviceIndex);
        break;
      case field::Index(field::kLayers):
        op.layers = read.ParseRange(name, kLayers);
        break;
      case field::Index(field::kPart): {
        const std::string_view value = read.Word();
        if (value == "attn") {
          op.part = LayerPart::kAttention;
        } else if (value == "mlp") {
          op.part = LayerPart::kMlp;
        } else {
          p.Fail("part: '{}' must be attn or mlp", value);
        }
        break;
      }
      case field::Index(field::kMb):
        op.microbatch = read.Int32(name, 0, kMicrobatchIndex);
        break;
      case field::Index(field::kRows):
        op.rows = read.Int32(name, 1, kBatch);
        break;
      case field::Index(field::kTokens):
        op.tokens = read.ParseRange(name, kSequence);
        break;
      case field::Index(field::kGroup):
        op.group = recent.Intern(s.names, read.Name(name), recent.group);
        break;
      case field::Index(field::kPeer):
        op.peer = read.Int32(name, 0, kDeviceIndex);
        break;
      case field::Index(field::kTensor):
        tensor = read.Name(name);  // interned by the caller, once its table slot is loaded
        tensor_hash = NamePool::Hash(tensor);
        s.names.Prefetch(tensor_hash);
        break;
      case field::Index(field::kBytes):
        op.bytes = read.Int(name, 0, kBytes);
        break;
      case field::Index(field::kRecompute): {
        const std::string_view value = read.Word();
        std::optional<Recompute> r = ParseRecompute(value);
        if (!r || *r == Recompute::kNone) {
          p.Fail("recompute: '{}' must be selective or full", value);
        }
        op.recompute = *r;
        break;
      }
      case field::Index(field::kSp): {
        const std::string_view value = read.Word();
        if (value != "1") p.Fail("sp: '{}' must be 1", value);
        op.sequence_parallel = true;
        break;
      }
      case field::Index(field::kZero): {
        const int64_t zero = read.Int(name, 1, kZeroStage);
        if (zero > 3) p.Fail("zero: {} must be 1, 2 or 3", zero);
        op.zero = static_cast<int8_t>(zero);
        break;
      }
      case field::Index(field::kAfter): {
        const std::string_view value = read.Word();
        ForEachPart(value, ',', [&](std::string_view dep) {
          if (dep.empty()) p.Fail("after: empty key in '{}'", value);
          s.after_name.push_back(recent.InternAfter(s.names, dep));
        });
        break;
      }
    }
  }
  if (!(seen & field::kDev)) p.Fail("missing field 'dev'");
  if (!(seen & field::kStream)) p.Fail("missing field 'stream'");
}

// Reads .pir text line by line into a CompactSchedule; holds no line after it is parsed.
class PirReader {
 public:
  explicit PirReader(const std::string& origin) : origin_(origin) {
    s_.source = origin;
    for (size_t k = 0; k < kind_names_.size(); ++k) {
      kind_names_[k] = OpKindName(static_cast<OpKind>(k));
    }
  }

  void Line(std::string_view line) {
    ++line_no_;
    if (line.size() > 2 && line[0] == 'o' && line[1] == 'p' && IsSpace(line[2]) && saw_magic_ &&
        next_header_ == kHeader.size()) {  // "op " first: most lines
      WordCursor cursor(line.substr(3));
      OpLine(cursor);
      return;
    }
    WordCursor cursor(line);
    const std::string_view first = cursor.Next();
    if (first == "op" && saw_magic_ && next_header_ == kHeader.size()) {
      OpLine(cursor);
      return;
    }
    LineParser p(origin_, line_no_);
    SplitWhitespace(line, words_);
    const std::vector<std::string_view>& words = words_;
    if (!saw_magic_) {
      if (words.size() != 2 || words[0] != kMagic) {
        p.Fail("first line must be '{} {}'", kMagic, kPirFormatVersion);
      }
      int64_t version = p.Int("version", words[1], 0, kVersion);
      if (version != kPirFormatVersion) {
        p.Fail("format version {} is not supported (this terasim reads version {})", version,
               kPirFormatVersion);
      }
      saw_magic_ = true;
      return;
    }
    if (words.empty() || words[0].front() == '#') return;
    std::string_view directive = words[0];
    if (next_header_ < kHeader.size()) {
      Header(p, directive);
      return;
    }
    if (directive == "group") {
      if (words.size() != 3) p.Fail("group takes a name and a rank list");
      Group g;
      g.name = std::string(p.Name("group", words[1]));
      g.line = line_no_;
      ForEachPart(words[2], ',', [&](std::string_view r) {
        if (g.ranks.size() >= static_cast<size_t>(limits::kMaxDevices)) {
          p.Fail("group ranks: more than the limit {} (kMaxDevices, models/limits.h)",
                 limits::kMaxDevices);
        }
        g.ranks.push_back(p.Int32("group ranks", r, 0, kDeviceIndex));
      });
      s_.groups.push_back(std::move(g));
    } else {
      p.Fail("unknown directive '{}'", directive);
    }
  }

  // Room for about `ops` ops, `names` names of `chars` characters and `after` references
  // (hints).
  void Reserve(size_t ops, size_t names, size_t chars, size_t after) {
    ReserveHuge(s_.ops, ops);
    ReserveHuge(s_.after_offset, ops + 1);
    ReserveHuge(s_.after_name, after);
    // The table for the keys (one per op): a first block's other names (tensors of its
    // collectives) overstate the rest of a file, and a table of twice the size misses the cache
    // more (a 979 k-op check: 32 MB of table for 1.1 M names); further names grow it.
    s_.names.Reserve(names, chars, std::min(names, ops));
  }
  const CompactSchedule& Schedule() const { return s_; }

  CompactSchedule Finish() {
    if (!saw_magic_) {
      ThrowInput("{}:1: empty file (expected '{} {}')", origin_, kMagic, kPirFormatVersion);
    }
    if (next_header_ < kHeader.size()) {
      ThrowInput("{}:{}: missing header line '{}'", origin_, line_no_, kHeader[next_header_]);
    }
    InternTensor();
    s_.names.Seal();
    return std::move(s_);
  }

 private:
  // Header lines must come in this order, each once, before groups and ops.
  static constexpr std::array<std::string_view, 6> kHeader = {"model",   "layers", "sequence",
                                                              "devices", "batch",  "shape"};

  // An op line, its first word read: `op KEY KIND field=value...`.
  void OpLine(WordCursor& words) {
    LineParser p(origin_, line_no_);
    bool key_comma_or_equals = false;
    const std::string_view key_word = words.Next(key_comma_or_equals);
    const std::string_view kind_word = words.Next();
    if (kind_word.empty()) p.Fail("op takes a key, a kind and fields");
    if (s_.ops.size() >= static_cast<size_t>(limits::kMaxOps)) {
      p.Fail("more than the limit {} ops (kMaxOps, models/limits.h)", limits::kMaxOps);
    }
    CompactOp op;
    const std::string_view key = p.Name("key", key_word, key_comma_or_equals);
    const uint64_t key_hash = NamePool::Hash(key);
    s_.names.Prefetch(key_hash);  // interned last: the table's line is loaded by then
    p.SetKey(key);
    op.line = line_no_;
    op.kind = Kind(p, kind_word);
    std::string_view tensor;
    uint64_t tensor_hash = 0;
    ParseOpFields(words, p, s_, recent_, op, tensor, tensor_hash);
    // The previous line's tensor, whose table slot had a line's parsing to load (a look-up
    // right after its prefetch mostly waited for it).
    InternTensor();
    op.key = s_.names.Intern(key, key_hash);
    recent_.AddKey(op.key);
    s_.AddOp(op);
    if (!tensor.empty()) {
      tensor_ = tensor;
      tensor_hash_ = tensor_hash;
    }
  }

 public:
  // Interns the tensor of the last op line read, if it is pending; to be called before the
  // text of that line goes (ReadCompactPirFile moves its block's last part line) and by Finish.
  void InternTensor() {
    if (tensor_.empty()) return;
    s_.ops.back().tensor = s_.names.Intern(tensor_, tensor_hash_);
    tensor_ = {};
  }

 private:
  // The kind named `word`.
  OpKind Kind(const LineParser& p, std::string_view word) {
    // A guess by length and a letter, confirmed by its name (else ParseOpKind decides).
    OpKind guess = OpKind::kFwd;
    switch (word.size()) {
      case 3:
        guess = word[0] == 'B' ? OpKind::kBwd : OpKind::kFwd;
        break;
      case 4:
        guess = word[0] == 'S' ? OpKind::kSend : OpKind::kRecv;
        break;
      case 9:
        guess = word[0] == 'B'   ? (word[1] == 'W' ? OpKind::kBwdInput : OpKind::kBroadcast)
                : word[0] == 'O' ? OpKind::kOptimizer
                : word[0] == 'R' ? OpKind::kRecompute
                : word[3] == 'R' ? OpKind::kAllReduce
                                 : OpKind::kAllGather;
        break;
      case 10:
        guess = OpKind::kBwdWeight;
        break;
      case 14:
        guess = OpKind::kReduceScatter;
        break;
    }
    if (NamePool::Same(word, kind_names_[static_cast<size_t>(guess)])) return guess;
    std::optional<OpKind> kind = ParseOpKind(word);
    if (!kind) p.Fail("unknown op kind '{}'", word);
    return *kind;
  }

  void Header(const LineParser& p, std::string_view directive) {
    const std::vector<std::string_view>& words = words_;
    if (directive != kHeader[next_header_]) {
      p.Fail("expected header line '{}', found '{}'", kHeader[next_header_], directive);
    }
    ++next_header_;
    if (directive == "shape") {
      for (size_t i = 1; i < words.size(); ++i) {
        size_t eq = words[i].find('=');
        if (eq == std::string_view::npos) p.Fail("shape: '{}' is not name=value", words[i]);
        std::string_view name = words[i].substr(0, eq), value = words[i].substr(eq + 1);
        if (name == "strategy") {
          s_.shape.strategy = value == "-" ? "" : std::string(value);
        } else if (name == "dp") {
          s_.shape.dp = p.Int32(name, value, 1, kDevices);
        } else if (name == "pp") {
          s_.shape.pp = p.Int32(name, value, 1, kDevices);
        } else if (name == "tp") {
          s_.shape.tp = p.Int32(name, value, 1, kDevices);
        } else if (name == "v") {
          s_.shape.virtual_stages = p.Int32(name, value, 1, kLayers);
        } else {
          p.Fail("shape: unknown field '{}'", name);
        }
      }
      return;
    }
    if (words.size() != 2) p.Fail("'{}' takes exactly one value", directive);
    if (directive == "model") {
      s_.model = std::string(words[1]);
    } else if (directive == "layers") {
      s_.layers = p.Int32(directive, words[1], 1, kLayers);
    } else if (directive == "sequence") {
      s_.sequence = p.Int32(directive, words[1], 1, kSequence);
    } else if (directive == "devices") {
      s_.devices = p.Int32(directive, words[1], 1, kDevices);
    } else if (directive == "batch") {
      s_.batch = p.Int32(directive, words[1], 0, kBatch);
    }
  }

  const std::string& origin_;
  CompactSchedule s_;
  std::vector<std::string_view> words_;
  RecentNames recent_;
  std::string_view tensor_;  // the last op's tensor, not interned yet (see InternTensor)
  uint64_t tensor_hash_ = 0;
  // OpKindName of each kind, at hand (kinds alternate from op to op: FWD, ALLREDUCE, ...).
  std::array<std::string_view, static_cast<size_t>(OpKind::kRecompute) + 1> kind_names_;
  int line_no_ = 0;
  size_t next_header_ = 0;
  bool saw_magic_ = false;
};

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
  // The op lines appended piece by piece (fmt::format's parsing and temporary strings were
  // most of the time of `terasim schedule`); integers in decimal, as fmt writes them.
  const auto text = [&out](std::string_view piece) { out.append(piece.data(), piece.size()); };
  const auto number = [&out](int64_t value) {
    char digits[24];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), value);
    out.append(digits, static_cast<size_t>(end - digits));
  };
  // " name=value" fields.
  const auto text_field = [&text](std::string_view name, std::string_view value) {
    text(name);
    text(value);
  };
  const auto number_field = [&text, &number](std::string_view name, int64_t value) {
    text(name);
    number(value);
  };
  const auto range_field = [&number_field](std::string_view name, const Range& range) {
    number_field(name, range.begin);
    number_field("-", range.end);
  };
  int last_device = -1;
  for (const Op& op : s.ops) {
    if (op.device != last_device) {
      number_field("# device ", op.device);
      out += '\n';
      last_device = op.device;
    }
    text("op ");
    text(op.key);
    text(" ");
    text(OpKindName(op.kind));
    number_field(" dev=", op.device);
    text_field(" stream=", op.stream);
    if (op.stage >= 0) number_field(" stage=", op.stage);
    if (!op.layers.Empty()) range_field(" layers=", op.layers);
    if (op.part != LayerPart::kWhole) text_field(" part=", LayerPartName(op.part));
    if (op.microbatch >= 0) number_field(" mb=", op.microbatch);
    if (op.rows > 0) number_field(" rows=", op.rows);
    if (!op.tokens.Empty()) range_field(" tokens=", op.tokens);
    if (!op.group.empty()) text_field(" group=", op.group);
    if (op.peer >= 0) number_field(" peer=", op.peer);
    if (!op.tensor.empty()) text_field(" tensor=", op.tensor);
    if (op.bytes > 0) number_field(" bytes=", op.bytes);
    if (op.recompute != Recompute::kNone) text_field(" recompute=", RecomputeName(op.recompute));
    if (op.sequence_parallel) text(" sp=1");
    if (op.zero > 0) number_field(" zero=", op.zero);
    if (!op.after.empty()) {
      text(" after=");
      for (size_t i = 0; i < op.after.size(); ++i) {
        if (i > 0) out += ',';
        text(op.after[i]);
      }
    }
    out += '\n';
  }
  return out;
}

CompactSchedule ReadCompactPir(std::string_view text, const std::string& origin) {
  PirReader reader(origin);
  // As std::getline: lines end at '\n'; a last line without one counts, an empty end does not.
  while (!text.empty()) {
    const size_t end = text.find('\n');
    reader.Line(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return reader.Finish();
}

CompactSchedule ReadCompactPirFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ThrowInput("{}: cannot read", path);
  std::error_code size_error;
  const uintmax_t file_bytes = std::filesystem::file_size(path, size_error);
  // Streams in blocks, so that the file's text is never held whole: each block's whole lines
  // are parsed where they were read, and the part line at its end moves to the front.
  std::vector<char> block(size_t{256} << 10);
  size_t held = 0;    // bytes in `block` not parsed yet
  size_t parsed = 0;  // bytes of the file parsed so far
  bool reserved = false;
  PirReader reader(path);
  while (in) {
    if (held == block.size()) block.resize(2 * block.size());  // a line longer than a block
    in.read(block.data() + held, static_cast<std::streamsize>(block.size() - held));
    const size_t got = static_cast<size_t>(in.gcount());
    if (got == 0) break;
    held += got;
    const char* start = block.data();
    const char* end = block.data() + held;
    for (const char* nl; (nl = static_cast<const char*>(std::memchr(start, '\n', end - start)));) {
      reader.Line(std::string_view(start, static_cast<size_t>(nl - start)));
      start = nl + 1;
    }
    reader.InternTensor();  // before its text moves
    const size_t used = static_cast<size_t>(start - block.data());
    parsed += used;
    held -= used;
    std::memmove(block.data(), start, held);
    if (!reserved && !size_error && parsed > 0) {
      // From the first block, room for the whole file at its density plus a fifth, so that
      // the arrays grow no more: capacity never written is never resident.
      reserved = true;
      const CompactSchedule& s = reader.Schedule();
      const double scale = 1.2 * static_cast<double>(file_bytes) / static_cast<double>(parsed);
      auto scaled = [scale](size_t n) { return static_cast<size_t>(scale * n) + 1024; };
      reader.Reserve(std::min(scaled(s.ops.size()), static_cast<size_t>(limits::kMaxOps)),
                     scaled(s.names.Size()), scaled(s.names.Chars()), scaled(s.after_name.size()));
    }
  }
  if (held > 0) reader.Line(std::string_view(block.data(), held));
  return reader.Finish();
}

Schedule ReadPir(const std::string& text, const std::string& origin) {
  return ToSchedule(ReadCompactPir(text, origin));
}

Schedule ReadPirFile(const std::string& path) { return ToSchedule(ReadCompactPirFile(path)); }

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

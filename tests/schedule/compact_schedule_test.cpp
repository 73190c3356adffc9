// Tests of the compact schedule IR (schedule/compact_schedule.h), its streaming .pir reader
// (schedule/pir_format.h ReadCompactPirFile) and the checker running on it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/compact_check.h"
#include "schedule/compact_schedule.h"
#include "schedule/generator.h"
#include "schedule/pir_format.h"

using namespace terasim;

namespace {

const std::string kGoldenDir = std::string(TERASIM_TEST_DATA) + "/../golden";

// A file in the temp directory, removed at scope exit.
struct TempFile {
  explicit TempFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() /
              fmt::format("terasim_compact_{}_{}", ::getpid(), name))
                 .string()) {}
  ~TempFile() { std::filesystem::remove(path); }
  void Write(const std::string& text) const {
    std::ofstream out(path, std::ios::binary);
    out << text;
  }
  std::string path;
};

Schedule Generated(int microbatches) {
  GenerateOptions o;
  o.model = LoadModelCard("tiny");
  o.strategy = Strategy::kOneFOneB;
  o.pp = 4;
  o.tp = 2;
  o.microbatches = microbatches;
  return Generate(o);
}

// The InputError that reading `path` throws ("" when none).
std::string ReadError(const std::string& path) {
  try {
    ReadCompactPirFile(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> Messages(const CompactSchedule& s) {
  std::vector<std::string> out;
  for (const Diagnostic& d : CheckSchedule(s)) out.push_back(FormatDiagnostic(s, d));
  return out;
}

}  // namespace

TEST_CASE("NamePool gives one id per distinct text and keeps every text", "[schedule][compact]") {
  NamePool pool;
  CHECK(pool.Find("a") == -1);
  CHECK(pool.Intern("a") == 0);
  CHECK(pool.Intern("") == 1);
  CHECK(pool.Intern("a") == 0);
  // 5000 names force several rehashes (the table starts at 1024 slots, half full at most).
  for (int i = 0; i < 5000; ++i) pool.Intern(fmt::format("F.s{}.m{}", i % 7, i));
  CHECK(pool.Size() == 5002);              // "a", "" and the 5000 keys
  CHECK(pool.Find("F.s1.m4999") == 5001);  // 4999 % 7 == 1
  CHECK(pool.View(5001) == "F.s1.m4999");
  CHECK(pool.Find("") == 1);
  CHECK(pool.View(0) == "a");
  CHECK(pool.Find("F.s3.m5000") == -1);
}

TEST_CASE("ToCompact and ToSchedule keep every field of every op", "[schedule][compact]") {
  const Schedule s = Generated(4);
  const CompactSchedule c = ToCompact(s);
  REQUIRE(c.ops.size() == s.ops.size());
  // Strings shared by ops are stored once: every op of a stream name holds one id.
  CHECK(c.ops[0].stream == c.names.Find(s.ops[0].stream));
  CHECK(WritePir(ToSchedule(c)) == WritePir(s));
}

TEST_CASE("the streaming reader reads a file of several blocks as ReadPir reads its text",
          "[schedule][compact]") {
  // 1F1B pp4 tp2 with 128 micro-batches: about 1.6 MB of text, so lines straddle the reader's
  // 256 KB blocks.
  const std::string text = WritePir(Generated(128));
  REQUIRE(text.size() > (size_t{1} << 20));
  TempFile file("big.pir");
  file.Write(text);
  const CompactSchedule c = ReadCompactPirFile(file.path);
  CHECK(c.source == file.path);
  CHECK(WritePir(ToSchedule(c)) == text);
  CHECK(c.ops.back().line == ReadPir(text, "t.pir").ops.back().line);
  CHECK(Messages(c).empty());

  // The last line without its newline still counts.
  TempFile cut("cut.pir");
  cut.Write(text.substr(0, text.size() - 1));
  CHECK(WritePir(ToSchedule(ReadCompactPirFile(cut.path))) == text);
}

// NamePool::Same compares by words (and two overlapping loads for the tail): it must agree with
// == for every length and every position of a difference, the last byte included.
TEST_CASE("NamePool::Same agrees with == at every length and differing position",
          "[schedule][compact]") {
  const std::string text = "tpf.l12.attn.m3.t0-128.r7.and.a.long.tail";
  for (size_t n = 0; n <= text.size(); ++n) {
    const std::string a = text.substr(0, n);
    std::string b = a;  // a copy at another address
    CHECK(NamePool::Same(a, b));
    if (n > 0) CHECK_FALSE(NamePool::Same(a, std::string_view(b).substr(0, n - 1)));  // length
    for (size_t i = 0; i < n; ++i) {
      b[i] ^= 1;  // differs in byte i only
      CHECK_FALSE(NamePool::Same(a, b));
      b[i] ^= 1;
    }
  }
}

// NamePool::Hash reads a name's last bytes by loads within the text; the value is the one of
// copying them into a zeroed word (the reference below), for every length of tail.
TEST_CASE("NamePool::Hash of every tail length equals the zero-padded word hash",
          "[schedule][compact]") {
  auto reference = [](std::string_view text) {
    constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
    uint64_t h = text.size() * kMul;
    size_t i = 0;
    for (; i + 8 <= text.size(); i += 8) {
      uint64_t word;
      std::memcpy(&word, text.data() + i, 8);
      h = (h ^ word) * kMul;
      h ^= h >> 32;
    }
    if (i < text.size()) {
      uint64_t word = 0;
      std::memcpy(&word, text.data() + i, text.size() - i);
      h = (h ^ word) * kMul;
    }
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 32);
  };
  // Distinct bytes, high ones included, so that a byte out of place changes the word.
  std::string text;
  for (int i = 0; i < 40; ++i) text += static_cast<char>(0x31 + 5 * i);
  for (size_t length = 0; length <= text.size(); ++length) {
    for (size_t start = 0; start + length <= text.size(); start += 7) {
      const std::string_view name(text.data() + start, length);
      CHECK(NamePool::Hash(name) == reference(name));
    }
  }
}

TEST_CASE("NamePool keeps its ids through a reserve and a seal", "[schedule][compact]") {
  NamePool pool;
  pool.Reserve(3000, 30000);  // a table for 3000 names: no growth below
  for (int i = 0; i < 5000; ++i) CHECK(pool.Intern(fmt::format("k{}", i)) == i);
  CHECK(pool.Intern("k4321") == 4321);
  CHECK(pool.Intern("k1", NamePool::Hash("k1")) == 1);
  pool.Seal();
  CHECK(pool.Find("k4999") == 4999);    // a linear scan once sealed
  CHECK(pool.Intern("k5000") == 5000);  // the table rebuilt from the texts
  CHECK(pool.Find("k17") == 17);
  CHECK(pool.Size() == 5001);
}

TEST_CASE("NamePool reserves a smaller table than its names and grows it", "[schedule][compact]") {
  NamePool full, small;
  full.Reserve(3000, 30000);        // 3000 names at most 7/10 full: 8192 slots of 8 bytes
  small.Reserve(3000, 30000, 100);  // a table for 100 names: the least, 1024 slots
  CHECK(full.MemoryBytes() - small.MemoryBytes() == (8192 - 1024) * 8);
  for (int i = 0; i < 3000; ++i) CHECK(small.Intern(fmt::format("k{}", i)) == i);
  CHECK(small.Intern("k2999") == 2999);  // found again in the grown table
  CHECK(small.Find("k17") == 17);
  CHECK(small.Size() == 3000);
}

TEST_CASE("ReserveHuge and AssignHuge keep the contents and give the room asked for",
          "[schedule][compact]") {
  // Sizes below, at and above a 2 MB page: the hint changes where the pages come from, never
  // what the array holds.
  for (const size_t count : {size_t{0}, size_t{1000}, size_t{1} << 19, size_t{3} << 19}) {
    std::vector<int> kept = {7, 8, 9};
    ReserveHuge(kept, count);
    CHECK(kept.capacity() >= std::max<size_t>(count, 3));
    CHECK(kept == std::vector<int>{7, 8, 9});  // the elements moved with the reserve
    kept.resize(count + 4, 5);
    CHECK(kept[2] == 9);
    CHECK(kept.back() == 5);  // the room past the old elements is usable

    std::vector<int> filled = {1, 2};
    AssignHuge(filled, count, -2);
    REQUIRE(filled.size() == count);  // assign replaces the two old elements
    CHECK(std::count(filled.begin(), filled.end(), -2) == static_cast<std::ptrdiff_t>(count));
  }
  std::vector<int> small = {4};
  small.reserve(64);
  const int* before = small.data();
  ReserveHuge(small, 10);  // room enough already: no reallocation
  CHECK(small.data() == before);
  AdviseHugePages(nullptr, 0);  // an empty range is no error
}

TEST_CASE("the streaming reader takes tabs, carriage returns and a line longer than a block",
          "[schedule][compact]") {
  const std::string header =
      "terasim-pir 1\nmodel tiny\nlayers 4\nsequence 32\ndevices 2\nbatch 1\n"
      "shape strategy=- dp=1 pp=1 tp=1 v=1\ngroup g 0,1\n";
  // Every field, separated by tabs and spaces, the line ending in \r\n.
  const std::string every =
      "op\tA FWD  dev=0\tstream=c stage=0 layers=1-2 part=mlp mb=3 rows=2 tokens=4-8 group=g "
      "recompute=full sp=1\r\nop B ALLREDUCE dev=1 stream=c group=g tensor=t bytes=9 after=A\n"
      "op C OPTIMIZER dev=0 stream=s zero=2 group=g after=A\n";
  TempFile file("fields.pir");
  file.Write(header + every);
  const CompactSchedule c = ReadCompactPirFile(file.path);
  REQUIRE(c.ops.size() == 3);
  const CompactOp& a = c.ops[0];
  CHECK(c.Key(a) == "A");
  CHECK(a.kind == OpKind::kFwd);
  CHECK(a.stage == 0);
  CHECK(a.layers == Range{1, 2});
  CHECK(a.part == LayerPart::kMlp);
  CHECK(a.microbatch == 3);
  CHECK(a.rows == 2);
  CHECK(a.tokens == Range{4, 8});
  CHECK(a.recompute == Recompute::kFull);
  CHECK(a.sequence_parallel);
  CHECK(a.line == 9);
  CHECK(c.ops[1].bytes == 9);
  CHECK(c.Name(c.ops[1].tensor) == "t");
  CHECK(c.AfterNames(1).size() == 1);
  CHECK(c.Name(c.AfterNames(1)[0]) == "A");
  CHECK(c.ops[2].zero == 2);
  CHECK(c.Name(c.ops[2].group) == "g");

  // A field name of a known one's length, one letter off, is still unknown.
  TempFile bad("stagf.pir");
  bad.Write(header + "op A FWD dev=0 stream=c stagf=0\n");
  CHECK(ReadError(bad.path) == bad.path + ":9: A: unknown field 'stagf'");

  // An op waiting for 40000 keys: one line of about 300 KB, more than the reader's block.
  std::string line = "op Z SEND dev=0 stream=c peer=1 tensor=z bytes=1 after=";
  std::string ops;
  for (int i = 0; i < 40000; ++i) {
    ops += fmt::format("op K{} FWD dev=0 stream=c\n", i);
    line += fmt::format("{}K{}", i > 0 ? "," : "", i);
  }
  REQUIRE(line.size() > (size_t{256} << 10));
  TempFile longer("long.pir");
  longer.Write(header + ops + line + "\n");
  const CompactSchedule l = ReadCompactPirFile(longer.path);
  REQUIRE(l.ops.size() == 40001);
  CHECK(l.AfterNames(40000).size() == 40000);
  CHECK(l.Name(l.AfterNames(40000)[39999]) == "K39999");
  CHECK(l.ops[40000].line == 9 + 40000);
}

TEST_CASE("the streaming reader names the file and line of an error", "[schedule][compact]") {
  TempFile file("bad.pir");
  file.Write(
      "terasim-pir 1\nmodel tiny\nlayers 4\nsequence 32\ndevices 2\nbatch 1\n"
      "shape strategy=- dp=1 pp=1 tp=1 v=1\nop A FWD dev=0 dev=1 stream=c");
  CHECK(ReadError(file.path) == file.path + ":8: A: field 'dev' given twice");
  CHECK(ReadError(file.path + ".absent") == file.path + ".absent: cannot read");
}

TEST_CASE("the checker gives the same messages on the compact schedule of every broken file",
          "[schedule][compact]") {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kGoldenDir + "/bad")) {
    if (entry.path().extension() != ".pir") continue;
    ++files;
    INFO(entry.path().filename().string());
    const std::string path = entry.path().string();
    const CompactSchedule c = ReadCompactPirFile(path);
    const Schedule s = ReadPir(ReadTextFile(path), path);
    std::vector<std::string> from_schedule;
    for (const Diagnostic& d : CheckSchedule(s)) from_schedule.push_back(FormatDiagnostic(s, d));
    CHECK(Messages(c) == from_schedule);
    // Files named ok_* are valid; every other one has at least one message naming FILE:LINE.
    const bool ok = entry.path().filename().string().rfind("ok_", 0) == 0;
    CHECK(Messages(c).empty() == ok);
    if (!ok) CHECK(Messages(c).front().rfind(path + ":", 0) == 0);
  }
  CHECK(files > 30);  // tests/golden/bad holds 36 .pir files
}

// Tests of the compact schedule IR (schedule/compact_schedule.h), its streaming .pir reader
// (schedule/pir_format.h ReadCompactPirFile) and the checker running on it.
#include <catch2/catch.hpp>

#include <unistd.h>

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
  // 1 MB blocks.
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

TEST_CASE("the streaming reader names the file and line of an error", "[schedule][compact]") {
  TempFile file("bad.pir");
  file.Write(
      "terasim-pir 1\nmodel tiny\nlayers 4\nsequence 32\ndevices 2\nbatch 1\n"
      "shape strategy=- dp=1 pp=1 tp=1 v=1\nop A FWD dev=0 dev=1 stream=c");
  std::string error;
  try {
    ReadCompactPirFile(file.path);
  } catch (const InputError& e) {
    error = e.what();
  }
  CHECK(error == file.path + ":8: A: field 'dev' given twice");
  std::string missing;
  try {
    ReadCompactPirFile(file.path + ".absent");
  } catch (const InputError& e) {
    missing = e.what();
  }
  CHECK(missing == file.path + ".absent: cannot read");
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

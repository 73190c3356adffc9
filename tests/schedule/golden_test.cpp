// Golden schedules: each file under tests/golden/ (the top level; bad/ belongs to the checker's
// tests) is regenerated from the options in the table below and compared byte for byte.
// After an intended change of the generators, regenerate every golden with
//
//   TERASIM_UPDATE_GOLDEN=1 build/debug/tests/schedule/test_schedule '[golden]'
//
// and review the diff. The `command` column is the equivalent `terasim schedule` call; one test
// runs each of them through the binary and compares the output with the golden too.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "models/json_reader.h"
#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/pir_format.h"
#include "schedule/slicing_spec.h"

using namespace terasim;

namespace {

struct Golden {
  std::string file;     // under tests/golden/
  std::string command;  // the `terasim schedule` options that produce it (with --model tiny)
  GenerateOptions options;
};

GenerateOptions Options(Strategy strategy, int dp, int pp, int tp, int microbatches) {
  GenerateOptions o;
  o.model = LoadModelCard("tiny");
  o.strategy = strategy;
  o.dp = dp;
  o.pp = pp;
  o.tp = tp;
  o.microbatches = microbatches;
  return o;
}

std::vector<Golden> Goldens() {
  std::vector<Golden> out;
  out.push_back({"gpipe_p2_m2.pir", "--strategy gpipe --pp 2 --microbatches 2",
                 Options(Strategy::kGpipe, 1, 2, 1, 2)});
  out.push_back({"1f1b_p3_m4.pir", "--strategy 1f1b --pp 3 --microbatches 4",
                 Options(Strategy::kOneFOneB, 1, 3, 1, 4)});
  {
    GenerateOptions o = Options(Strategy::kInterleaved, 1, 2, 1, 4);
    o.virtual_stages = 2;
    out.push_back({"interleaved_p2_v2_m4.pir",
                   "--strategy interleaved --pp 2 --virtual-stages 2 --microbatches 4", o});
  }
  {
    GenerateOptions o = Options(Strategy::kTeraPipe, 1, 2, 1, 1);
    o.slicing = ParseSlicingSpec("1:[8,8,16]+2:[20,12]");
    out.push_back({"terapipe_flush_p2.pir",
                   "--strategy terapipe --pp 2 --slicing '1:[8,8,16]+2:[20,12]' --order flush", o});
    o.order = SliceOrder::kOneFOneB;
    out.push_back({"terapipe_1f1b_p2.pir",
                   "--strategy terapipe --pp 2 --slicing '1:[8,8,16]+2:[20,12]' --order 1f1b", o});
  }
  out.push_back({"tp2_1f1b_p2_m2.pir", "--strategy 1f1b --pp 2 --tp 2 --microbatches 2",
                 Options(Strategy::kOneFOneB, 1, 2, 2, 2)});
  {
    GenerateOptions o = Options(Strategy::kGpipe, 1, 2, 2, 1);
    o.boundary = Boundary::kBroadcast;
    out.push_back({"broadcast_gpipe_p2_t2.pir",
                   "--strategy gpipe --pp 2 --tp 2 --microbatches 1 --boundary broadcast", o});
  }
  {
    GenerateOptions o = Options(Strategy::kTeraPipe, 2, 2, 2, 1);
    o.slicing = ParseSlicingSpec("1:[12,20]x2");
    o.order = SliceOrder::kOneFOneB;
    out.push_back({"terapipe_d2p2t2.pir",
                   "--strategy terapipe --dp 2 --pp 2 --tp 2 --slicing '1:[12,20]x2' --order 1f1b",
                   o});
  }
  return out;
}

std::string GoldenPath(const std::string& file) {
  return std::string(TERASIM_TEST_DATA) + "/../golden/" + file;
}

bool UpdateGoldens() {
  const char* env = std::getenv("TERASIM_UPDATE_GOLDEN");
  return env != nullptr && std::string(env) == "1";
}

}  // namespace

TEST_CASE("Generated schedules match the golden .pir files byte for byte", "[golden]") {
  for (const Golden& g : Goldens()) {
    INFO(g.file << " (terasim schedule --model tiny " << g.command << ")");
    Schedule s = Generate(g.options);
    // Goldens are valid schedules.
    CHECK(CheckSchedule(s).empty());
    const std::string text = WritePir(s);
    if (UpdateGoldens()) {
      WritePirFile(s, GoldenPath(g.file));
      WARN("rewrote " << GoldenPath(g.file));
      continue;
    }
    CHECK(text == ReadTextFile(GoldenPath(g.file)));
  }
}

TEST_CASE("terasim schedule writes the goldens from the recorded command lines", "[golden][cli]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("terasim_golden_{}", ::getpid());
  std::filesystem::create_directories(dir);
  for (const Golden& g : Goldens()) {
    const std::string out = (dir / g.file).string();
    const std::string command = fmt::format("'{}' schedule --model tiny {} -o '{}' > /dev/null",
                                            TERASIM_BINARY, g.command, out);
    INFO(command);
    // The command succeeds and writes exactly the golden.
    REQUIRE(std::system(command.c_str()) == 0);
    CHECK(ReadTextFile(out) == ReadTextFile(GoldenPath(g.file)));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("terasim schedule of a 4-stage 8-micro-batch 1F1B passes terasim check",
          "[golden][cli]") {
  const std::string out =
      (std::filesystem::temp_directory_path() / fmt::format("terasim_1f1b_{}.pir", ::getpid()))
          .string();
  const std::string command = fmt::format(
      "'{0}' schedule --model tiny --strategy 1f1b --pp 4 --microbatches 8 -o '{1}' > /dev/null "
      "&& '{0}' check '{1}' > /dev/null",
      TERASIM_BINARY, out);
  INFO(command);
  // Both commands exit 0.
  CHECK(std::system(command.c_str()) == 0);
  std::filesystem::remove(out);
}

TEST_CASE("terasim schedule names the flag behind a bad option", "[golden][cli]") {
  const std::string err =
      (std::filesystem::temp_directory_path() / fmt::format("terasim_err_{}.txt", ::getpid()))
          .string();
  const std::string command = fmt::format(
      "'{}' schedule --model tiny --tp 3 -o - > /dev/null 2> '{}'", TERASIM_BINARY, err);
  // Exit status 1 (an input error) and one line naming --tp.
  const int status = std::system(command.c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(ReadTextFile(err) == "terasim: --tp 3 does not divide 4 heads\n");
  std::filesystem::remove(err);
}

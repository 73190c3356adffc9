// The command line's conventions end to end (tools/cli.h): no prefix guessing, `help CMD`,
// usage for a missing positional argument, hidden test-only flags, one name per concept with
// hidden or Megatron-LM aliases, --batch / --microbatch-size on the schedule commands, dp
// inferred from the GPU count, --cluster with its count, progress lines when piped, and where
// the binary looks for its data.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "schedule/slicing_spec.h"
#include "tests/tools/run_command.h"
#include "tests/tools/sweep_dir.h"

using terasim::testing::RunCommand;

namespace {

const std::string kBin = TERASIM_BINARY;
const std::string kTraces = std::string(TERASIM_TEST_DATA) + "/../../traces/data/";

// `terasim ARGS` with stderr folded into the output; returns the exit status.
int Terasim(const std::string& args, std::string* out) {
  return RunCommand(kBin + " " + args + " 2>&1", out);
}

}  // namespace

TEST_CASE("terasim refuses a prefix of a long option instead of guessing it", "[tools][cli]") {
  std::string out;
  // Boost's default style would take --mod for --model.
  CHECK(Terasim("compare --mod gpt3-1b --cluster p3.16xlarge:1", &out) == 1);
  CHECK_THAT(out, Catch::Matchers::Contains("unrecognised option '--mod'"));
  out.clear();
  CHECK(Terasim("memory --model gpt3-1b --cluster p3.16xlarge:1 --pp 1 --tp 1 --micro 1", &out) ==
        1);
  CHECK_THAT(out, Catch::Matchers::Contains("'--micro'"));
}

TEST_CASE("terasim help CMD prints CMD's own help", "[tools][cli]") {
  std::string help, direct;
  REQUIRE(RunCommand(kBin + " help compare", &help) == 0);
  REQUIRE(RunCommand(kBin + " compare --help", &direct) == 0);
  CHECK_THAT(help, Catch::Matchers::StartsWith("usage: terasim compare"));
  CHECK(help == direct);
  std::string out;
  CHECK(Terasim("help nosuch", &out) == 2);
  CHECK_THAT(out, Catch::Matchers::Contains("unknown command 'nosuch'"));
}

TEST_CASE("terasim check without a file shows the usage with its FILE argument", "[tools][cli]") {
  std::string out;
  CHECK(Terasim("check", &out) == 1);
  CHECK_THAT(out, Catch::Matchers::Contains("terasim check: missing argument (usage: terasim "
                                            "check FILE.pir"));
  // The positional's internal name never shows, in the error or in the help.
  CHECK_THAT(out, !Catch::Matchers::Contains("--file"));
  std::string help;
  REQUIRE(RunCommand(kBin + " help check", &help) == 0);
  CHECK_THAT(help, Catch::Matchers::StartsWith("usage: terasim check FILE.pir"));
  CHECK_THAT(help, !Catch::Matchers::Contains("--file"));
}

TEST_CASE("test-only flags are accepted but left out of the help", "[tools][cli]") {
  std::string help;
  REQUIRE(RunCommand(kBin + " sweep --help", &help) == 0);
  CHECK_THAT(help, Catch::Matchers::Contains("--jobs"));
  CHECK_THAT(help, !Catch::Matchers::Contains("kill-after"));
  // Still parsed: --kill-after 0 on a dry run is accepted (an unknown flag would exit 1).
  terasim::testing::SweepDir d("hidden_flag", R"({"models": ["tiny"], "instances":
    ["p3.16xlarge"], "counts": [1], "batches": [4], "strategies": [{"strategy": "gpipe",
    "pp": 2}], "network": "analytic"})");
  std::string out;
  CHECK(Terasim("sweep " + d.spec + " --db " + d.db + " --dry-run --kill-after 0", &out) == 0);
}

TEST_CASE("The flag --calibration is a hidden alias of --calib", "[tools][cli]") {
  const std::string common =
      "cost --model " + kTraces + "cpu-small.json --device local-cpu --json ";
  const std::string table = kTraces + "gpipe_p2_m4.calib.json";
  std::string calib, calibration;
  REQUIRE(RunCommand(kBin + " " + common + "--calib " + table, &calib) == 0);
  REQUIRE(RunCommand(kBin + " " + common + "--calibration=" + table, &calibration) == 0);
  CHECK(calib == calibration);
  std::string help;
  REQUIRE(RunCommand(kBin + " cost --help", &help) == 0);
  CHECK_THAT(help, Catch::Matchers::Contains("--calib "));
  CHECK_THAT(help, !Catch::Matchers::Contains("--calibration"));
}

TEST_CASE("Megatron-LM's flag names mean terasim's", "[tools][cli]") {
  // Global batch 8 = dp 1 x 4 micro-batches x 2 sequences.
  std::string megatron, terasim_names;
  REQUIRE(RunCommand(kBin + " schedule --model tiny --strategy 1f1b --tensor-model-parallel-size 2 "
                            "--pipeline-model-parallel-size 2 --micro-batch-size 2 "
                            "--global-batch-size 8 -o -",
                     &megatron) == 0);
  REQUIRE(RunCommand(kBin +
                         " schedule --model tiny --strategy 1f1b --tp 2 --pp 2 --microbatch-size 2 "
                         "--microbatches 4 -o -",
                     &terasim_names) == 0);
  CHECK(megatron == terasim_names);
  CHECK_THAT(megatron, Catch::Matchers::Contains("batch 8\n"));
  CHECK_THAT(megatron, Catch::Matchers::Contains("shape strategy=1f1b dp=1 pp=2 tp=2"));
}

TEST_CASE("The flag --batch sets the micro-batches of schedule and simulate, and is checked",
          "[tools][cli]") {
  std::string out;
  // --batch 12 with dp 1 and 3 micro-batches: 12 / 3 = 4 sequences each.
  REQUIRE(RunCommand(kBin + " schedule --model tiny --strategy gpipe --pp 2 --batch 12 "
                            "--microbatches 3 -o - | grep '^op F.s0' | head -1",
                     &out) == 0);
  CHECK_THAT(out, Catch::Matchers::Contains(" rows=4 "));
  out.clear();
  // 2 x 3 = 6 is not 8.
  CHECK(Terasim("schedule --model tiny --pp 2 --batch 8 --microbatches 2 --microbatch-size 3 -o -",
                &out) == 1);
  CHECK_THAT(out, Catch::Matchers::Contains("--batch 8 = dp 1 x microbatches x microbatch-size"));
  out.clear();
  REQUIRE(RunCommand(kBin + " simulate --model tiny --cluster p3.16xlarge:1 --dp 2 --strategy 1f1b "
                            "--pp 2 --batch 8 --microbatch-size 2 --network analytic --json "
                            "2>/dev/null",
                     &out) == 0);
  // dp 2 x (8 / 2 / 2 = 2 micro-batches) x 2 sequences = 8.
  CHECK(nlohmann::json::parse(out).at("batch") == 8);
}

TEST_CASE("dp is inferred from the GPU count when not given, and the output says so",
          "[tools][cli]") {
  std::string out, err;
  // 8 GPUs of one p3.16xlarge / (pp 2 x tp 2) = dp 2: 8 devices.
  const std::string cmd =
      " simulate --model tiny --cluster p3.16xlarge:1 --strategy 1f1b --pp 2 "
      "--tp 2 --network analytic --json";
  REQUIRE(RunCommand(kBin + cmd + " 2>/dev/null", &out) == 0);
  CHECK(nlohmann::json::parse(out).at("devices").size() == 8);
  REQUIRE(RunCommand(kBin + cmd + " 2>&1 >/dev/null", &err) == 0);
  CHECK_THAT(err, Catch::Matchers::Contains("--dp not given: dp = 8 GPUs / (pp 2 x tp 2) = 2"));
  out.clear();
  // 16 GPUs / (pp 2 x tp 2) = 4 replicas of 2 sequences.
  REQUIRE(RunCommand(kBin + " memory --model gpt3-1b --cluster p3.16xlarge:2 --pp 2 --tp 2 "
                            "--batch 8 --json 2>/dev/null",
                     &out) == 0);
  CHECK(nlohmann::json::parse(out).at("dp") == 4);
  out.clear();
  // 3 does not divide 8.
  CHECK(Terasim("memory --model gpt3-1b --cluster p3.16xlarge:1 --pp 3 --tp 1", &out) == 1);
  CHECK_THAT(out, Catch::Matchers::Contains("does not divide the cluster's 8 GPUs: give --dp"));
}

TEST_CASE("The flag --cluster without a count is an error that shows INSTANCE:COUNT",
          "[tools][cli]") {
  for (const char* command : {"compare --model gpt3-1b", "plan --model gpt3-1b",
                              "memory --model gpt3-1b", "simulate --strategy gpipe"}) {
    std::string out;
    CHECK(Terasim(std::string(command) + " --cluster p3.16xlarge", &out) == 1);
    CHECK_THAT(out, Catch::Matchers::Contains(
                        "--cluster p3.16xlarge: give the instance count as INSTANCE:COUNT "
                        "(e.g. p3.16xlarge:2)"));
  }
}

TEST_CASE("piped progress is one line per milestone, without carriage returns", "[tools][cli]") {
  // 20 points: the progress line reports each tenth once (10 lines), never with '\r'.
  std::string batches;
  for (int b = 2; b <= 40; b += 2) batches += (batches.empty() ? "" : ", ") + std::to_string(b);
  terasim::testing::SweepDir d("progress",
                               R"({"models": ["tiny"], "instances": ["p3.16xlarge"],
    "counts": [1], "batches": [)" + batches +
                                   R"(], "strategies": [{"strategy": "gpipe",
    "pp": 2}], "network": "analytic"})");
  std::string err;
  REQUIRE(RunCommand(kBin + " sweep " + d.spec + " --db " + d.db + " --jobs 1 2>&1 >/dev/null",
                     &err) == 0);
  CHECK(err.find('\r') == std::string::npos);
  size_t lines = 0;
  for (size_t at = err.find("sweep: "); at != std::string::npos; at = err.find("sweep: ", at + 1)) {
    ++lines;
  }
  CHECK(lines == 10);
  CHECK_THAT(err, Catch::Matchers::Contains("sweep: 20/20 points, 0 already stored, 0 failed\n"));
}

TEST_CASE("the binary names every place it looked for its data", "[tools][cli]") {
  std::string out;
  // An explicit TERASIM_DATA_DIR without data is an error naming it.
  CHECK(RunCommand("TERASIM_DATA_DIR=/nonexistent " + kBin + " models 2>&1", &out) == 1);
  CHECK_THAT(out, Catch::Matchers::Contains("TERASIM_DATA_DIR=/nonexistent: no terasim data"));
  out.clear();
  // The build tree's binary has no ../share/terasim; with the source tree ruled out nothing is
  // left, and the error lists all three places.
  CHECK(RunCommand("env -u TERASIM_DATA_DIR TERASIM_NO_SOURCE_DATA=1 " + kBin + " models 2>&1",
                   &out) == 1);
  CHECK_THAT(out, Catch::Matchers::Contains("$TERASIM_DATA_DIR (not set)"));
  CHECK_THAT(out, Catch::Matchers::Contains("share/terasim (beside the binary: not there)"));
  CHECK_THAT(out, Catch::Matchers::Contains("(the source tree: skipped, TERASIM_NO_SOURCE_DATA)"));
}

TEST_CASE("plan --microbatch-size searches only micro-batches of that size", "[tools][cli]") {
  std::string out;
  REQUIRE(RunCommand(kBin + " plan --model gpt3-1b --cluster p3.16xlarge:1 --strategy 1f1b "
                            "--batch 8 --micro-batch-size 2 --network analytic --json 2>/dev/null",
                     &out) == 0);
  const nlohmann::json plan = nlohmann::json::parse(out);
  REQUIRE(!plan.at("candidates").empty());
  for (const char* list : {"candidates", "rejected"}) {
    for (const auto& c : plan.at(list)) CHECK(c.at("microbatch_size") == 2);
  }
}

TEST_CASE("plan --pp --microbatch-size plans only micro-batches of that size", "[tools][cli]") {
  std::string out;
  // 16 GPUs / (pp 4 x tp 4) = dp 1: the replica's 8 sequences in micro-batches of 2.
  REQUIRE(RunCommand(kBin + " plan --model gpt3-1b --cluster p3.16xlarge:2 --pp 4 --tp 4 "
                            "--batch 8 --strategy terapipe --microbatch-size 2 --json 2>/dev/null",
                     &out) == 0);
  int rows = 0;
  for (const auto& group :
       terasim::ParseSlicingSpec(nlohmann::json::parse(out).at("slicing").get<std::string>())) {
    CHECK(group.rows == 2);
    rows += group.rows * group.count;
  }
  CHECK(rows == 8);  // the groups cover the batch: 4 micro-batches x 2 rows
}

TEST_CASE(
    "plan refuses a --microbatch-size it cannot honour, naming the flag, and honours it in the "
    "terapipe search",
    "[tools][cli]") {
  std::string out;
  // 5 does not divide the 8 sequences of the one replica.
  CHECK(Terasim("plan --model gpt3-1b --cluster p3.16xlarge:2 --pp 4 --tp 4 --batch 8 "
                "--microbatch-size 5",
                &out) == 1);
  CHECK_THAT(out, Catch::Matchers::Contains("--microbatch-size 5: must divide the 8 sequences"));
  out.clear();
  // The terapipe search (no --pp) honours it: every planned micro-batch holds 2 of the
  // replica's sequences (slicing spec "ROWS:[slices]xCOUNT").
  CHECK(Terasim("plan --model gpt3-1b --cluster p3.16xlarge:1 --strategy terapipe --batch 8 "
                "--microbatch-size 2 --network analytic",
                &out) == 0);
  CHECK_THAT(out, Catch::Matchers::Contains("2:["));
  CHECK_THAT(out, !Catch::Matchers::Contains("1:[") && !Catch::Matchers::Contains("4:["));
  out.clear();
  // With --pp, plan runs the TeraPipe slicing DP only: another --strategy is not ignored.
  CHECK(Terasim("plan --model gpt3-1b --cluster p3.16xlarge:2 --pp 4 --tp 4 --batch 8 "
                "--strategy 1f1b",
                &out) == 1);
  CHECK_THAT(out, Catch::Matchers::Contains("--strategy 1f1b: with --pp, plan runs only"));
}

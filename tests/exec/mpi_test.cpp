// The MPI transport end to end: `mpirun -np N terasim exec FILE.pir --json` (one process per
// device) reports the same loss and gradient norm as the in-process run of the same schedule
// (every device a thread), because both sum in the same rank order. Runs the built terasim
// binary under mpirun; built and registered only where MPI is found (tests/exec/CMakeLists.txt
// sets OMPI_ALLOW_RUN_AS_ROOT for CI containers that run as root).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "exec/executor.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/pir_format.h"
#include "schedule/slicing_spec.h"
#include "tests/exec/exec_cases.h"

using namespace terasim;

namespace {

constexpr uint64_t kSeed = 3;
using exec_cases::Options;

// A file under the temp directory, removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("terasim-mpi-" + std::to_string(getpid()) + "-" + name)) {}
  ~TempFile() { std::filesystem::remove(path_); }
  std::string Path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `mpirun -np N terasim exec PIR ARGS`, capturing stdout and stderr.
Result MpirunExec(int ranks, const std::string& pir, const std::string& args) {
  TempFile err("stderr.txt");
  const std::string command =
      fmt::format("mpirun --allow-run-as-root --oversubscribe -np {} {} exec {} {} 2>{}", ranks,
                  TERASIM_BINARY, pir, args, err.Path());
  Result r;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err.Path());
  r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return r;
}

// Writes the schedule of `o`, runs it in-process and under `mpirun -np devices`, and checks
// that both report the same numbers.
void CheckMpiMatchesInProcess(const GenerateOptions& o, int iterations, const std::string& name) {
  Schedule s = Generate(o);
  RequireValidSchedule(s);
  TempFile pir(name + ".pir");
  WritePirFile(s, pir.Path());
  ExecOptions options;
  options.iterations = iterations;
  options.seed = kSeed;
  options.stall_timeout_s = 60;
  const ExecResult want = ExecuteInProcess(s, o.model, options);

  const Result got = MpirunExec(
      s.devices, pir.Path(),
      fmt::format("--model {} --seed {} --iterations {} --json", o.model.name, kSeed, iterations));
  INFO("stdout: " << got.out);
  INFO("stderr: " << got.err);
  REQUIRE(got.exit_code == 0);
  // Only rank 0 prints: stdout is exactly one JSON document.
  const nlohmann::json j = nlohmann::json::parse(got.out);
  REQUIRE(j.at("losses").size() == static_cast<size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    // Same schedule, same sums in the same rank order: the loss agrees (to 1e-5 relative).
    CHECK(j.at("losses")[i].get<double>() == Approx(want.losses.at(i)).epsilon(1e-5));
  }
  // The first iteration's gathered gradients have the same global norm.
  CHECK(j.at("grad_norm").get<double>() == Approx(want.grad_norm).epsilon(1e-5));
  CHECK(want.grad_norm > 0);
}

}  // namespace

TEST_CASE("mpirun -np 2 runs 1F1B over 2 stages with the in-process loss and grad norm",
          "[exec][mpi]") {
  CheckMpiMatchesInProcess(Options("tiny", Strategy::kOneFOneB, 1, 2, 1, 4), 1, "1f1b-pp2");
}

TEST_CASE("mpirun -np 4 runs dp 2 x pp 2 TeraPipe slicing with the in-process numbers",
          "[exec][mpi]") {
  GenerateOptions o = Options("tiny-lm", Strategy::kTeraPipe, 2, 2, 1, 1);
  o.slicing = ParseSlicingSpec("1:[8,24]x2");
  o.order = SliceOrder::kOneFOneB;
  CheckMpiMatchesInProcess(o, 2, "terapipe-dp2-pp2");
}

TEST_CASE("mpirun -np 4 runs pp 2 x tp 2 with broadcast boundaries for two iterations",
          "[exec][mpi]") {
  GenerateOptions o = Options("tiny", Strategy::kOneFOneB, 1, 2, 2, 2);
  o.boundary = Boundary::kBroadcast;
  CheckMpiMatchesInProcess(o, 2, "1f1b-pp2-tp2-bcast");
}

TEST_CASE("mpirun with fewer processes than devices fails with a clear error", "[exec][mpi]") {
  Schedule s = Generate(Options("tiny", Strategy::kOneFOneB, 1, 4, 1, 4));
  TempFile pir("pp4.pir");
  WritePirFile(s, pir.Path());
  const Result got = MpirunExec(2, pir.Path(), "--model tiny --json");
  INFO("stderr: " << got.err);
  // Every rank stops with an input error naming both counts; nothing is printed on stdout.
  CHECK(got.exit_code != 0);
  CHECK(got.out.empty());
  CHECK(got.err.find("2 MPI processes but schedule") != std::string::npos);
  CHECK(got.err.find("has 4 devices (run mpirun -np 4)") != std::string::npos);
}

TEST_CASE("mpirun -np 4 runs pp 2 x tp 2 with sequence parallelism for two iterations",
          "[exec][mpi][sp]") {
  GenerateOptions o = Options("tiny-lm", Strategy::kOneFOneB, 1, 2, 2, 2);
  o.sequence_parallel = true;
  CheckMpiMatchesInProcess(o, 2, "1f1b-pp2-tp2-sp");
}

TEST_CASE("mpirun -np 4 runs pp 2 x tp 2 with full recomputation for two iterations",
          "[exec][mpi][recompute]") {
  // Each recomputed block's tp collectives cross processes: all-reduces, and with sequence
  // parallelism all-gathers and reduce-scatters.
  GenerateOptions o = Options("tiny-lm", Strategy::kOneFOneB, 1, 2, 2, 2);
  o.recompute = Recompute::kFull;
  CheckMpiMatchesInProcess(o, 2, "1f1b-pp2-tp2-recompute");
  o.sequence_parallel = true;
  CheckMpiMatchesInProcess(o, 2, "1f1b-pp2-tp2-sp-recompute");
}

TEST_CASE("mpirun -np 4 runs dp 2 x pp 2 with ZeRO-3 for two iterations", "[exec][mpi][zero]") {
  GenerateOptions o = Options("tiny-lm", Strategy::kOneFOneB, 2, 2, 1, 2);
  o.zero = 3;
  CheckMpiMatchesInProcess(o, 2, "1f1b-dp2-pp2-zero3");
}

TEST_CASE("mpirun -np 4 runs dp 2 x tp 2 with ZeRO-1 and sequence parallelism",
          "[exec][mpi][zero][sp]") {
  GenerateOptions o = Options("tiny", Strategy::kGpipe, 2, 1, 2, 2);
  o.zero = 1;
  o.sequence_parallel = true;
  CheckMpiMatchesInProcess(o, 2, "gpipe-dp2-tp2-zero1-sp");
}

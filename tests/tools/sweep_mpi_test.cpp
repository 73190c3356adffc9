// `terasim sweep` under mpirun: every rank simulates its share of the grid and rank 0 alone
// writes the store. Each case runs `mpirun -np 3` (built and registered only where MPI is
// found; tests/tools/CMakeLists.txt). Ranks 1 and 2 are given a --db inside a directory that
// does not exist: a rank that opened its store itself would fail, so a complete store with
// runs labelled by all three ranks shows that rank 0 wrote every one of them.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/tools/run_command.h"
#include "tests/tools/sweep_dir.h"
#include "traces/result_store.h"

namespace terasim {
namespace {

// 3 batches x 4 strategies on one p3.16xlarge (8 GPUs): 12 points, none left out.
constexpr const char* kSpec = R"({
  "models": ["tiny"],
  "instances": ["p3.16xlarge"],
  "counts": [1],
  "batches": [4, 8, 16],
  "strategies": [
    {"strategy": "gpipe", "pp": 2},
    {"strategy": "1f1b", "pp": 2, "tp": 2},
    {"strategy": "terapipe", "pp": 4, "slices": 2},
    {"strategy": "1f1b", "pp": 4, "dp": 2}
  ],
  "network": "analytic"
})";

// A sweep folder whose ranks 1 and 2 get a --db inside a directory that does not exist.
struct MpiSweepDir : testing::SweepDir {
  std::string unwritable_db = dir + "/no-such-dir/sweep.db";
  explicit MpiSweepDir(const std::string& name) : SweepDir("mpi_" + name, kSpec) {}
  // `mpirun -np 3 terasim sweep SPEC --json --store-ops all EXTRA`, rank 0 with --db db and the
  // other ranks with --db unwritable_db. Returns rank 0's JSON summary (null when there is none).
  nlohmann::json Run(const std::string& extra, int* status) const {
    const std::string rank_command = fmt::format(
        "db='{}'; [ \"$OMPI_COMM_WORLD_RANK\" = 0 ] || db='{}'; exec '{}' sweep '{}' --db "
        "\"$db\" --jobs 1 --json --store-ops all {}",
        db, unwritable_db, TERASIM_BINARY, spec, extra);
    std::string out;
    *status = testing::RunCommand(
        fmt::format("mpirun --allow-run-as-root --oversubscribe -np 3 sh -c '{}' 2>/dev/null",
                    Escape(rank_command)),
        &out);
    const nlohmann::json j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
    return j.is_discarded() ? nlohmann::json() : j;
  }
  // `text` inside a single-quoted shell word.
  static std::string Escape(const std::string& text) {
    std::string out;
    for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out;
  }
};

TEST_CASE("mpirun -np 3 terasim sweep stores every point once and rank 0 writes them all",
          "[tools][sweep][mpi]") {
  const MpiSweepDir d("once");
  int status = 0;
  const nlohmann::json first = d.Run("", &status);
  REQUIRE(status == 0);
  // 12 points over 3 ranks (every 3rd point from the rank): 4 each, all stored by rank 0.
  CHECK(first.at("points") == 12);
  CHECK(first.at("ranks") == 3);
  CHECK(first.at("stored") == 12);
  CHECK(first.at("skipped") == 0);
  CHECK(first.at("stored_by_rank") == nlohmann::json::array({4, 4, 4}));
  // One run per point.
  CHECK(d.Count("SELECT count(*) FROM runs") == 12);
  CHECK(d.Count("SELECT count(DISTINCT config_key) FROM runs") == 12);
  // Every rank simulated 4 of them (the label names the simulating rank) ...
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(d.Count(fmt::format("SELECT count(*) FROM runs WHERE label = 'sweep {} (rank {} of 3)'",
                              d.spec, rank)) == 4);
  }
  // ... and every run came with its trace ...
  CHECK(d.Count("SELECT count(DISTINCT run_id) FROM ops") == 12);
  // ... while ranks 1 and 2 never created their own store.
  CHECK_FALSE(std::filesystem::exists(d.dir + "/no-such-dir"));

  const nlohmann::json second = d.Run("", &status);
  REQUIRE(status == 0);
  // Rank 0 told every rank that all 12 are stored: nothing simulated, nothing new.
  CHECK(second.at("stored") == 0);
  CHECK(second.at("skipped") == 12);
  CHECK(d.Count("SELECT count(*) FROM runs") == 12);
}

TEST_CASE("mpirun -np 3 terasim sweep resumes after rank 0 is killed with nothing duplicated",
          "[tools][sweep][mpi]") {
  const MpiSweepDir d("killed");
  int status = 0;
  d.Run("--kill-after 5", &status);
  // Rank 0 killed itself (SIGKILL) right after its 5th commit; mpirun ends the job non-zero.
  CHECK(status != 0);
  CHECK(d.Count("SELECT count(*) FROM runs") == 5);
  const nlohmann::json resumed = d.Run("", &status);
  REQUIRE(status == 0);
  // The 5 stored points are skipped on every rank, the other 7 run and are stored once.
  CHECK(resumed.at("skipped") == 5);
  CHECK(resumed.at("stored") == 7);
  CHECK(d.Count("SELECT count(*) FROM runs") == 12);
  CHECK(d.Count("SELECT count(DISTINCT config_key) FROM runs") == 12);
}

}  // namespace
}  // namespace terasim

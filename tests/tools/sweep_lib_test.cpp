// The sweep library (tools/sweep/) without the CLI: range-checked spec integers, a grid that
// builds no cluster until a worker needs one, and a writer whose stored-or-not check and
// insert are one transaction, so two processes writing the same points store each once.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>

#include "models/errors.h"
#include "models/model_card.h"
#include "sim/collective_plan.h"
#include "tests/tools/sweep_dir.h"
#include "tools/sweep/sweep_grid.h"
#include "tools/sweep/sweep_spec.h"
#include "tools/sweep/sweep_workers.h"
#include "tools/sweep/sweep_writer.h"
#include "traces/result_store.h"

namespace terasim {
namespace {

std::string Spec(const std::string& counts, const std::string& extra = "") {
  return R"({"models": ["tiny"], "instances": ["p3.16xlarge"], "counts": )" + counts +
         R"(, "batches": [4], "strategies": [{"strategy": "gpipe", "pp": 2}])" + extra + "}";
}

TEST_CASE("Sweep spec refuses integers it would have to cut", "[tools][sweep]") {
  // 4294967297 = 2^32 + 1 used to read as 1, and 1.9 as 1.
  CHECK_THROWS_WITH(ParseSweepSpecText(Spec("[4294967297]"), "s.json"),
                    Catch::Contains("s.json: counts[0]: 4294967297 is out of range"));
  CHECK_THROWS_WITH(ParseSweepSpecText(Spec("[1.9]"), "s.json"),
                    Catch::Contains("s.json: counts[0]: 1.9 is not a whole number"));
  CHECK_THROWS_WITH(ParseSweepSpecText(Spec("[0]"), "s.json"),
                    Catch::Contains("counts[0]: 0 is out of range [1,"));
  CHECK_THROWS_WITH(ParseSweepSpecText(Spec("[1]", R"(, "nic_gbps": [-5])"), "s.json"),
                    Catch::Contains("nic_gbps[0]: -5 must be finite and >= 0"));
  CHECK_THROWS_AS(
      ParseSweepSpecText(R"({"models": ["tiny"], "instances": ["p3.16xlarge"], "counts": [1],
        "batches": [4], "strategies": [{"strategy": "gpipe", "pp": 4294967298}]})",
                         "s.json"),
      InputError);
  // Within range: read as written.
  const SweepSpec ok = ParseSweepSpecText(Spec("[1, 2]"), "s.json");
  CHECK(ok.counts == std::vector<int>{1, 2});
}

TEST_CASE("Sweep grid builds a cluster only when a worker simulates its point", "[tools][sweep]") {
  // 200 NIC rates x 1 strategy on p3.16xlarge:1 = 200 points, 200 distinct clusters.
  std::string rates = "[";
  for (int i = 1; i <= 200; ++i) rates += std::to_string(i) + (i < 200 ? ", " : "]");
  SweepInputs in;
  in.spec_path = "s.json";
  in.spec = ParseSweepSpecText(Spec("[1]", R"(, "nic_gbps": )" + rates), "s.json");
  in.models.emplace("tiny", LoadModelCard("tiny"));
  in.grid = BuildSweepGrid(in.spec);
  REQUIRE(in.grid.points.size() == 200);
  // A cache of capacity 2 that simulates points 0 and 1: two clusters built, not 200.
  ClusterCache clusters(2);
  CHECK(clusters.Built() == 0);
  const SweepResult a = SimulatePoint(in, clusters, 0, 0, "t");
  const SweepResult b = SimulatePoint(in, clusters, 1, 0, "t");
  INFO(a.error << b.error);
  CHECK(a.record.has_value());
  CHECK(b.record.has_value());
  CHECK(clusters.Built() == 2);
  // Point 0 again is a hit: still 2.
  SimulatePoint(in, clusters, 0, 0, "t");
  CHECK(clusters.Built() == 2);
}

TEST_CASE("Two processes writing the same points through PointWriter store each once",
          "[tools][sweep]") {
  testing::SweepDir d("lib_two_writers", "{}");
  ResultStore::OpenOrCreate(d.db);  // schema first, so the writers race only on rows
  constexpr int kPoints = 30;
  SweepInputs in;
  for (int i = 0; i < kPoints; ++i) {
    SweepPoint p;
    p.config = {{"point", i}};
    in.grid.points.push_back(p);
  }
  auto write_all = [&](bool reversed) {
    ResultStore store = ResultStore::OpenOrCreate(d.db);
    PointWriter writer(store, in, 0, 1);
    for (int k = 0; k < kPoints; ++k) {
      const int i = reversed ? kPoints - 1 - k : k;
      SweepResult r;
      r.job = static_cast<size_t>(i);
      r.record = RunRecord{};
      r.record->model = "tiny";
      r.record->config = {{"point", i}};
      r.record->config_key = "lib-test " + std::to_string(i);
      r.record->metrics["iteration_time_s"] = 1.0;
      writer.Write(r);
    }
    return writer.Stored();
  };
  // Both processes write every point, in opposite orders, at the same time.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int code = 0;
    try {
      write_all(true);
    } catch (...) {
      code = 1;
    }
    _exit(code);
  }
  const int stored_here = write_all(false);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // Every point once: kPoints rows, kPoints distinct keys, whoever wrote which.
  CHECK(d.Count("SELECT count(*) FROM runs") == kPoints);
  CHECK(d.Count("SELECT count(DISTINCT config_key) FROM runs") == kPoints);
  CHECK(stored_here <= kPoints);
}

}  // namespace
}  // namespace terasim

// The strategy search on several threads (SearchRequest::jobs, schedule/parallel_tasks.h): the
// same results as one thread, from the library and from `terasim compare --jobs`.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "schedule/parallel_tasks.h"
#include "schedule/strategy_search.h"
#include "sim/simulator.h"
#include "tests/tools/run_command.h"
#include "tools/planning_context.h"

using namespace terasim;
using namespace terasim::cli;
using terasim::testing::RunCommand;

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One line per field the search reports of an evaluation.
std::string EvaluationText(const Evaluation& e) {
  const Candidate& c = e.candidate;
  std::ostringstream s;
  s.precision(17);
  s << FamilyName(c.family) << " " << DegreesText(c.options) << " " << c.options.microbatches
    << " x " << c.options.microbatch_size << " v" << c.options.virtual_stages << " "
    << RecipeText(c.options) << " slicing '" << c.slicing << "' bound " << c.bound_s << " estimate "
    << c.estimate_s << " ops " << c.ops_estimate << " fits " << e.fits << " peak "
    << e.memory.peak_bytes << " evaluated " << e.evaluated << " time " << e.iteration_s << " note '"
    << e.note << "'";
  return s.str();
}

// Everything Run returns, as text: the families in order, their accounts, the candidates tried
// in order and the best.
std::string ResultsText(const std::vector<FamilyResult>& results) {
  std::ostringstream s;
  for (const FamilyResult& r : results) {
    s << FamilyName(r.family) << " found " << r.found << " reason '" << r.reason << "' candidates "
      << r.candidates << " bound " << r.pruned_by_bound << " budget " << r.pruned_by_budget
      << " ops " << r.pruned_by_ops << "\n";
    for (const Evaluation& e : r.tried) s << "  tried " << EvaluationText(e) << "\n";
    if (r.found) s << "  best " << EvaluationText(r.best) << "\n";
  }
  return s.str();
}

struct SearchRun {
  std::vector<FamilyResult> results;
  std::vector<std::string> progress;  // sorted: lines of several threads interleave
  int evaluations = 0;
};

// gpt3-1b on two p3.16xlarge nodes, batch 8, flow replays with the network bounds and the
// folded generation compare uses; `jobs` families at once.
SearchRun Search(int jobs) {
  PlanningInputs inputs;
  inputs.model = "gpt3-1b";
  inputs.cluster = "p3.16xlarge:2";
  PlanningContext context(inputs);
  SearchRequest request;
  request.batch = 8;
  request.max_evaluations_per_family = 3;
  request.jobs = jobs;
  context.SetNetworkBounds(request);
  context.SetFoldedGeneration(request);
  SearchRun run;
  std::mutex mutex;
  request.progress = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex);
    run.progress.push_back(line);
  };
  StrategySearch search(context.model(), context.cluster(), context.device(), context.cost());
  std::atomic<int> evaluations{0};
  run.results = search.Run(request, [&](const Candidate&, const Schedule& schedule) {
    ++evaluations;
    return NsToSeconds(context.Evaluate(schedule).iteration_time_ns);
  });
  run.evaluations = evaluations;
  std::sort(run.progress.begin(), run.progress.end());
  return run;
}

}  // namespace

TEST_CASE("The strategy search on 4 threads returns what it returns on one", "[search][jobs]") {
  const SearchRun serial = Search(1);
  const SearchRun parallel = Search(4);
  // Nine families in request order, each with its candidates tried in the same order, the same
  // notes, pruned counts, best and iteration times (every figure to the last bit).
  REQUIRE(serial.results.size() == 9);
  REQUIRE(parallel.results.size() == 9);
  CHECK(ResultsText(parallel.results) == ResultsText(serial.results));
  // The same simulations and progress lines (in another order).
  CHECK(parallel.evaluations == serial.evaluations);
  CHECK(parallel.progress == serial.progress);
  // Not a trivial search: several families simulated more than one candidate and the bound
  // pruned others (what a thread's result depends on within its family).
  int pruned = 0, found = 0;
  for (const FamilyResult& r : serial.results) {
    pruned += r.pruned_by_bound;
    found += r.found ? 1 : 0;
  }
  CHECK(found == 9);
  CHECK(pruned > 0);
  CHECK(serial.evaluations > 9);
}

TEST_CASE("RunTasks runs every task once and rethrows the first task's error", "[search][jobs]") {
  for (int jobs : {1, 3}) {
    std::vector<std::atomic<int>> runs(8);
    std::vector<size_t> order = {7, 6, 5, 4, 3, 2, 1, 0};
    // Tasks 2 and 5 throw; a serial loop over the tasks in index order meets task 2's first.
    try {
      RunTasks(jobs, order, [&runs](int, size_t task) {
        ++runs[task];
        if (task == 2 || task == 5) throw std::runtime_error("task " + std::to_string(task));
      });
      FAIL("no exception");
    } catch (const std::runtime_error& error) {
      CHECK(std::string(error.what()) == "task 2");
    }
    for (const std::atomic<int>& n : runs) CHECK(n == 1);
  }
  CHECK(TaskWorkers(4, 9) == 4);
  CHECK(TaskWorkers(4, 2) == 2);  // no more threads than tasks
  CHECK(TaskWorkers(0, 9) == 1);
}

TEST_CASE("terasim compare --jobs 3 writes what --jobs 1 writes", "[tools][cli][jobs]") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("terasim_compare_jobs_test_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::map<int, nlohmann::json> printed;
  for (int jobs : {1, 3}) {
    const auto run = dir / std::to_string(jobs);
    std::filesystem::create_directories(run);
    std::string out;
    REQUIRE(RunCommand(std::string(TERASIM_BINARY) +
                           " compare --model gpt3-1b --cluster p3.16xlarge:2 --batch 8"
                           " --max-evaluations 2 --store-ops all --json --jobs " +
                           std::to_string(jobs) + " --db " + (run / "t.db").string() + " --out " +
                           (run / "out").string() + " 2>/dev/null",
                       &out) == 0);
    nlohmann::json j = nlohmann::json::parse(out);
    for (const char* varies : {"wall_time_s", "db", "chart", "trace", "timeline"}) j.erase(varies);
    printed[jobs] = j;
  }
  CHECK(printed[3].dump() == printed[1].dump());
  for (const char* file : {"compare.svg", "winner.trace.json", "winner.gantt.svg"}) {
    INFO(file);
    const std::string one = Slurp((dir / "1" / "out" / file).string());
    CHECK(!one.empty());
    CHECK(Slurp((dir / "3" / "out" / file).string()) == one);
  }
  // The database: the same runs, metrics and per-op rows in the same order (all but the
  // creation times).
  for (const char* query :
       {"SELECT id, strategy, dp, pp, tp, microbatches, slicing, slices, config_json FROM runs "
        "ORDER BY id",
        "SELECT * FROM metrics ORDER BY run_id, name", "SELECT * FROM ops ORDER BY rowid",
        "SELECT comparison_id, position, run_id FROM comparison_runs ORDER BY position"}) {
    INFO(query);
    std::map<int, std::string> rows;
    for (int jobs : {1, 3}) {
      REQUIRE(RunCommand(std::string(TERASIM_BINARY) + " db query --csv --db " +
                             (dir / std::to_string(jobs) / "t.db").string() + " \"" + query + "\"",
                         &rows[jobs]) == 0);
    }
    CHECK(rows[1].size() > 20);
    CHECK(rows[3] == rows[1]);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("terasim compare and plan reject --jobs 0", "[tools][cli][jobs]") {
  for (const char* command : {"compare --db '' --out ''", "plan"}) {
    std::string out;
    const int rc = RunCommand(std::string(TERASIM_BINARY) + " " + command + " --jobs 0 2>&1", &out);
    INFO(out);
    CHECK(rc != 0);
    CHECK(out.find("--jobs 0: must be >= 1") != std::string::npos);
  }
}

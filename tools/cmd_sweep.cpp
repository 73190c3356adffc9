// terasim sweep: a what-if grid from a spec file (models x instance types x instance counts x
// NIC bandwidths x NIC latencies x batches x strategies), each point generated and simulated
// on a pool of threads, each result stored in the results store in its own transaction.
//
// Resumable: every point has a config_key (its canonical configuration); points the store
// already holds are skipped, and the writer checks the key again before each write, so a
// sweep killed at any moment (kill -9 included) resumes where it stopped with nothing lost or
// duplicated. Worker threads only simulate; one thread writes.
//
// Sharding: `--shard I/N` runs every N-th point from I in this process, which writes its own
// points (several shards may share a store: SQLite WAL with a busy timeout). Under mpirun, in
// a build with MPI (tools/sweep_mpi.h), rank R of N runs every N-th point from R and rank 0
// alone opens the store: it tells every rank which points are stored, writes its own and the
// other ranks' results as they arrive, and finishes once every rank has said it is done; its
// progress line and summary count the whole job, and each run's label names the rank that
// simulated it. Under mpirun in a build without MPI, each rank is the shard of its
// OMPI_COMM_WORLD_RANK / _SIZE and writes its own points.
//
// The engine (spec, grid, workers, store writer) is the sweep library in tools/sweep/; this
// command parses the flags, shards the points, drives the workers and the writer, and prints.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/errors.h"
#include "models/model_card.h"
#include "sim/simulator.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/progress_line.h"
#include "tools/sweep/sweep_grid.h"
#include "tools/sweep/sweep_spec.h"
#include "tools/sweep/sweep_workers.h"
#include "tools/sweep/sweep_writer.h"
#include "tools/sweep_mpi.h"
#include "traces/traces.h"

namespace terasim::cli {
namespace {

// "I/N" -> (I, N). Throws InputError "--shard: ...".
std::pair<int, int> ParseShard(const std::string& text) {
  int index = 0, count = 0;
  char slash = 0;
  std::istringstream in(text);
  if (!(in >> index >> slash >> count) || slash != '/' || count < 1 || index < 0 ||
      index >= count || !in.eof()) {
    ThrowInput("--shard: '{}' must read I/N with 0 <= I < N", text);
  }
  return {index, count};
}

struct SweepFlags {
  std::string db;
  int jobs = 1;
  int kill_after = 0;
  bool dry_run = false;
  bool json = false;
};

void PrintProgress(ProgressLine& line, size_t done, int skipped, int failed) {
  line.Update(static_cast<int64_t>(done),
              fmt::format("{} already stored, {} failed", skipped, failed));
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One process (or one shard) writing its own points. Returns the exit code.
int SweepAlone(const SweepInputs& in, std::pair<int, int> shard, const SweepFlags& flags) {
  std::vector<size_t> mine;
  for (size_t i = 0; i < in.grid.points.size(); ++i) {
    if (static_cast<int>(i % shard.second) == shard.first) mine.push_back(i);
  }
  ResultStore store = ResultStore::OpenOrCreate(flags.db);
  std::vector<size_t> todo;
  int skipped = 0;
  for (size_t i : mine) {
    if (store.FindRunByConfigKey(in.grid.points[i].config_key)) {
      ++skipped;
    } else {
      todo.push_back(i);
    }
  }
  if (flags.dry_run) {
    for (size_t i : mine) {
      const bool stored = store.FindRunByConfigKey(in.grid.points[i].config_key).has_value();
      std::cout << fmt::format("{} {}\n", stored ? "stored " : "todo   ",
                               in.grid.points[i].config.dump());
    }
    return 0;
  }

  const auto start = std::chrono::steady_clock::now();
  PointWriter writer(store, in, flags.kill_after, 1);
  ProgressLine progress("sweep", "points", static_cast<int64_t>(todo.size()), std::cerr,
                        StderrIsTerminal());
  {
    PointWorkers workers(in, todo, flags.jobs, 0, "sweep " + in.spec_path);
    for (size_t done = 0; done < workers.Size(); ++done) {
      writer.Write(workers.Next());
      PrintProgress(progress, done + 1, skipped + writer.AlreadyStored(), writer.Failed());
    }
  }
  const double wall_s = SecondsSince(start);
  skipped += writer.AlreadyStored();
  progress.Finish();
  if (flags.json) {
    PrintJson({{"spec", in.spec_path},
               {"db", store.path()},
               {"points", in.grid.points.size()},
               {"left_out", in.grid.left_out},
               {"shard", fmt::format("{}/{}", shard.first, shard.second)},
               {"shard_points", mine.size()},
               {"skipped", skipped},
               {"stored", writer.Stored()},
               {"failed", writer.Failed()},
               {"jobs", flags.jobs},
               {"wall_time_s", wall_s}});
  } else {
    std::cout << fmt::format(
        "{}: {} points ({} left out: too few GPUs or batch does not split), shard {}/{}: {} "
        "points, {} already stored, {} simulated and stored, {} failed, {:.2f} s on {} threads\n",
        in.spec_path, in.grid.points.size(), in.grid.left_out, shard.first, shard.second,
        mine.size(), skipped, writer.Stored(), writer.Failed(), wall_s, flags.jobs);
  }
  return writer.Failed() > 0 ? 1 : 0;
}

// Under mpirun: every rank simulates its shard, rank 0 alone reads and writes the store.
// Returns the exit code.
int SweepOverRanks(const SweepInputs& in, SweepRanks& ranks, const SweepFlags& flags) {
  const int rank = ranks.Rank();
  const int size = ranks.Size();
  const size_t points = in.grid.points.size();
  // Rank 0 says which points are stored ('1') and which are not ('0').
  std::optional<ResultStore> store;
  std::string stored(points, '0');
  if (rank == 0) {
    store = ResultStore::OpenOrCreate(flags.db);
    for (size_t i = 0; i < points; ++i) {
      if (store->FindRunByConfigKey(in.grid.points[i].config_key)) stored[i] = '1';
    }
    if (flags.dry_run) {
      for (size_t i = 0; i < points; ++i) {
        std::cout << fmt::format("{} rank {} {}\n", stored[i] == '1' ? "stored " : "todo   ",
                                 i % size, in.grid.points[i].config.dump());
      }
    }
  }
  if (flags.dry_run) return 0;
  stored = ranks.Broadcast(stored);
  if (stored.size() != points) {
    ThrowInput("sweep: rank {} has {} points but rank 0 has {}: run the same spec on every rank",
               rank, points, stored.size());
  }
  std::vector<size_t> todo;
  size_t todo_all = 0;
  int skipped = 0;
  for (size_t i = 0; i < points; ++i) {
    if (stored[i] == '1') {
      ++skipped;
      continue;
    }
    ++todo_all;
    if (static_cast<int>(i % size) == rank) todo.push_back(i);
  }

  const auto start = std::chrono::steady_clock::now();
  const std::string label = fmt::format("sweep {} (rank {} of {})", in.spec_path, rank, size);
  PointWorkers workers(in, todo, flags.jobs, rank, label);
  if (rank != 0) {
    int failed = 0;
    for (size_t done = 0; done < workers.Size(); ++done) {
      const SweepResult r = workers.Next();
      if (!r.record) ++failed;
      ranks.SendResult(r);
    }
    ranks.SendDone();
    return failed > 0 ? 1 : 0;
  }

  // Rank 0: its own points and everyone else's, as they come, until every rank is done.
  constexpr std::chrono::milliseconds kPoll(1);
  PointWriter writer(*store, in, flags.kill_after, size);
  ProgressLine progress("sweep", "points", static_cast<int64_t>(todo_all), std::cerr,
                        StderrIsTerminal());
  size_t own_done = 0, done = 0;
  auto write = [&](const SweepResult& r) {
    writer.Write(r);
    PrintProgress(progress, ++done, skipped + writer.AlreadyStored(), writer.Failed());
  };
  while (own_done < workers.Size() || !ranks.AllOthersDone()) {
    std::optional<SweepResult> own;
    if (own_done < workers.Size()) own = workers.Next(kPoll);
    if (own) {
      ++own_done;
      write(*own);
    }
    bool remote = false;
    while (std::optional<SweepResult> r = ranks.PollResult()) {
      remote = true;
      write(*r);
    }
    if (!own && !remote && own_done == workers.Size()) std::this_thread::sleep_for(kPoll);
  }
  const double wall_s = SecondsSince(start);
  skipped += writer.AlreadyStored();
  progress.Finish();
  if (flags.json) {
    PrintJson({{"spec", in.spec_path},
               {"db", store->path()},
               {"points", points},
               {"left_out", in.grid.left_out},
               {"ranks", size},
               {"skipped", skipped},
               {"stored", writer.Stored()},
               {"stored_by_rank", writer.StoredByRank()},
               {"failed", writer.Failed()},
               {"jobs", flags.jobs},
               {"wall_time_s", wall_s}});
  } else {
    std::cout << fmt::format(
        "{}: {} points ({} left out: too few GPUs or batch does not split) on {} MPI ranks, {} "
        "already stored, {} simulated and stored by rank 0 (per rank: {}), {} failed, {:.2f} s "
        "on {} threads per rank\n",
        in.spec_path, points, in.grid.left_out, size, skipped, writer.Stored(),
        fmt::join(writer.StoredByRank(), " "), writer.Failed(), wall_s, flags.jobs);
  }
  return writer.Failed() > 0 ? 1 : 0;
}

}  // namespace

int RunSweep(const Args& args) {
  po::options_description options("terasim sweep");
  // clang-format off
  options.add_options()
      ("spec", po::value<std::string>()->default_value(""), "the sweep spec (JSON)")
      ("db", po::value<std::string>()->default_value(kDefaultStorePath),
       "results store (under mpirun: rank 0's)")
      ("jobs", po::value<int>()->default_value(0, "all cores"), "worker threads")
      ("shard", po::value<std::string>()->default_value("", "0/1, or the MPI rank/size"),
       "run every N-th point from I (I/N); not under mpirun")
      ("collectives", po::value<std::string>()->default_value("sim/data/collectives.json"),
       "collective algorithm parameters (relative paths: under the data root)")
      ("dry-run", po::bool_switch(), "list the points and whether they are stored; run nothing")
      ("store-ops", po::value<std::string>()->default_value("none"),
       "none (summaries and metrics) | all (every point's per-op trace rows too)")
      ("json", po::bool_switch(), "print the summary as JSON");
  po::options_description test_only("for tests, not shown");
  test_only.add_options()
      ("kill-after", po::value<int>()->default_value(0),
       "testing: kill -9 this process after storing N results (0: never)");
  // clang-format on
  po::positional_options_description positional;
  positional.add("spec", 1);
  po::variables_map vm;
  if (!Parse("sweep", "SPEC.json [--jobs N] [--db FILE] [--shard I/N] [--json]", options,
             positional, args, vm, test_only)) {
    return 0;
  }
  SweepInputs in;
  in.spec_path = vm["spec"].as<std::string>();
  if (in.spec_path.empty()) ThrowInput("terasim sweep: a SPEC.json is required");
  in.spec = ParseSweepSpec(in.spec_path);
  const std::string store_ops = vm["store-ops"].as<std::string>();
  if (store_ops != "none" && store_ops != "all") {
    ThrowInput("--store-ops {}: must be none or all", store_ops);
  }
  in.store_ops = store_ops == "all";
  SweepFlags flags;
  flags.db = vm["db"].as<std::string>();
  flags.jobs = vm["jobs"].as<int>();
  if (flags.jobs < 0) ThrowInput("--jobs: must be >= 0");
  if (flags.jobs == 0) flags.jobs = std::max(1u, std::thread::hardware_concurrency());
  flags.kill_after = vm["kill-after"].as<int>();
  flags.dry_run = vm["dry-run"].as<bool>();
  flags.json = vm["json"].as<bool>();
  const std::string shard_flag = vm["shard"].as<std::string>();
  if (!shard_flag.empty() && SweepRanks::WouldJoin()) {
    ThrowInput("--shard: not under mpirun, where each rank's shard is its MPI rank");
  }
  std::pair<int, int> shard = {0, 1};
  if (!shard_flag.empty()) {
    shard = ParseShard(shard_flag);
  } else if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK")) {
    const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
    shard = ParseShard(fmt::format("{}/{}", rank, size ? size : "1"));
  }

  // Inputs shared by every point, loaded once: model cards, clusters, collectives, calibration.
  for (const std::string& m : in.spec.models) in.models.emplace(m, LoadModelCard(m));
  std::string collectives_path = vm["collectives"].as<std::string>();
  if (!collectives_path.empty() && collectives_path[0] != '/') {
    collectives_path = DataRoot() + "/" + collectives_path;
  }
  in.collectives = LoadCollectiveOptions(collectives_path);
  if (!in.spec.calib.empty()) in.calib = LoadCalibrationTable(in.spec.calib);
  in.grid = BuildSweepGrid(in.spec);

  SweepRanks ranks;
  if (!ranks.Distributed()) return SweepAlone(in, shard, flags);
  try {
    return SweepOverRanks(in, ranks, flags);
  } catch (const std::exception& e) {
    if (ranks.Size() == 1) throw;
    // A throw would leave the other ranks waiting on this one: report it and end the job.
    std::cerr << fmt::format("\nterasim: rank {}: {}\n", ranks.Rank(), e.what());
    ranks.AbortJob(dynamic_cast<const InputError*>(&e) != nullptr ? 1 : 3);  // as main()
  }
}

}  // namespace terasim::cli

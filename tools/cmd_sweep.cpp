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
// Spec (JSON; unknown fields are errors):
//   {"models": ["gpt3-1b"], "instances": ["p3.16xlarge"], "counts": [1, 2],
//    "nic_gbps": [0, 100],          // 0: the instance's own; optional (default [0])
//    "nic_latency_us": [-1, 5],     // -1: the instance's own; optional (default [-1])
//    "batches": [8],                // global batch, sequences
//    "strategies": [{"strategy": "1f1b", "dp": 1, "pp": 4, "tp": 2, "microbatch_size": 1,
//                    "virtual_stages": 1, "slices": 0, "order": "flush",
//                    "boundary": "p2p"}],
//    "network": "analytic",         // optional: flow | analytic (default analytic)
//    "calib": ""}                   // optional calibration table
// A point whose dp x pp x tp exceeds the cluster's GPUs, or whose batch does not split into
// dp x microbatch_size, is left out of the grid (and counted as such).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/calibrated_cost.h"
#include "models/device_spec.h"
#include "models/errors.h"
#include "models/json_reader.h"
#include "models/model_card.h"
#include "models/roofline_cost.h"
#include "schedule/generator.h"
#include "schedule/memory_estimate.h"
#include "sim/simulator.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/progress_line.h"
#include "tools/sim_run_record.h"
#include "tools/sweep_mpi.h"
#include "topologies/topology.h"
#include "traces/traces.h"

namespace terasim::cli {
namespace {

struct StrategyPoint {
  std::string strategy;
  int dp = 1, pp = 1, tp = 1, microbatch_size = 1, virtual_stages = 1, slices = 0;
  std::string order = "flush", boundary = "p2p";
};

struct SweepSpec {
  std::vector<std::string> models, instances;
  std::vector<int> counts, batches;
  std::vector<double> nic_gbps = {0}, nic_latency_us = {-1};
  std::vector<StrategyPoint> strategies;
  std::string network = "analytic";
  std::string calib;
};

template <typename T>
std::vector<T> ListOf(const JsonReader& r, const std::string& key, bool required,
                      std::vector<T> fallback = {}) {
  if (!r.Has(key)) {
    if (required) ThrowInput("{}: {}: missing", r.where(), key);
    return fallback;
  }
  const nlohmann::json& array = r.RequireArray(key);
  if (array.empty()) ThrowInput("{}: {}: must not be empty", r.where(), key);
  std::vector<T> out;
  for (size_t i = 0; i < array.size(); ++i) {
    try {
      out.push_back(array[i].get<T>());
    } catch (const nlohmann::json::exception&) {
      ThrowInput("{}: {}[{}]: wrong type ({})", r.where(), key, i, array[i].dump());
    }
  }
  return out;
}

SweepSpec ParseSpec(const std::string& path) {
  const nlohmann::json doc = ParseJson(ReadTextFile(path), path);
  JsonReader r(doc, path);
  r.RejectUnknown({"models", "instances", "counts", "nic_gbps", "nic_latency_us", "batches",
                   "strategies", "network", "calib", "note"});
  SweepSpec s;
  s.models = ListOf<std::string>(r, "models", true);
  s.instances = ListOf<std::string>(r, "instances", true);
  s.counts = ListOf<int>(r, "counts", true);
  s.batches = ListOf<int>(r, "batches", true);
  s.nic_gbps = ListOf<double>(r, "nic_gbps", false, {0.0});
  s.nic_latency_us = ListOf<double>(r, "nic_latency_us", false, {-1.0});
  s.network = r.OptionalString("network", "analytic");
  ParseNetworkMode(s.network);
  s.calib = r.OptionalString("calib", "");
  for (int c : s.counts) {
    if (c < 1) ThrowInput("{}: counts: {} must be >= 1", path, c);
  }
  for (int b : s.batches) {
    if (b < 1) ThrowInput("{}: batches: {} must be >= 1", path, b);
  }
  const nlohmann::json& strategies = r.RequireArray("strategies");
  if (strategies.empty()) ThrowInput("{}: strategies: must not be empty", path);
  for (size_t i = 0; i < strategies.size(); ++i) {
    JsonReader e = JsonReader::Element(strategies, i, path, "strategies");
    e.RejectUnknown({"strategy", "dp", "pp", "tp", "microbatch_size", "virtual_stages", "slices",
                     "order", "boundary"});
    StrategyPoint p;
    p.strategy = e.RequireString("strategy");
    ParseStrategy(p.strategy, e.where() + ": strategy");
    p.dp = static_cast<int>(e.OptionalInt("dp", 1, 1));
    p.pp = static_cast<int>(e.OptionalInt("pp", 1, 1));
    p.tp = static_cast<int>(e.OptionalInt("tp", 1, 1));
    p.microbatch_size = static_cast<int>(e.OptionalInt("microbatch_size", 1, 1));
    p.virtual_stages = static_cast<int>(e.OptionalInt("virtual_stages", 1, 1));
    p.slices = static_cast<int>(e.OptionalInt("slices", 0, 0));
    p.order = e.OptionalString("order", "flush");
    ParseSliceOrder(p.order, e.where() + ": order");
    p.boundary = e.OptionalString("boundary", "p2p");
    ParseBoundary(p.boundary, e.where() + ": boundary");
    s.strategies.push_back(p);
  }
  return s;
}

// One grid point.
struct Job {
  std::string model, instance;
  int count = 1, batch = 1;
  double nic_gbps = 0, nic_latency_us = -1;
  StrategyPoint strategy;
  nlohmann::json config;
  std::string config_key;
  int cluster = -1;  // index into the prepared clusters
};

struct PreparedCluster {
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<ClusterTopology> topology;
  DeviceSpec device;
};

// Everything a point needs, loaded once and shared read-only by the worker threads.
struct SweepInputs {
  std::string spec_path;
  SweepSpec spec;
  std::map<std::string, ModelCard> models;
  CollectiveOptions collectives;
  std::optional<CalibrationTable> calib;
  std::vector<PreparedCluster> clusters;
  std::vector<Job> grid;  // in a fixed order, the same in every process
  int left_out = 0;       // points the clusters or batches cannot hold
};

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

// Fills in.clusters, in.grid and in.left_out from in.spec. Throws InputError for an unknown
// instance type or device.
void BuildGrid(SweepInputs& in) {
  const SweepSpec& spec = in.spec;
  std::map<std::tuple<std::string, int, double, double>, int> cluster_index;
  for (const std::string& model : spec.models) {
    for (const std::string& instance : spec.instances) {
      for (int count : spec.counts) {
        for (double gbps : spec.nic_gbps) {
          for (double latency : spec.nic_latency_us) {
            for (int batch : spec.batches) {
              for (const StrategyPoint& s : spec.strategies) {
                const auto key = std::make_tuple(instance, count, gbps, latency);
                auto [it, fresh] = cluster_index.try_emplace(key, in.clusters.size());
                if (fresh) {
                  ClusterOptions o;
                  if (gbps > 0) o.nic_gbps = gbps;
                  if (latency >= 0) o.nic_latency_us = latency;
                  PreparedCluster c;
                  c.cluster = std::make_unique<Cluster>(
                      BuildCluster(fmt::format("{}:{}", instance, count), o));
                  c.topology = std::make_unique<ClusterTopology>(*c.cluster);
                  c.device = LoadDeviceSpec(c.cluster->Instance().device);
                  in.clusters.push_back(std::move(c));
                }
                const int devices = s.dp * s.pp * s.tp;
                if (devices > in.clusters[it->second].cluster->NumGpus() ||
                    batch % (s.dp * s.microbatch_size) != 0) {
                  ++in.left_out;
                  continue;
                }
                Job job;
                job.model = model;
                job.instance = instance;
                job.count = count;
                job.batch = batch;
                job.nic_gbps = gbps;
                job.nic_latency_us = latency;
                job.strategy = s;
                job.cluster = it->second;
                job.config = {{"model", model},
                              {"cluster", fmt::format("{}:{}", instance, count)},
                              {"nic_gbps", gbps},
                              {"nic_latency_us", latency},
                              {"batch", batch},
                              {"strategy", s.strategy},
                              {"dp", s.dp},
                              {"pp", s.pp},
                              {"tp", s.tp},
                              {"microbatch_size", s.microbatch_size},
                              {"virtual_stages", s.virtual_stages},
                              {"slices", s.slices},
                              {"order", s.order},
                              {"boundary", s.boundary},
                              {"network", spec.network},
                              {"calib", spec.calib}};
                job.config_key = "sweep " + job.config.dump();
                in.grid.push_back(std::move(job));
              }
            }
          }
        }
      }
    }
  }
}

// Generates and simulates grid point `index`; a failure becomes the result's error.
SweepResult SimulatePoint(const SweepInputs& in, size_t index, int rank, const std::string& label) {
  const Job& job = in.grid[index];
  SweepResult out;
  out.job = index;
  out.rank = rank;
  try {
    const ModelCard& card = in.models.at(job.model);
    const PreparedCluster& c = in.clusters[job.cluster];
    GenerateOptions g;
    g.model = card;
    g.strategy = ParseStrategy(job.strategy.strategy);
    g.dp = job.strategy.dp;
    g.pp = job.strategy.pp;
    g.tp = job.strategy.tp;
    g.microbatch_size = job.strategy.microbatch_size;
    g.microbatches = job.batch / (job.strategy.dp * job.strategy.microbatch_size);
    g.virtual_stages = job.strategy.virtual_stages;
    g.uniform_slices = job.strategy.slices;
    g.order = ParseSliceOrder(job.strategy.order);
    g.boundary = ParseBoundary(job.strategy.boundary);
    const Schedule schedule = Generate(g);
    const RooflineCostModel roofline(card, c.device);
    std::unique_ptr<CalibratedCostModel> calibrated;
    if (in.calib) calibrated = std::make_unique<CalibratedCostModel>(*in.calib, &roofline);
    const ComputeCostModel& cost =
        calibrated ? static_cast<const ComputeCostModel&>(*calibrated) : roofline;
    const MemoryEstimate memory = EstimateMemory(schedule, card, c.device);
    SimOptions sim;
    sim.network = ParseNetworkMode(in.spec.network);
    sim.collectives = in.collectives;
    sim.model = &card;
    for (const DeviceMemory& m : memory.devices) sim.peak_memory_bytes.push_back(m.peak);
    SimResult result = Simulate(schedule, *c.topology, cost, sim);
    RunRecord record = SimRunRecord(schedule, c.cluster->Spec(), result, memory.fits, job.config);
    record.config_key = job.config_key;
    record.label = label;
    out.record = std::move(record);
    out.rows = std::move(result.trace.rows);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

// Simulates a list of points on a pool of threads; the owning thread takes the results in
// the order they finish. The destructor stops handing out points and joins the threads.
class PointWorkers {
 public:
  PointWorkers(const SweepInputs& in, std::vector<size_t> todo, int threads, int rank,
               std::string label)
      : in_(in), todo_(std::move(todo)), rank_(rank), label_(std::move(label)) {
    const int n = std::min<int>(threads, static_cast<int>(todo_.size()));
    for (int t = 0; t < n; ++t) threads_.emplace_back([this] { Work(); });
  }
  ~PointWorkers() { stop_ = true; }  // threads_, declared last, join first

  size_t Size() const { return todo_.size(); }
  // The next finished point, waiting at most `timeout`; nullopt when none finished by then.
  std::optional<SweepResult> Next(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !results_.empty(); })) return std::nullopt;
    SweepResult r = std::move(results_.front());
    results_.pop_front();
    return r;
  }
  // The next finished point. Precondition: fewer taken than Size().
  SweepResult Next() { return *Next(std::chrono::hours(24 * 365)); }

 private:
  void Work() {
    for (size_t k = next_++; k < todo_.size() && !stop_; k = next_++) {
      SweepResult r = SimulatePoint(in_, todo_[k], rank_, label_);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        results_.push_back(std::move(r));
      }
      ready_.notify_one();
    }
  }

  const SweepInputs& in_;
  const std::vector<size_t> todo_;
  const int rank_;
  const std::string label_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<SweepResult> results_;
  std::vector<std::jthread> threads_;
};

// The one writer of a sweep: each point in its own transaction, never a config_key the store
// already holds (another sweep may have stored it since the start). A failed point is
// reported on stderr and counted.
class PointWriter {
 public:
  PointWriter(ResultStore& store, const SweepInputs& in, int kill_after, int ranks)
      : store_(store), in_(in), kill_after_(kill_after), stored_by_rank_(ranks, 0) {}

  // Throws what ResultStore::WriteRun throws.
  void Write(const SweepResult& r) {
    if (!r.record) {
      ++failed_;
      std::cerr << fmt::format("\nsweep: {}: {}\n", in_.grid[r.job].config.dump(), r.error);
      return;
    }
    if (store_.FindRunByConfigKey(r.record->config_key)) {
      ++already_stored_;
      return;
    }
    store_.WriteRun(*r.record, r.rows);
    ++stored_by_rank_.at(r.rank);
    if (kill_after_ > 0 && Stored() >= kill_after_) std::raise(SIGKILL);
  }
  int Stored() const {
    int n = 0;
    for (int s : stored_by_rank_) n += s;
    return n;
  }
  int Failed() const { return failed_; }
  // Points found in the store at write time.
  int AlreadyStored() const { return already_stored_; }
  const std::vector<int>& StoredByRank() const { return stored_by_rank_; }

 private:
  ResultStore& store_;
  const SweepInputs& in_;
  const int kill_after_;
  std::vector<int> stored_by_rank_;
  int failed_ = 0;
  int already_stored_ = 0;
};

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
  for (size_t i = 0; i < in.grid.size(); ++i) {
    if (static_cast<int>(i % shard.second) == shard.first) mine.push_back(i);
  }
  ResultStore store = ResultStore::OpenOrCreate(flags.db);
  std::vector<size_t> todo;
  int skipped = 0;
  for (size_t i : mine) {
    if (store.FindRunByConfigKey(in.grid[i].config_key)) {
      ++skipped;
    } else {
      todo.push_back(i);
    }
  }
  if (flags.dry_run) {
    for (size_t i : mine) {
      const bool stored = store.FindRunByConfigKey(in.grid[i].config_key).has_value();
      std::cout << fmt::format("{} {}\n", stored ? "stored " : "todo   ", in.grid[i].config.dump());
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
               {"points", in.grid.size()},
               {"left_out", in.left_out},
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
        in.spec_path, in.grid.size(), in.left_out, shard.first, shard.second, mine.size(), skipped,
        writer.Stored(), writer.Failed(), wall_s, flags.jobs);
  }
  return writer.Failed() > 0 ? 1 : 0;
}

// Under mpirun: every rank simulates its shard, rank 0 alone reads and writes the store.
// Returns the exit code.
int SweepOverRanks(const SweepInputs& in, SweepRanks& ranks, const SweepFlags& flags) {
  const int rank = ranks.Rank();
  const int size = ranks.Size();
  const size_t points = in.grid.size();
  // Rank 0 says which points are stored ('1') and which are not ('0').
  std::optional<ResultStore> store;
  std::string stored(points, '0');
  if (rank == 0) {
    store = ResultStore::OpenOrCreate(flags.db);
    for (size_t i = 0; i < points; ++i) {
      if (store->FindRunByConfigKey(in.grid[i].config_key)) stored[i] = '1';
    }
    if (flags.dry_run) {
      for (size_t i = 0; i < points; ++i) {
        std::cout << fmt::format("{} rank {} {}\n", stored[i] == '1' ? "stored " : "todo   ",
                                 i % size, in.grid[i].config.dump());
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
               {"left_out", in.left_out},
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
        in.spec_path, points, in.left_out, size, skipped, writer.Stored(),
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
  in.spec = ParseSpec(in.spec_path);
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
  BuildGrid(in);

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

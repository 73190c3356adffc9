// terasim sweep: a what-if grid from a spec file (models x instance types x instance counts x
// NIC bandwidths x NIC latencies x batches x strategies), each point generated and simulated
// on a pool of threads, each result stored in the results store in its own transaction.
//
// Resumable: every point has a config_key (its canonical configuration); points the store
// already holds are skipped, so a sweep killed at any moment (kill -9 included) resumes where
// it stopped with nothing lost or duplicated. Sharding: `--shard I/N` runs every N-th point
// from I; under mpirun (Open MPI's OMPI_COMM_WORLD_RANK / _SIZE) the shard is the rank, and
// every rank writes its own points into the same store (SQLite WAL with a busy timeout lets
// several processes write one file; each point belongs to one rank, so none is written
// twice). Worker threads only simulate; the calling thread is the store's single writer.
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
#include "tools/sim_run_record.h"
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

struct JobResult {
  size_t job = 0;
  std::optional<RunRecord> record;
  std::vector<TraceRow> rows;
  std::string error;
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

}  // namespace

int RunSweep(const Args& args) {
  po::options_description options("terasim sweep");
  // clang-format off
  options.add_options()
      ("spec", po::value<std::string>()->default_value(""), "the sweep spec (JSON)")
      ("db", po::value<std::string>()->default_value(kDefaultStorePath), "results store")
      ("jobs", po::value<int>()->default_value(0, "all cores"), "worker threads")
      ("shard", po::value<std::string>()->default_value("", "0/1, or the MPI rank/size"),
       "run every N-th point from I (I/N)")
      ("collectives", po::value<std::string>()->default_value("sim/data/collectives.json"),
       "collective algorithm parameters (relative paths: under the data root)")
      ("dry-run", po::bool_switch(), "list the points and whether they are stored; run nothing")
      ("kill-after", po::value<int>()->default_value(0),
       "testing: kill -9 this process after storing N results (0: never)")
      ("json", po::bool_switch(), "print the summary as JSON");
  // clang-format on
  po::positional_options_description positional;
  positional.add("spec", 1);
  po::variables_map vm;
  if (!Parse("sweep", "SPEC.json [--jobs N] [--db FILE] [--shard I/N] [--json]", options,
             positional, args, vm)) {
    return 0;
  }
  const std::string spec_path = vm["spec"].as<std::string>();
  if (spec_path.empty()) ThrowInput("terasim sweep: a SPEC.json is required");
  const SweepSpec spec = ParseSpec(spec_path);
  int jobs_n = vm["jobs"].as<int>();
  if (jobs_n < 0) ThrowInput("--jobs: must be >= 0");
  if (jobs_n == 0) jobs_n = std::max(1u, std::thread::hardware_concurrency());
  std::pair<int, int> shard = {0, 1};
  if (!vm["shard"].as<std::string>().empty()) {
    shard = ParseShard(vm["shard"].as<std::string>());
  } else if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK")) {
    const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
    shard = ParseShard(fmt::format("{}/{}", rank, size ? size : "1"));
  }
  const int kill_after = vm["kill-after"].as<int>();

  // Inputs shared by every job, loaded once: model cards, clusters, collectives, calibration.
  std::map<std::string, ModelCard> models;
  for (const std::string& m : spec.models) models.emplace(m, LoadModelCard(m));
  std::string collectives_path = vm["collectives"].as<std::string>();
  if (!collectives_path.empty() && collectives_path[0] != '/') {
    collectives_path = DataRoot() + "/" + collectives_path;
  }
  const CollectiveOptions collectives = LoadCollectiveOptions(collectives_path);
  std::optional<CalibrationTable> calib;
  if (!spec.calib.empty()) calib = LoadCalibrationTable(spec.calib);
  std::vector<PreparedCluster> clusters;
  std::map<std::tuple<std::string, int, double, double>, int> cluster_index;

  // The grid, in a fixed order.
  std::vector<Job> grid;
  int left_out = 0;
  for (const std::string& model : spec.models) {
    for (const std::string& instance : spec.instances) {
      for (int count : spec.counts) {
        for (double gbps : spec.nic_gbps) {
          for (double latency : spec.nic_latency_us) {
            for (int batch : spec.batches) {
              for (const StrategyPoint& s : spec.strategies) {
                const auto key = std::make_tuple(instance, count, gbps, latency);
                auto [it, fresh] = cluster_index.try_emplace(key, clusters.size());
                if (fresh) {
                  ClusterOptions o;
                  if (gbps > 0) o.nic_gbps = gbps;
                  if (latency >= 0) o.nic_latency_us = latency;
                  PreparedCluster c;
                  c.cluster = std::make_unique<Cluster>(
                      BuildCluster(fmt::format("{}:{}", instance, count), o));
                  c.topology = std::make_unique<ClusterTopology>(*c.cluster);
                  c.device = LoadDeviceSpec(c.cluster->Instance().device);
                  clusters.push_back(std::move(c));
                }
                const int devices = s.dp * s.pp * s.tp;
                if (devices > clusters[it->second].cluster->NumGpus() ||
                    batch % (s.dp * s.microbatch_size) != 0) {
                  ++left_out;
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
                grid.push_back(std::move(job));
              }
            }
          }
        }
      }
    }
  }
  std::vector<size_t> mine;
  for (size_t i = 0; i < grid.size(); ++i) {
    if (static_cast<int>(i % shard.second) == shard.first) mine.push_back(i);
  }

  ResultStore store = ResultStore::OpenOrCreate(vm["db"].as<std::string>());
  std::vector<size_t> todo;
  int skipped = 0;
  for (size_t i : mine) {
    if (store.FindRunByConfigKey(grid[i].config_key)) {
      ++skipped;
    } else {
      todo.push_back(i);
    }
  }
  if (vm["dry-run"].as<bool>()) {
    for (size_t i : mine) {
      std::cout << fmt::format("{} {}\n",
                               store.FindRunByConfigKey(grid[i].config_key) ? "stored " : "todo   ",
                               grid[i].config.dump());
    }
    return 0;
  }

  // Workers simulate; this thread writes each result in its own transaction.
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<JobResult> results;
  auto work = [&] {
    for (size_t k = next++; k < todo.size(); k = next++) {
      const Job& job = grid[todo[k]];
      JobResult out;
      out.job = todo[k];
      try {
        const ModelCard& card = models.at(job.model);
        const PreparedCluster& c = clusters[job.cluster];
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
        if (calib) calibrated = std::make_unique<CalibratedCostModel>(*calib, &roofline);
        const ComputeCostModel& cost =
            calibrated ? static_cast<const ComputeCostModel&>(*calibrated) : roofline;
        const MemoryEstimate memory = EstimateMemory(schedule, card, c.device);
        SimOptions sim;
        sim.network = ParseNetworkMode(spec.network);
        sim.collectives = collectives;
        sim.model = &card;
        for (const DeviceMemory& m : memory.devices) sim.peak_memory_bytes.push_back(m.peak);
        SimResult result = Simulate(schedule, *c.topology, cost, sim);
        RunRecord record =
            SimRunRecord(schedule, c.cluster->Spec(), result, memory.fits, job.config);
        record.config_key = job.config_key;
        record.label = "sweep " + spec_path;
        out.record = std::move(record);
        out.rows = std::move(result.trace.rows);
      } catch (const std::exception& e) {
        out.error = e.what();
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        results.push_back(std::move(out));
      }
      ready.notify_one();
    }
  };
  const auto start = std::chrono::steady_clock::now();
  int stored = 0, failed = 0;
  {
    std::vector<std::jthread> workers;
    const int threads = std::min<int>(jobs_n, std::max<size_t>(1, todo.size()));
    for (int t = 0; t < threads && !todo.empty(); ++t) workers.emplace_back(work);
    for (size_t done = 0; done < todo.size(); ++done) {
      JobResult r;
      {
        std::unique_lock<std::mutex> lock(mutex);
        ready.wait(lock, [&] { return !results.empty(); });
        r = std::move(results.front());
        results.pop_front();
      }
      if (r.record) {
        store.WriteRun(*r.record, r.rows);
        ++stored;
        if (kill_after > 0 && stored >= kill_after) std::raise(SIGKILL);
      } else {
        ++failed;
        std::cerr << fmt::format("\nsweep: {}: {}\n", grid[r.job].config.dump(), r.error);
      }
      std::cerr << fmt::format("\rsweep: {}/{} done, {} already stored, {} failed", done + 1,
                               todo.size(), skipped, failed)
                << std::flush;
    }
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << "\n";
  if (vm["json"].as<bool>()) {
    PrintJson({{"spec", spec_path},
               {"db", store.path()},
               {"points", grid.size()},
               {"left_out", left_out},
               {"shard", fmt::format("{}/{}", shard.first, shard.second)},
               {"shard_points", mine.size()},
               {"skipped", skipped},
               {"stored", stored},
               {"failed", failed},
               {"jobs", jobs_n},
               {"wall_time_s", wall_s}});
  } else {
    std::cout << fmt::format(
        "{}: {} points ({} left out: too few GPUs or batch does not split), shard {}/{}: {} "
        "points, {} already stored, {} simulated and stored, {} failed, {:.2f} s on {} threads\n",
        spec_path, grid.size(), left_out, shard.first, shard.second, mine.size(), skipped, stored,
        failed, wall_s, jobs_n);
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace terasim::cli

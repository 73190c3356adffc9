// The sweep's workers: SimulatePoint generates and simulates one grid point, PointWorkers runs
// a list of points on a pool of threads and hands back the results in the order they finish.
// Workers only simulate; the owning thread writes (tools/sweep/sweep_writer.h).
//
// Thread safety: SweepInputs is read-only while workers run; PointWorkers' members are called
// by its owning thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "models/calibrated_cost.h"
#include "models/model_card.h"
#include "sim/collective_plan.h"
#include "tools/sweep/sweep_grid.h"
#include "tools/sweep/sweep_spec.h"
#include "traces/result_store.h"
#include "traces/trace.h"

namespace terasim {

// One simulated grid point: its run and trace, or why it failed.
struct SweepResult {
  size_t job = 0;  // index into the sweep's grid (the same on every rank)
  int rank = 0;    // the process that simulated it
  std::optional<RunRecord> record;
  std::vector<TraceRow> rows;
  std::string error;  // when record is empty
};

// Everything a point needs, loaded once and shared read-only by the worker threads.
struct SweepInputs {
  std::string spec_path;
  SweepSpec spec;
  std::map<std::string, ModelCard> models;
  CollectiveOptions collectives;
  std::optional<CalibrationTable> calib;
  SweepGrid grid;
  // Whether each point's per-op trace rows are stored (--store-ops all); by default a sweep
  // stores its runs' summaries and metrics only (a 10-point sweep's ops were 109 MB).
  bool store_ops = false;
};

// Generates and simulates grid point `index` on its cluster from `clusters`; a failure
// becomes the result's error (never throws).
SweepResult SimulatePoint(const SweepInputs& in, ClusterCache& clusters, size_t index, int rank,
                          const std::string& label);

// Simulates `todo` (grid indices) on `threads` threads (at most one per point). The destructor
// stops handing out points and joins the threads.
class PointWorkers {
 public:
  PointWorkers(const SweepInputs& in, std::vector<size_t> todo, int threads, int rank,
               std::string label);
  ~PointWorkers() { stop_ = true; }  // threads_, declared last, join first
  PointWorkers(const PointWorkers&) = delete;
  PointWorkers& operator=(const PointWorkers&) = delete;

  size_t Size() const { return todo_.size(); }
  // The next finished point, waiting at most `timeout`; nullopt when none finished by then.
  std::optional<SweepResult> Next(std::chrono::milliseconds timeout);
  // The next finished point. Precondition: fewer taken than Size().
  SweepResult Next() { return *Next(std::chrono::hours(24 * 365)); }
  // Clusters built so far.
  size_t ClustersBuilt() const { return clusters_.Built(); }

 private:
  void Work();

  const SweepInputs& in_;
  const std::vector<size_t> todo_;
  const int rank_;
  const std::string label_;
  ClusterCache clusters_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<SweepResult> results_;
  std::vector<std::jthread> threads_;
};

}  // namespace terasim

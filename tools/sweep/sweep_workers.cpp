#include "tools/sweep/sweep_workers.h"

#include <algorithm>
#include <memory>

#include "models/roofline_cost.h"
#include "schedule/generator.h"
#include "schedule/memory_estimate.h"
#include "sim/simulator.h"
#include "tools/sim_run_record.h"
#include "traces/run_config.h"

namespace terasim {

SweepResult SimulatePoint(const SweepInputs& in, ClusterCache& clusters, size_t index, int rank,
                          const std::string& label) {
  const SweepPoint& job = in.grid.points[index];
  SweepResult out;
  out.job = index;
  out.rank = rank;
  try {
    const ModelCard& card = in.models.at(job.model);
    const std::shared_ptr<const PreparedCluster> c = clusters.Get(job);
    const DeviceSpec& device = in.grid.devices.at(job.instance);
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
    const RooflineCostModel roofline(card, device);
    std::unique_ptr<CalibratedCostModel> calibrated;
    if (in.calib) calibrated = std::make_unique<CalibratedCostModel>(*in.calib, &roofline);
    const ComputeCostModel& cost =
        calibrated ? static_cast<const ComputeCostModel&>(*calibrated) : roofline;
    const MemoryEstimate memory = EstimateMemory(schedule, card, device);
    SimOptions sim;
    sim.network = ParseNetworkMode(in.spec.network);
    sim.collectives = in.collectives;
    sim.model = &card;
    for (const DeviceMemory& m : memory.devices) sim.peak_memory_bytes.push_back(m.peak);
    SimResult result = Simulate(schedule, *c->topology, cost, sim);
    // The stored configuration in the one layout of every command (traces/run_config.h); the
    // resume key stays the spec's flat point (config_key), so stores of layout 1 resume.
    RunConfig config;
    config.command = "sweep";
    config.model = job.model;
    config.cluster = c->cluster.Spec();
    config.batch = job.batch;
    config.network = in.spec.network;
    config.cost_model = cost.Name();
    config.schedule = ScheduleConfigJson(g);
    config.options = {{"nic_gbps", job.nic_gbps},
                      {"nic_latency_us", job.nic_latency_us},
                      {"calib", in.spec.calib}};
    RunRecord record =
        cli::SimRunRecord(schedule, c->cluster.Spec(), result, memory.fits, RunConfigJson(config));
    record.config_key = job.config_key;
    record.label = label;
    out.record = std::move(record);
    if (in.store_ops) out.rows = std::move(result.trace.rows);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

PointWorkers::PointWorkers(const SweepInputs& in, std::vector<size_t> todo, int threads, int rank,
                           std::string label)
    : in_(in),
      todo_(std::move(todo)),
      rank_(rank),
      label_(std::move(label)),
      clusters_(static_cast<size_t>(std::max(1, threads)) * 2) {
  const int n = std::min<int>(threads, static_cast<int>(todo_.size()));
  for (int t = 0; t < n; ++t) threads_.emplace_back([this] { Work(); });
}

std::optional<SweepResult> PointWorkers::Next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !results_.empty(); })) return std::nullopt;
  SweepResult r = std::move(results_.front());
  results_.pop_front();
  return r;
}

void PointWorkers::Work() {
  for (size_t k = next_++; k < todo_.size() && !stop_; k = next_++) {
    SweepResult r = SimulatePoint(in_, clusters_, todo_[k], rank_, label_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      results_.push_back(std::move(r));
    }
    ready_.notify_one();
  }
}

}  // namespace terasim

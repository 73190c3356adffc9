#include "sim/simulator.h"

#include <algorithm>
#include <chrono>

#include "models/errors.h"
#include "models/layer_flops.h"
#include "sim/op_work.h"
#include "sim/replay_stats.h"

namespace terasim {

namespace {

SimResult SimulateOnce(const Schedule& schedule, const NetworkTopology& topology,
                       const ComputeCostModel& cost, const SimOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  ReplayOptions replay_options;
  replay_options.fold = options.fold && !options.record_link_rates;
  replay_options.network = options.network;
  replay_options.placement = options.placement;
  replay_options.collectives = options.collectives;
  replay_options.compute_ns = options.compute_ns;
  replay_options.device_speed = options.device_speed;
  Replay replay(schedule, topology, cost, replay_options);
  const int num_links = static_cast<int>(topology.Links().size());
  ReplayStats stats(schedule, num_links);
  replay.AddObserver(&stats);
  SimResult result;
  if (options.record_link_rates) {
    replay.SetLinkRateSampler([&result](TimeNs t, int link, double rate) {
      result.link_rates.push_back(LinkRateSample{t, link, rate});
    });
  }
  replay.Run();

  result.network = options.network;
  result.iteration_time_ns = replay.EndNs();
  const SymmetryFold& fold = replay.Fold();
  result.fold_order = fold.Order();
  result.fold_note = fold.WhyNot();
  result.events = replay.Events();
  result.flows = replay.Flows();
  result.analytic_staggered_fraction = replay.StaggeredFraction();
  const TimeNs t = std::max<TimeNs>(1, result.iteration_time_ns);

  // A folded replay saw only the representatives: every device has its representative's times,
  // every link its class representative's bytes.
  std::vector<ReplayStats::DeviceTimes> times = stats.Devices(result.iteration_time_ns);
  for (int d = 0; d < schedule.devices; ++d) times[d] = times[fold.RepDevice(d)];
  for (int d = 0; d < schedule.devices; ++d) {
    DeviceResult device;
    device.device = d;
    device.gpu = replay.GpuOf(d);
    device.compute_fraction = static_cast<double>(times[d].compute_ns) / t;
    device.comm_fraction = static_cast<double>(times[d].comm_ns) / t;
    device.idle_fraction = static_cast<double>(times[d].idle_ns) / t;
    if (d < static_cast<int>(options.peak_memory_bytes.size())) {
      device.peak_memory_bytes = options.peak_memory_bytes[d];
      result.peak_memory_bytes = std::max(result.peak_memory_bytes, device.peak_memory_bytes);
    }
    result.bubble_fraction += device.idle_fraction / std::max(1, schedule.devices);
    result.devices.push_back(device);
  }

  const std::vector<TimeNs> busy = replay.LinkBusyNs();
  for (int link = 0; link < num_links; ++link) {
    const double bytes = stats.LinkBytes()[fold.LinkRep(link)];
    if (bytes <= 0) continue;
    const NetLink& l = topology.Links()[link];
    result.links.push_back(
        LinkResult{link, l.name, bytes, bytes / (l.bw_bytes_per_s * NsToSeconds(t)), busy[link]});
  }
  for (int op : replay.CriticalPath()) result.critical_path.push_back(schedule.ops[op].key);

  result.trace.run_kind = "sim";
  result.trace.label = schedule.source;
  result.trace.metadata["model"] = schedule.model;
  result.trace.metadata["network"] = NetworkModeName(options.network);
  result.trace.metadata["cost_model"] = cost.Name();
  result.trace.rows.reserve(schedule.ops.size());
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const Op& op = schedule.ops[i];
    TraceRow row;
    row.key = op.key;
    row.kind = op.kind;
    row.device = op.device;
    row.stream = op.stream;
    row.start_ns = replay.StartNs(static_cast<int>(i));
    row.end_ns = replay.EndNs(static_cast<int>(i));
    if (IsCompute(op.kind)) {
      if (options.model != nullptr)
        row.flops = WorkFlops(*options.model, SliceWorkOf(op, replay.WorkTp()[i]));
      result.model_flops += row.flops;
    } else {
      row.bytes = op.bytes;
    }
    result.trace.rows.push_back(std::move(row));
  }
  result.tflops_per_gpu =
      result.model_flops / (NsToSeconds(t) * std::max(1, schedule.devices)) / 1e12;
  result.wall_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace

SimResult Simulate(const Schedule& schedule, const NetworkTopology& topology,
                   const ComputeCostModel& cost, const SimOptions& options) {
  if (!options.fold) return SimulateOnce(schedule, topology, cost, options);
  try {
    return SimulateOnce(schedule, topology, cost, options);
  } catch (const InputError&) {
    // A stalled folded replay: replay it whole for a message naming every device.
    SimOptions full = options;
    full.fold = false;
    return SimulateOnce(schedule, topology, cost, full);
  }
}

}  // namespace terasim

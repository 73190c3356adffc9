#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <numeric>
#include <string_view>

#include "models/errors.h"
#include "models/layer_flops.h"
#include "sim/op_work.h"
#include "sim/plan_cache.h"
#include "sim/replay_graph.h"
#include "sim/replay_stats.h"
#include "sim/route_cache.h"
#include "sim/symmetry_fold.h"

namespace terasim {

namespace {

// `keys`: the ops' keys when they are held apart (GenerateForReplay), else nullptr. `plans`:
// collective plans computed already for this topology and options (ReplayOptions::plans), or
// nullptr.
SimResult SimulateOnce(const Schedule& schedule, const NetworkTopology& topology,
                       const ComputeCostModel& cost, const SimOptions& options,
                       const OpKeys* keys = nullptr,
                       const std::shared_ptr<PlanCache>& plans = nullptr) {
  const auto key_of = [&](int op) -> std::string_view {
    return keys != nullptr ? (*keys)[op] : std::string_view(schedule.ops[op].key);
  };
  const auto wall_start = std::chrono::steady_clock::now();
  ReplayOptions replay_options;
  const bool declared = schedule.symmetry.representatives_only;
  if (declared && options.record_link_rates) {
    ThrowInput(
        "{}: holds only representative devices' ops, which are replayed folded only without "
        "--link-rates; generate the whole schedule",
        schedule.source.empty() ? "schedule" : schedule.source);
  }
  replay_options.fold = options.fold && !options.record_link_rates;
  replay_options.network = options.network;
  replay_options.placement = options.placement;
  replay_options.collectives = options.collectives;
  replay_options.compute_ns = options.compute_ns;
  replay_options.device_speed = options.device_speed;
  replay_options.plans = plans;
  Replay replay(schedule, topology, cost, replay_options);
  const int num_links = static_cast<int>(topology.Links().size());
  ReplayStats stats(schedule.devices, num_links);
  replay.SetStats(&stats);
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
  const std::vector<double>& link_bytes = stats.LinkBytes();  // adds the counted lists once
  for (int link = 0; link < num_links; ++link) {
    const double bytes = link_bytes[fold.LinkRep(link)];
    if (bytes <= 0) continue;
    const NetLink& l = topology.Links()[link];
    result.links.push_back(
        LinkResult{link, l.name, bytes, bytes / (l.bw_bytes_per_s * NsToSeconds(t)), busy[link]});
  }
  for (int op : replay.CriticalPath()) result.critical_path.emplace_back(key_of(op));

  result.trace.run_kind = "sim";
  result.trace.label = schedule.source;
  result.trace.metadata["model"] = schedule.model;
  result.trace.metadata["network"] = NetworkModeName(options.network);
  result.trace.metadata["cost_model"] = cost.Name();
  if (options.trace_rows) result.trace.rows.reserve(schedule.ops.size());
  // The flops of each distinct compute work, once (the ops are then not read without rows).
  const std::vector<SliceWork>& works = replay.Works();
  std::vector<Flops> work_flops(works.size(), 0);
  if (options.model != nullptr) {
    for (size_t w = 0; w < works.size(); ++w) work_flops[w] = WorkFlops(*options.model, works[w]);
  }
  const std::vector<int>& work_of = replay.WorkOf();
  if (!options.trace_rows) {
    // The figures only: the loop below without rows, its sums kept in locals (the same adds in
    // the same order).
    const int n = static_cast<int>(schedule.ops.size());
    const double order = fold.Order();
    int64_t ops = 0;
    Flops model_flops = result.model_flops;
    for (int i = 0; i < n; ++i) {
      if (declared && !fold.IsRep(replay.DeviceOf(i))) continue;
      ++ops;
      const int w = work_of[i];
      if (w >= 0) model_flops += declared ? work_flops[w] * order : work_flops[w];
    }
    result.ops += ops;
    result.model_flops = model_flops;
  }
  for (size_t i = 0; options.trace_rows && i < schedule.ops.size(); ++i) {
    // A representatives-only schedule: rows of the simulated devices, each standing for its
    // Order() images (the other devices' rows are not built).
    if (declared && !fold.IsRep(replay.DeviceOf(static_cast<int>(i)))) continue;
    ++result.ops;
    Flops flops = 0;
    const bool compute = work_of[i] >= 0;
    if (compute) {
      flops = work_flops[work_of[i]];
      result.model_flops += declared ? flops * fold.Order() : flops;
    }
    if (!options.trace_rows) continue;
    const Op& op = schedule.ops[i];
    TraceRow& row = result.trace.rows.emplace_back();
    row.key = key_of(static_cast<int>(i));
    row.kind = op.kind;
    row.device = op.device;
    row.stream = op.stream;
    row.start_ns = replay.StartNs(static_cast<int>(i));
    row.end_ns = replay.EndNs(static_cast<int>(i));
    row.flops = flops;
    if (!compute) row.bytes = op.bytes;
  }
  result.tflops_per_gpu =
      result.model_flops / (NsToSeconds(t) * std::max(1, schedule.devices)) / 1e12;
  result.wall_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

// Simulate, with the collective plans of `plans` (nullptr: none yet).
SimResult SimulateWith(const Schedule& schedule, const NetworkTopology& topology,
                       const ComputeCostModel& cost, const SimOptions& options,
                       const std::shared_ptr<PlanCache>& plans) {
  // A representatives-only schedule cannot be replayed whole.
  if (!options.fold || schedule.symmetry.representatives_only) {
    return SimulateOnce(schedule, topology, cost, options, nullptr, plans);
  }
  try {
    return SimulateOnce(schedule, topology, cost, options, nullptr, plans);
  } catch (const InputError&) {
    // A stalled folded replay: replay it whole for a message naming every device.
    SimOptions full = options;
    full.fold = false;
    return SimulateOnce(schedule, topology, cost, full, nullptr, plans);
  }
}

}  // namespace

SimResult Simulate(const Schedule& schedule, const NetworkTopology& topology,
                   const ComputeCostModel& cost, const SimOptions& options) {
  return SimulateWith(schedule, topology, cost, options, nullptr);
}

namespace {

// A representatives-only schedule like `reps` but with few micro-batches (the same groups,
// collective sizes and transfers: what SymmetryFold::Declared checks), or `reps` itself when
// its micro-batches are given one by one (TeraPipe's slicing) or no smaller count is valid.
Schedule DeclaredProbe(const GenerateOptions& reps) {
  if (reps.slicing.empty()) {
    for (int m : {1, reps.pp, 2 * reps.pp}) {
      if (m >= reps.microbatches) break;
      GenerateOptions probe = reps;
      probe.microbatches = m;
      try {
        return Generate(probe);
      } catch (const InputError&) {
        // Not a valid count for this strategy (interleaved: a multiple of P; DualPipeV: 2P).
      }
    }
  }
  return Generate(reps);
}

// The representatives a declared symmetry check of `probe` leaves: {0} where
// SymmetryFold::Declared folds it (tp rank 0 alone); else, where it refuses only the tp
// rotation ("tensor-parallel:"), the tp ranks (of 0..T-1) that SymmetryFold::DeclaredLargest
// simulates, when they are all of replica 0's first tp group's (what a representatives-only
// schedule can hold); else empty. The checks a replay of `probe` makes (Replay::ApplyFold),
// on one graph without the replay's network and state; the plans they compute go to `plans`.
std::vector<int> DeclaredTpRanks(const Schedule& probe, const NetworkTopology& topology,
                                 const SimOptions& options, PlanCache& plans) {
  std::vector<int> placement = options.placement;
  if (placement.empty()) {
    for (int d = 0; d < probe.devices; ++d) placement.push_back(d);
  }
  const bool placed = static_cast<int>(placement.size()) >= probe.devices &&
                      std::all_of(placement.begin(), placement.end(),
                                  [&](int gpu) { return gpu >= 0 && gpu < topology.NumGpus(); });
  // A placement the replay refuses: the whole schedule, whose replay names the error.
  if (!placed) return {};
  const ReplayGraph graph = BuildReplayGraph(probe, placement);
  // With the comm keys, Declared reads no op nor `partner` and `group` (as Replay::ApplyFold),
  // and it may answer from or keep its fold in `plans` (DeclaredFoldMemo).
  const std::vector<int> no_group;
  const FoldGraph fold_graph{probe,
                             placement,
                             graph.work_tp,
                             graph.partner,
                             no_group,
                             graph.succ_begin,
                             graph.succ,
                             options.compute_ns,
                             options.device_speed,
                             &graph.comm_keys,
                             &plans};
  // The routes go to `plans` too (PlanCache::Routes), where the replay finds them.
  RouteCache& routes = plans.Routes();
  const SymmetryFold declared =
      SymmetryFold::Declared(fold_graph, topology, routes, options.collectives);
  if (declared.Folded()) return {0};
  // Refused for another reason than the tp rotation: the whole schedule.
  if (declared.WhyNot().find("tensor-parallel:") == std::string::npos || probe.shape.tp <= 1) {
    return {};
  }
  // Else the representatives of the largest fold the probe's declared symmetry allows (a
  // rotation by 2, 4, ... or other tp permutations), when they are tp ranks of replica 0 alone.
  const SymmetryFold fold =
      SymmetryFold::DeclaredLargest(fold_graph, topology, routes, options.collectives);
  if (!fold.Folded()) return {};
  const int tp = probe.shape.tp;
  std::vector<int> ranks;
  for (int d = 0; d < probe.devices; ++d) {
    if (!fold.IsRep(d)) continue;
    if (d >= tp) {
      // Another tp group's or replica's rank must stand for its first group's image.
      if (!fold.IsRep(d % tp) ||
          (probe.symmetry.replica_block > 0 && d >= probe.symmetry.replica_block)) {
        return {};
      }
      continue;
    }
    ranks.push_back(d);
  }
  if (static_cast<int>(ranks.size()) >= tp) return {};
  return ranks;
}

// RepresentativeTpSet, planning the collectives its checks need into `plans`.
std::vector<int> RepresentativeTpSetWith(const GenerateOptions& gen,
                                         const NetworkTopology& topology, const SimOptions& options,
                                         PlanCache& plans) {
  const bool declarable =
      options.fold && !options.record_link_rates && options.compute_ns.empty() &&
      std::adjacent_find(options.device_speed.begin(), options.device_speed.end(),
                         std::not_equal_to<>()) == options.device_speed.end() &&
      (gen.dp > 1 || gen.tp > 1);
  if (!declarable) return {};
  // Tp rank 0 alone first, checked on a probe with few micro-batches.
  std::vector<int> ranks =
      DeclaredTpRanks(DeclaredProbe(RepresentativeOptions(gen, {0})), topology, options, plans);
  if (!ranks.empty() || gen.dp <= 1 || gen.tp <= 1) return ranks;
  // No tp rank stands for another (a collective's plan across the tp groups, a broadcast
  // boundary): replica 0 whole, every tp rank, folded by the replica shift alone.
  std::vector<int> all(gen.tp);
  std::iota(all.begin(), all.end(), 0);
  if (DeclaredTpRanks(DeclaredProbe(RepresentativeOptions(gen, all)), topology, options, plans)
          .empty()) {
    return {};
  }
  return all;
}

}  // namespace

std::vector<int> RepresentativeTpSet(const GenerateOptions& gen, const NetworkTopology& topology,
                                     const ComputeCostModel& /*cost*/, const SimOptions& options) {
  PlanCache plans(topology, options.collectives);
  return RepresentativeTpSetWith(gen, topology, options, plans);
}

GenerateOptions RepresentativeOptions(const GenerateOptions& gen,
                                      const std::vector<int>& tp_ranks) {
  GenerateOptions reps = gen;
  if (tp_ranks.empty()) return reps;
  reps.representatives_only = true;
  const int count = static_cast<int>(tp_ranks.size());
  if (tp_ranks.back() == count - 1) {
    reps.representative_tp_ranks = count;  // 0..count-1
  } else {
    reps.representative_tp_set = tp_ranks;
  }
  return reps;
}

Schedule GenerateForSimulation(const GenerateOptions& gen, const NetworkTopology& topology,
                               const ComputeCostModel& cost, const SimOptions& options) {
  return Generate(RepresentativeOptions(gen, RepresentativeTpSet(gen, topology, cost, options)));
}

SimResult SimulateGenerated(const GenerateOptions& gen, const NetworkTopology& topology,
                            const ComputeCostModel& cost, const SimOptions& options) {
  // The probe's collective plans (its declared-symmetry checks plan every group) and routes
  // are the replay's: planned and routed once (sim/plan_cache.h).
  const auto plans = std::make_shared<PlanCache>(topology, options.collectives);
  // The probe's declared folds too, for the replay's Declared where its inputs are the probe's
  // (DeclaredFoldMemo, sim/symmetry_fold.h).
  plans->KeepDeclaredFolds();
  const GenerateOptions reps =
      RepresentativeOptions(gen, RepresentativeTpSetWith(gen, topology, options, *plans));
  if (reps.representatives_only) {
    // The keys apart (no string per op): a representatives-only replay reads them only for the
    // critical path and the trace rows, and its fold (Declared) names no op.
    OpKeys keys;
    const Schedule schedule = GenerateForReplay(reps, &keys);
    if (schedule.symmetry.representatives_only) {
      try {
        return SimulateOnce(schedule, topology, cost, options, &keys, plans);
      } catch (const InputError&) {
        // Thrown again below, by the schedule with its keys, for a message naming the ops.
      }
    }
  }
  return SimulateWith(Generate(reps), topology, cost, options, plans);
}

}  // namespace terasim

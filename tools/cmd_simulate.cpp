// terasim simulate: replays a schedule (a .pir file, or one generated from --strategy and the
// options of `terasim schedule`) on a modelled cluster (sim/simulator.h) and reports the
// iteration time, bubble fraction, model TFLOP/s per GPU, peak memory and link use.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "models/calibrated_cost.h"
#include "models/device_spec.h"
#include "models/errors.h"
#include "models/limits.h"
#include "models/model_card.h"
#include "models/roofline_cost.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/memory_estimate.h"
#include "schedule/pir_format.h"
#include "sim/jitter.h"
#include "sim/simulator.h"
#include "sim/trace_durations.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/schedule_flags.h"
#include "tools/sim_run_record.h"
#include "topologies/topology.h"
#include "traces/traces.h"

namespace terasim::cli {
namespace {

// The schedule from --strategy and the schedule options (as `terasim schedule` reads them).
Schedule GenerateFromFlags(const po::variables_map& vm, const ModelCard& model) {
  const int gpus = ClusterGpus(vm["cluster"].as<std::string>());
  return Generate(ScheduleOptionsFromFlags(vm, model, "simulate", gpus));
}

// Link utilization counter tracks for the trace: one per link that carried bytes.
std::vector<CounterSeries> LinkCounters(const SimResult& result, const NetworkTopology& topology) {
  std::map<int, CounterSeries> series;
  for (const LinkResult& link : result.links) {
    series[link.link].name = "link " + link.name;
    series[link.link].value_name = "utilization";
  }
  for (const LinkRateSample& s : result.link_rates) {
    auto it = series.find(s.link);
    if (it == series.end()) continue;
    it->second.samples.push_back(
        CounterSample{s.time_ns, s.bytes_per_s / topology.Links()[s.link].bw_bytes_per_s});
  }
  std::vector<CounterSeries> out;
  for (auto& [link, s] : series) out.push_back(std::move(s));
  return out;
}

}  // namespace

int RunSimulate(const Args& args) {
  po::options_description options("terasim simulate");
  // clang-format off
  options.add_options()
      ("pir", po::value<std::string>()->default_value(""),
       "schedule file (.pir); or leave it out and give --strategy")
      ("model", po::value<std::string>()->default_value(""),
       "model card name or path (default: the .pir's model; gpt3-175b with --strategy)")
      ("cluster", po::value<std::string>()->default_value("p3.16xlarge:48"), "INSTANCE:COUNT")
      ("nic-gbps", po::value<double>()->default_value(0, "instance's"),
       "what-if: NIC line rate, Gbit/s")
      ("network", po::value<std::string>()->default_value("flow"), "flow | analytic")
      ("calib", po::value<std::string>()->default_value(""),
       "calibration table (terasim calibrate); default: the roofline model of the GPU")
      ("collectives", po::value<std::string>()->default_value("sim/data/collectives.json"),
       "collective algorithm parameters (relative paths: under the data root)")
      ("trace", po::value<std::string>()->default_value(""),
       "write a Chrome / Perfetto trace JSON here")
      ("no-link-counters", po::bool_switch(), "leave the link utilization counters out of --trace")
      ("no-check", po::bool_switch(), "skip the schedule checker for a .pir")
      ("no-fold", po::bool_switch(),
       "replay every device, not one per class of identical devices (same results, slower)")
      ("durations-from", po::value<std::string>()->default_value(""),
       "trace-driven replay: each compute op's duration from this measured trace (.json or "
       ".csv; median over its iterations) instead of the cost model")
      ("jitter-samples", po::value<int>()->default_value(0),
       "speed jitter: report the median of this many iterations, each device's compute times "
       "scaled by factors drawn from --calib's speed_factors (with --durations-from: the trace's "
       "own per-iteration factors); 0: one iteration at the median speed")
      ("seed", po::value<uint64_t>()->default_value(1), "seed of the jitter draws")
      ("db", po::value<std::string>()->default_value(""),
       "also store the run (configuration, metrics, trace) in this results store")
      ("json", po::bool_switch(), "print JSON")
      ("strategy", po::value<std::string>()->default_value(""),
       "generate the schedule: gpipe | 1f1b | interleaved | terapipe | zb-h1 | zb-h2 | "
       "looped-bfs | interleaved-zb | zb-v | dualpipe-v")
      ("dp", po::value<int>()->default_value(1, "GPUs / (P x T)"),
       "data-parallel degree D (with --strategy)")
      ("pp", po::value<int>()->default_value(1),
       "pipeline-parallel degree P (alias --pipeline-model-parallel-size)")
      ("tp", po::value<int>()->default_value(1),
       "tensor (operator) parallel degree T (alias --tensor-model-parallel-size)")
      ("microbatches", po::value<int>()->default_value(0, "P"), "micro-batches per replica")
      ("microbatch-size", po::value<int>()->default_value(1),
       "sequences per micro-batch (alias --micro-batch-size)")
      ("batch", po::value<int>()->default_value(0, "D x M x B"),
       "global batch (sequences; alias --global-batch-size): sets --microbatches from "
       "--microbatch-size, or the reverse")
      ("virtual-stages", po::value<int>()->default_value(1), "model chunks per device")
      ("slicing", po::value<std::string>()->default_value(""),
       "terapipe: micro-batches and token slices, e.g. 1:[704,688,656]x32")
      ("slices", po::value<int>()->default_value(0), "terapipe: N equal token slices")
      ("order", po::value<std::string>()->default_value("flush"), "terapipe: flush | 1f1b")
      ("boundary", po::value<std::string>()->default_value("p2p"), "p2p | broadcast")
      ("no-optimizer", po::bool_switch(), "leave out the OPTIMIZER ops");
  // clang-format on
  AddDpStepOptions(options);
  po::positional_options_description positional;
  positional.add("pir", 1);
  po::variables_map vm;
  if (!Parse("simulate",
             "FILE.pir [--model M] [--cluster C] [--network flow|analytic] [--calib FILE] "
             "[--trace OUT.json] [--json]\n       terasim simulate --strategy S [schedule "
             "options] [--model M] [--cluster C] ...",
             options, positional, args, vm)) {
    return 0;
  }
  RequireInstanceCount(vm["cluster"].as<std::string>());
  const std::string pir = vm["pir"].as<std::string>();
  const std::string strategy = vm["strategy"].as<std::string>();
  if (pir.empty() == strategy.empty()) {
    ThrowInput("terasim simulate: give a .pir file or --strategy (exactly one of them)");
  }
  const NetworkMode network = ParseNetworkMode(vm["network"].as<std::string>());
  // The store and the trace path are checked before the simulation, so that a bad --db or
  // --trace fails at once.
  std::optional<ResultStore> store;
  if (!vm["db"].as<std::string>().empty()) {
    store.emplace(ResultStore::OpenOrCreate(vm["db"].as<std::string>()));
  }
  if (!vm["trace"].as<std::string>().empty())
    RequireReplaceableOutput(vm["trace"].as<std::string>());

  Schedule schedule;
  ModelCard model;
  std::string model_name = vm["model"].as<std::string>();
  if (!pir.empty()) {
    schedule = ReadPirFile(pir);
    if (!vm["no-check"].as<bool>()) RequireValidSchedule(schedule);
    if (model_name.empty()) model_name = schedule.model;
    model = LoadModelCard(model_name);
    if (model.layers != schedule.layers || model.sequence != schedule.sequence) {
      ThrowInput("--model {}: {} layers x {} tokens, but {} has {} x {}", model_name, model.layers,
                 model.sequence, pir, schedule.layers, schedule.sequence);
    }
  } else {
    model = LoadModelCard(model_name.empty() ? "gpt3-175b" : model_name);
    schedule = GenerateFromFlags(vm, model);
  }

  ClusterOptions cluster_options;
  if (!vm["nic-gbps"].defaulted()) {
    // A negative value would silently mean "the instance's" (ClusterOptions' sentinel).
    const double nic_gbps = vm["nic-gbps"].as<double>();
    if (!(std::isfinite(nic_gbps) && nic_gbps > 0)) {
      ThrowInput("--nic-gbps {}: must be a finite number > 0", nic_gbps);
    }
    cluster_options.nic_gbps = nic_gbps;
  }
  const Cluster cluster = BuildCluster(vm["cluster"].as<std::string>(), cluster_options);
  if (schedule.devices > cluster.NumGpus()) {
    ThrowInput("--cluster {}: {} GPUs, but the schedule needs {} devices",
               vm["cluster"].as<std::string>(), cluster.NumGpus(), schedule.devices);
  }
  const ClusterTopology topology(cluster);
  const DeviceSpec device = LoadDeviceSpec(cluster.Instance().device);
  const RooflineCostModel roofline(model, device);
  std::unique_ptr<CalibratedCostModel> calibrated;
  if (!vm["calib"].as<std::string>().empty()) {
    calibrated = std::make_unique<CalibratedCostModel>(
        LoadCalibrationTable(vm["calib"].as<std::string>()), &roofline);
  }
  const ComputeCostModel& cost =
      calibrated ? static_cast<const ComputeCostModel&>(*calibrated) : roofline;

  std::string collectives_path = vm["collectives"].as<std::string>();
  if (!collectives_path.empty() && collectives_path[0] != '/') {
    collectives_path = DataRoot() + "/" + collectives_path;
  }
  const MemoryEstimate memory = EstimateMemory(schedule, model, device);
  SimOptions sim;
  sim.network = network;
  sim.collectives = LoadCollectiveOptions(collectives_path);
  sim.model = &model;
  sim.fold = !vm["no-fold"].as<bool>();
  for (const DeviceMemory& m : memory.devices) sim.peak_memory_bytes.push_back(m.peak);
  const std::string trace_path = vm["trace"].as<std::string>();
  sim.record_link_rates = !trace_path.empty() && !vm["no-link-counters"].as<bool>();
  sim.trace_rows = store.has_value() || !trace_path.empty();  // per-op rows only for output
  if (!memory.fits) std::cerr << "terasim simulate: warning: " << memory.reason << "\n";

  const std::string durations_from = vm["durations-from"].as<std::string>();
  if (!durations_from.empty()) {
    sim.compute_ns = TraceComputeDurations(schedule, ReadTraceFile(durations_from), durations_from);
  }
  const int jitter_samples = vm["jitter-samples"].as<int>();
  if (jitter_samples < 0) ThrowInput("--jitter-samples: must be >= 0");
  std::optional<JitterResult> jitter;
  if (jitter_samples > 0) {
    JitterOptions j;
    j.samples = jitter_samples;
    j.seed = vm["seed"].as<uint64_t>();
    if (!durations_from.empty()) {
      j.origin = durations_from;
      j.factors = TraceSpeedFactors(schedule, ReadTraceFile(durations_from), durations_from);
      if (j.factors.empty()) {
        ThrowInput("--jitter-samples: {} has no iteration in which every device ran all its ops",
                   durations_from);
      }
    } else if (calibrated && !calibrated->table().speed_factors.empty()) {
      j.factors = calibrated->table().speed_factors;
      j.origin = vm["calib"].as<std::string>();
    } else {
      ThrowInput(
          "--jitter-samples: needs speed factors: a --calib table that has speed_factors "
          "(terasim calibrate with --repetitions or --threads above 1) or --durations-from");
    }
    jitter = SimulateWithJitter(schedule, topology, cost, sim, j);
  }
  const SimResult result = jitter ? jitter->median : Simulate(schedule, topology, cost, sim);
  if (store) {
    nlohmann::json config = nlohmann::json::object();
    for (const auto& [name, value] : vm) {
      if (name == "db" || name == "json" || name == "trace") continue;
      // Fold on is the default and changes no result: recorded only when off.
      if (name == "no-fold" && !value.as<bool>()) continue;
      const boost::any& v = value.value();
      if (v.type() == typeid(std::string)) config[name] = boost::any_cast<std::string>(v);
      if (v.type() == typeid(int)) config[name] = boost::any_cast<int>(v);
      if (v.type() == typeid(double)) config[name] = boost::any_cast<double>(v);
      if (v.type() == typeid(bool)) config[name] = boost::any_cast<bool>(v);
    }
    store->WriteRun(SimRunRecord(schedule, cluster.Spec(), result, memory.fits, config),
                    result.trace.rows);
  }
  if (!trace_path.empty()) {
    WriteChromeTraceFile(trace_path, result.trace, LinkCounters(result, topology), &schedule);
  }

  const double iteration_s = NsToSeconds(result.iteration_time_ns);
  const double events_per_s = result.wall_time_s > 0 ? result.events / result.wall_time_s : 0;
  if (vm["json"].as<bool>()) {
    nlohmann::json devices = nlohmann::json::array();
    for (const DeviceResult& d : result.devices) {
      devices.push_back({{"device", d.device},
                         {"gpu", d.gpu},
                         {"compute_fraction", d.compute_fraction},
                         {"comm_fraction", d.comm_fraction},
                         {"idle_fraction", d.idle_fraction},
                         {"peak_memory_bytes", d.peak_memory_bytes}});
    }
    nlohmann::json links = nlohmann::json::array();
    for (const LinkResult& l : result.links) {
      links.push_back({{"link", l.link},
                       {"name", l.name},
                       {"bytes", l.bytes},
                       {"utilization", l.utilization},
                       {"busy_s", NsToSeconds(l.busy_ns)}});
    }
    PrintJson({{"schedule", pir.empty() ? "generated" : pir},
               {"model", model.name},
               {"cluster", cluster.Spec()},
               {"strategy", schedule.shape.strategy},
               {"dp", schedule.shape.dp},
               {"pp", schedule.shape.pp},
               {"tp", schedule.shape.tp},
               {"batch", schedule.batch},
               {"ops", schedule.ops.size()},
               {"network", NetworkModeName(network)},
               {"cost_model", cost.Name()},
               {"iteration_time_s", iteration_s},
               {"bubble_fraction", result.bubble_fraction},
               {"tflops_per_gpu", result.tflops_per_gpu},
               {"model_flops", result.model_flops},
               {"peak_memory_bytes", result.peak_memory_bytes},
               {"capacity_bytes", memory.capacity_bytes},
               {"fits", memory.fits},
               {"memory_reason", memory.reason},
               {"fold_order", result.fold_order},
               {"events", result.events},
               {"events_per_s", events_per_s},
               {"analytic_staggered_fraction", result.analytic_staggered_fraction},
               {"wall_time_s", result.wall_time_s},
               {"critical_path", result.critical_path},
               {"jitter", jitter ? nlohmann::json{{"samples", jitter_samples},
                                                  {"seed", vm["seed"].as<uint64_t>()},
                                                  {"p10_s", NsToSeconds(jitter->p10_ns)},
                                                  {"p90_s", NsToSeconds(jitter->p90_ns)}}
                                 : nlohmann::json(nullptr)},
               {"devices", devices},
               {"links", links}});
    return 0;
  }
  double comm = 0;
  for (const DeviceResult& d : result.devices) comm += d.comm_fraction / result.devices.size();
  std::cout << fmt::format(
      "{}: {} {}x{}x{} on {} ({} network, {})\n"
      "  iteration   {:.4f} s\n"
      "  bubble      {:.1f} %   exposed communication {:.1f} %\n"
      "  throughput  {:.2f} TFLOP/s per GPU\n"
      "  memory      peak {} of {} ({})\n"
      "  simulated   {} events in {:.3f} s ({:.0f} events/s)\n",
      pir.empty() ? "generated" : pir, model.name, schedule.shape.dp, schedule.shape.pp,
      schedule.shape.tp, cluster.Spec(), NetworkModeName(network), cost.Name(), iteration_s,
      100 * result.bubble_fraction, 100 * comm, result.tflops_per_gpu,
      FormatGiB(result.peak_memory_bytes), FormatGiB(memory.capacity_bytes),
      memory.fits ? "fits" : "does not fit", result.events, result.wall_time_s, events_per_s);
  if (result.analytic_staggered_fraction > 0.05) {
    // Where the two network modes can differ (docs/collectives.md): staggered contention.
    std::cout << fmt::format(
        "  network     {:.0f} % of the link bytes met transfers started at other instants, "
        "where the modes can differ: the analytic mode costs each transfer once, at its start, "
        "against what is in flight; --network flow re-shares the links at every start and "
        "end\n",
        100 * result.analytic_staggered_fraction);
  }
  if (jitter) {
    std::cout << fmt::format(
        "  jitter      median of {} iterations with per-device speed factors: p10 {:.4f} s, "
        "p90 {:.4f} s\n",
        jitter_samples, NsToSeconds(jitter->p10_ns), NsToSeconds(jitter->p90_ns));
  }
  std::vector<LinkResult> busiest = result.links;
  std::sort(busiest.begin(), busiest.end(), [](const LinkResult& a, const LinkResult& b) {
    return a.utilization != b.utilization ? a.utilization > b.utilization : a.link < b.link;
  });
  if (busiest.size() > 5) busiest.resize(5);
  for (const LinkResult& l : busiest) {
    std::cout << fmt::format("  link        {:<40} {:5.1f} % utilized, {:.3g} GB\n", l.name,
                             100 * l.utilization, l.bytes / 1e9);
  }
  if (!result.critical_path.empty()) {
    std::cout << fmt::format("  critical    {} ops: {} ... {}\n", result.critical_path.size(),
                             result.critical_path.front(), result.critical_path.back());
  }
  return 0;
}

}  // namespace terasim::cli

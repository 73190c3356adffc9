// terasim memory: the peak memory per device of a strategy on a cluster, from the generated
// schedule (schedule/memory_estimate.h), and whether it fits.
#include <algorithm>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "models/device_spec.h"
#include "models/errors.h"
#include "models/limits.h"
#include "models/model_card.h"
#include "schedule/generator.h"
#include "schedule/memory_estimate.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/schedule_flags.h"
#include "topologies/cluster_options.h"
#include "topologies/instance_spec.h"

namespace terasim::cli {

int RunMemory(const Args& args) {
  po::options_description options("terasim memory");
  options.add_options()                                                              //
      ("model", po::value<std::string>()->default_value("gpt3-175b"), "model card")  //
      ("cluster", po::value<std::string>()->default_value("p3.16xlarge:48"),
       "INSTANCE:COUNT; the instance's GPU sets the device")  //
      ("device", po::value<std::string>()->default_value(""),
       "device spec overriding the instance's GPU")  //
      ("dp", po::value<int>()->default_value(0, "GPUs / (pp x tp)"),
       "data-parallel degree")  //
      ("pp", po::value<int>()->default_value(48),
       "pipeline stages (alias --pipeline-model-parallel-size)")  //
      ("tp", po::value<int>()->default_value(8),
       "tensor-parallel degree (alias --tensor-model-parallel-size)")  //
      ("batch", po::value<int>()->default_value(2),
       "global batch (sequences; alias --global-batch-size)")  //
      ("microbatches", po::value<int>()->default_value(0),
       "micro-batches per replica (0: from --microbatch-size)")  //
      ("microbatch-size", po::value<int>()->default_value(1),
       "sequences per micro-batch (alias --micro-batch-size)")  //
      ("slices", po::value<int>()->default_value(1),
       "uniform token slices per micro-batch (> 1: TeraPipe)")  //
      ("strategy", po::value<std::string>()->default_value("gpipe"),
       "gpipe|1f1b|interleaved|terapipe (terapipe when --slices > 1)")                   //
      ("virtual-stages", po::value<int>()->default_value(1), "model chunks per device")  //
      ("recompute", po::value<std::string>()->default_value("none"),
       "activation recomputation: none | selective | full")  //
      ("sequence-parallel", po::bool_switch(),
       "sequence parallelism (--tp >= 2)")                                           //
      ("zero", po::value<int>()->default_value(0), "ZeRO stage 0-3 over --dp >= 2")  //
      ("json", po::bool_switch(), "print JSON");
  po::variables_map vm;
  if (!Parse("memory",
             "[--model M] [--cluster C] [--dp D] [--pp P] [--tp T] [--batch B] "
             "[--microbatches M] [--slices N] [--json]",
             options, {}, args, vm)) {
    return 0;
  }
  RequireInstanceCount(vm["cluster"].as<std::string>());
  GenerateOptions g;
  g.model = LoadModelCard(vm["model"].as<std::string>());
  g.pp = vm["pp"].as<int>();
  g.tp = vm["tp"].as<int>();
  g.dp = DataParallelDegree("memory", vm["dp"].as<int>(),
                            ClusterGpus(vm["cluster"].as<std::string>()), g.pp, g.tp);
  g.virtual_stages = vm["virtual-stages"].as<int>();
  const int batch = vm["batch"].as<int>();
  const int slices = vm["slices"].as<int>();
  if (g.dp < 1) ThrowInput("--dp {}: must be >= 1", g.dp);
  if (batch > limits::kMaxBatch) {
    ThrowInput("--batch {}: exceeds the limit {} (kMaxBatch, models/limits.h)", batch,
               limits::kMaxBatch);
  }
  if (batch < 1 || batch % g.dp != 0) {
    ThrowInput("--batch {}: must be a positive multiple of --dp {}", batch, g.dp);
  }
  const int per_replica = batch / g.dp;
  g.microbatches = vm["microbatches"].as<int>();
  if (g.microbatches == 0) {
    const int size = vm["microbatch-size"].as<int>();
    if (size < 1 || per_replica % size != 0) {
      ThrowInput("--microbatch-size {}: must divide the {} sequences of each replica", size,
                 per_replica);
    }
    g.microbatches = per_replica / size;
  } else if (!vm["microbatch-size"].defaulted()) {
    ThrowInput("give --microbatches or --microbatch-size, not both");
  }
  if (g.microbatches < 1 || per_replica % g.microbatches != 0) {
    ThrowInput("--microbatches {}: must divide the {} sequences of each replica", g.microbatches,
               per_replica);
  }
  g.microbatch_size = per_replica / g.microbatches;
  g.strategy = slices > 1 ? Strategy::kTeraPipe : ParseStrategy(vm["strategy"].as<std::string>());
  if (slices < 1) ThrowInput("--slices {}: must be >= 1", slices);
  if (g.strategy == Strategy::kTeraPipe) g.uniform_slices = slices;
  g.optimizer = true;
  ReadRecipeFlags(vm, g);

  const ClusterSpec cluster = ParseClusterSpec(vm["cluster"].as<std::string>());
  const InstanceSpec instance = LoadInstanceSpec(cluster.instance);
  const int gpus = cluster.nodes * instance.gpus;
  if (g.dp * g.pp * g.tp > gpus) {
    ThrowInput("--dp {} x --pp {} x --tp {} = {} GPUs exceed --cluster {}'s {}", g.dp, g.pp, g.tp,
               g.dp * g.pp * g.tp, vm["cluster"].as<std::string>(), gpus);
  }
  const std::string device_name =
      vm["device"].as<std::string>().empty() ? instance.device : vm["device"].as<std::string>();
  const DeviceSpec device = LoadDeviceSpec(device_name);

  const Schedule schedule = Generate(g);
  const MemoryEstimate estimate = EstimateMemory(schedule, g.model, device);
  // Per pipeline stage (rank = dp * P * T + stage * T + tp_rank): the largest of its devices.
  std::map<int, Bytes> stage_peak;
  for (const DeviceMemory& m : estimate.devices) {
    const int stage = (m.device / g.tp) % g.pp;
    stage_peak[stage] = std::max(stage_peak[stage], m.peak);
  }

  if (vm["json"].as<bool>()) {
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& [stage, peak] : stage_peak) stages.push_back(peak);
    const DeviceMemory& top = estimate.devices[estimate.peak_device];
    PrintJson({{"model", g.model.name},
               {"cluster", vm["cluster"].as<std::string>()},
               {"device", device.name},
               {"strategy", StrategyName(g.strategy)},
               {"dp", g.dp},
               {"pp", g.pp},
               {"tp", g.tp},
               {"batch", batch},
               {"microbatches", g.microbatches},
               {"microbatch_size", g.microbatch_size},
               {"slices", slices},
               {"peak_bytes", estimate.peak_bytes},
               {"peak_device", estimate.peak_device},
               {"capacity_bytes", estimate.capacity_bytes},
               {"fits", estimate.fits},
               {"reason", estimate.reason},
               {"breakdown",
                {{"weights", top.state.weights},
                 {"gradients", top.state.gradients},
                 {"optimizer_state", top.state.optimizer_state},
                 {"activations", top.activations},
                 {"kv_cache", top.kv_cache},
                 {"boundary", top.boundary},
                 {"gathered_parameters", top.gathered}}},
               {"recipe",
                {{"recompute", RecomputeName(g.recompute)},
                 {"sequence_parallel", g.sequence_parallel},
                 {"zero", g.zero}}},
               {"stage_peak_bytes", stages}});
    return 0;
  }
  std::cout << fmt::format("{} on {} ({}), {} {} x {} x {}, batch {} in {} micro-batches of {}{}\n",
                           g.model.name, vm["cluster"].as<std::string>(), device.name,
                           StrategyName(g.strategy), g.dp, g.pp, g.tp, batch, g.microbatches,
                           g.microbatch_size,
                           slices > 1 ? fmt::format(", {} slices each", slices) : "");
  std::cout << fmt::format("peak_bytes      {} ({})\n", estimate.peak_bytes,
                           FormatGiB(estimate.peak_bytes));
  std::cout << fmt::format("capacity_bytes  {} ({})\n", estimate.capacity_bytes,
                           FormatGiB(estimate.capacity_bytes));
  std::cout << fmt::format("fits            {}\n", estimate.fits ? "yes" : "no");
  std::cout << estimate.reason << "\n";
  std::cout << "per-stage peaks:\n";
  for (const auto& [stage, peak] : stage_peak) {
    std::cout << fmt::format("  stage {:>3}  {:>12}{}\n", stage, FormatGiB(peak),
                             peak > estimate.capacity_bytes ? "  (does not fit)" : "");
  }
  return 0;
}

}  // namespace terasim::cli

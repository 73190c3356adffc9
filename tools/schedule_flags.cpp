#include "tools/schedule_flags.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "models/errors.h"
#include "schedule/slicing_spec.h"
#include "tools/cli.h"
#include "topologies/cluster_options.h"
#include "topologies/instance_spec.h"

namespace terasim::cli {
namespace {

bool Given(const boost::program_options::variables_map& vm, const char* name) {
  return vm.count(name) > 0 && !vm[name].defaulted();
}

// --batch B: the micro-batches (or their size) of each of the dp replicas.
void ApplyBatch(const boost::program_options::variables_map& vm, GenerateOptions& o) {
  const int batch = vm["batch"].as<int>();
  if (batch < 1) ThrowInput("--batch {}: must be >= 1", batch);
  if (!o.slicing.empty()) {
    ThrowInput("--slicing gives the micro-batches and their rows: leave out --batch");
  }
  if (batch % o.dp != 0) ThrowInput("--batch {}: not a multiple of dp {}", batch, o.dp);
  const int per_replica = batch / o.dp;
  const bool m_given = Given(vm, "microbatches");
  const bool b_given = Given(vm, "microbatch-size");
  if (m_given && b_given) {
    if (o.microbatches * o.microbatch_size != per_replica) {
      ThrowInput(
          "--batch {} = dp {} x microbatches x microbatch-size, but --microbatches {} x "
          "--microbatch-size {} = {}",
          batch, o.dp, o.microbatches, o.microbatch_size, o.microbatches * o.microbatch_size);
    }
  } else if (m_given) {
    if (o.microbatches < 1 || per_replica % o.microbatches != 0) {
      ThrowInput(
          "--microbatches {}: must divide the {} sequences of each of the dp {} replicas "
          "(--batch {})",
          o.microbatches, per_replica, o.dp, batch);
    }
    o.microbatch_size = per_replica / o.microbatches;
  } else {
    if (o.microbatch_size < 1 || per_replica % o.microbatch_size != 0) {
      ThrowInput(
          "--microbatch-size {}: must divide the {} sequences of each of the dp {} "
          "replicas (--batch {})",
          o.microbatch_size, per_replica, o.dp, batch);
    }
    o.microbatches = per_replica / o.microbatch_size;
  }
}

}  // namespace

void ReadRecipeFlags(const boost::program_options::variables_map& vm, GenerateOptions& o) {
  if (vm.count("recompute")) {
    const std::string text = vm["recompute"].as<std::string>();
    std::optional<Recompute> r = ParseRecompute(text);
    if (!r) ThrowInput("--recompute: '{}' must be one of none, selective, full", text);
    o.recompute = *r;
  }
  if (vm.count("sequence-parallel")) o.sequence_parallel = vm["sequence-parallel"].as<bool>();
  if (vm.count("zero")) o.zero = vm["zero"].as<int>();
  if (vm.count("backward-order")) {
    const std::string text = vm["backward-order"].as<std::string>();
    if (text != "reverse" && text != "forward") {
      ThrowInput("--backward-order: '{}' must be one of reverse, forward", text);
    }
    o.backward_in_forward_order = text == "forward";
  }
  if (vm.count("dp-step")) o.dp_step = ParseDpStep(vm["dp-step"].as<std::string>());
  if (vm.count("dp-bucket-mb")) {
    const double mib = vm["dp-bucket-mb"].as<double>();
    if (!std::isfinite(mib) || mib <= 0 || mib > 1e9) {
      ThrowInput("--dp-bucket-mb {}: must be a number of MiB in (0, 1e9]", mib);
    }
    o.dp_bucket_bytes = std::max<int64_t>(1, std::llround(mib * 1024 * 1024));
  }
}

void AddDpStepOptions(boost::program_options::options_description& options) {
  // clang-format off
  options.add_options()
      ("dp-step", boost::program_options::value<std::string>()->default_value("auto"),
       "data-parallel gradient step (--dp >= 2): flattened (TeraPipe's code: one all-reduce of "
       "each stage's whole fp16 gradient once the replica's whole backward has ended), bucketed "
       "(PyTorch DDP / Megatron-LM: buckets of whole layers, each all-reduced as soon as its "
       "layers' backward ends, overlapped with the rest), per-stage (each stage's all-reduce "
       "right after its own last backward); auto: flattened for terapipe and gpipe, bucketed "
       "for the others")
      ("dp-bucket-mb", boost::program_options::value<double>()->default_value(25),
       "bucketed: bucket cap in MiB (PyTorch DDP's bucket_cap_mb default, 25)");
  // clang-format on
}

GenerateOptions ScheduleOptionsFromFlags(const boost::program_options::variables_map& vm,
                                         const ModelCard& model, const std::string& command,
                                         int gpus) {
  GenerateOptions o;
  o.model = model;
  o.strategy = ParseStrategy(vm["strategy"].as<std::string>());
  o.pp = vm["pp"].as<int>();
  o.tp = vm["tp"].as<int>();
  o.dp = vm["dp"].as<int>();
  if (gpus > 0 && !Given(vm, "dp")) o.dp = DataParallelDegree(command, 0, gpus, o.pp, o.tp);
  if (o.dp < 1) ThrowInput("--dp {}: must be >= 1", o.dp);
  o.microbatches = vm["microbatches"].defaulted() ? o.pp : vm["microbatches"].as<int>();
  o.microbatch_size = vm["microbatch-size"].as<int>();
  o.virtual_stages = vm["virtual-stages"].as<int>();
  // ZB-V and DualPipeV place exactly two chunks per device (their V): the default.
  const bool v_shape = o.strategy == Strategy::kZbV || o.strategy == Strategy::kDualPipeV;
  if (v_shape && !Given(vm, "virtual-stages")) o.virtual_stages = 2;
  o.order = ParseSliceOrder(vm["order"].as<std::string>());
  o.boundary = ParseBoundary(vm["boundary"].as<std::string>());
  o.optimizer = !vm["no-optimizer"].as<bool>();
  o.uniform_slices = vm["slices"].as<int>();
  if (!vm["slicing"].defaulted()) o.slicing = ParseSlicingSpec(vm["slicing"].as<std::string>());
  ReadRecipeFlags(vm, o);
  if (o.strategy != Strategy::kTeraPipe && !vm["order"].defaulted()) {
    ThrowInput("--order is only for --strategy terapipe (not {})", StrategyName(o.strategy));
  }
  if (!o.slicing.empty() &&
      (!vm["microbatches"].defaulted() || !vm["microbatch-size"].defaulted())) {
    ThrowInput(
        "--slicing gives the micro-batches and their rows: leave out --microbatches and "
        "--microbatch-size");
  }
  if (Given(vm, "batch")) ApplyBatch(vm, o);
  return o;
}

int ClusterGpus(const std::string& spec) {
  const ClusterSpec parsed = ParseClusterSpec(spec);
  return parsed.nodes * LoadInstanceSpec(parsed.instance).gpus;
}

}  // namespace terasim::cli

#include "tools/schedule_flags.h"

#include <optional>

#include "models/errors.h"
#include "schedule/slicing_spec.h"

namespace terasim::cli {

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
}

GenerateOptions ScheduleOptionsFromFlags(const boost::program_options::variables_map& vm,
                                         const ModelCard& model) {
  GenerateOptions o;
  o.model = model;
  o.strategy = ParseStrategy(vm["strategy"].as<std::string>());
  o.dp = vm["dp"].as<int>();
  o.pp = vm["pp"].as<int>();
  o.tp = vm["tp"].as<int>();
  o.microbatches = vm["microbatches"].defaulted() ? o.pp : vm["microbatches"].as<int>();
  o.microbatch_size = vm["microbatch-size"].as<int>();
  o.virtual_stages = vm["virtual-stages"].as<int>();
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
  return o;
}

}  // namespace terasim::cli

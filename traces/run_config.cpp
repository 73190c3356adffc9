#include "traces/run_config.h"

#include "models/memory_model.h"
#include "schedule/slicing_spec.h"

namespace terasim {

nlohmann::json ScheduleConfigJson(const GenerateOptions& o) {
  // With a slicing spec the micro-batches are its groups' counts.
  int microbatches = o.microbatches;
  if (!o.slicing.empty()) {
    microbatches = 0;
    for (const MicrobatchSlicing& group : o.slicing) microbatches += group.count;
  }
  return {{"strategy", StrategyName(o.strategy)},
          {"dp", o.dp},
          {"pp", o.pp},
          {"tp", o.tp},
          {"microbatches", microbatches},
          {"microbatch_size", o.slicing.empty() ? o.microbatch_size : 0},
          {"virtual_stages", o.virtual_stages},
          {"slicing", FormatSlicingSpec(o.slicing)},
          {"slices", o.uniform_slices},
          {"order", SliceOrderName(o.order)},
          {"boundary", BoundaryName(o.boundary)},
          {"optimizer", o.optimizer},
          {"recompute", RecomputeName(o.recompute)},
          {"sequence_parallel", o.sequence_parallel},
          {"zero", o.zero}};
}

nlohmann::json RunConfigJson(const RunConfig& config) {
  return {{"command", config.command},   {"model", config.model},
          {"cluster", config.cluster},   {"batch", config.batch},
          {"network", config.network},   {"cost_model", config.cost_model},
          {"schedule", config.schedule}, {"options", config.options}};
}

}  // namespace terasim

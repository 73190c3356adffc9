#include "tools/sim_run_record.h"

#include <set>
#include <tuple>

namespace terasim::cli {

RunRecord SimRunRecord(const Schedule& schedule, const std::string& cluster_spec,
                       const SimResult& result, bool fits, const nlohmann::json& config) {
  RunRecord r;
  r.kind = "sim";
  r.model = schedule.model;
  r.cluster = cluster_spec;
  r.strategy = schedule.shape.strategy;
  r.dp = schedule.shape.dp;
  r.pp = schedule.shape.pp;
  r.tp = schedule.shape.tp;
  std::set<int> microbatches;
  std::set<std::tuple<int, int, int>> units;  // (micro-batch, token slice) pairs
  for (const Op& op : schedule.ops) {
    if (op.microbatch >= 0) microbatches.insert(op.microbatch);
    if (IsLayerCompute(op.kind) && op.microbatch >= 0) {
      units.emplace(op.microbatch, op.tokens.begin, op.tokens.end);
    }
  }
  r.microbatches = std::max<int>(1, static_cast<int>(microbatches.size()) / r.dp);
  r.slices = std::max<int>(r.microbatches, static_cast<int>(units.size()) / r.dp);
  r.config = config;
  r.label = schedule.source.empty() ? "generated" : schedule.source;
  r.metrics = {{"iteration_time_s", NsToSeconds(result.iteration_time_ns)},
               {"bubble_fraction", result.bubble_fraction},
               {"tflops_per_gpu", result.tflops_per_gpu},
               {"model_flops", result.model_flops},
               {"peak_memory_bytes", static_cast<double>(result.peak_memory_bytes)},
               {"fits", fits ? 1.0 : 0.0}};
  return r;
}

}  // namespace terasim::cli

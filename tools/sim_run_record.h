// SimRunRecord: how a simulated run goes into the results store (traces/result_store.h), shared
// by `terasim simulate --db` and `terasim sweep` so that both store the same metrics and the
// same meaning of microbatches (per replica) and slices ((micro-batch, slice) units per replica).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "schedule/schedule_ir.h"
#include "sim/simulator.h"
#include "traces/result_store.h"

namespace terasim::cli {

// The record of a simulated run of `schedule` on `cluster_spec`: shape fields from the schedule,
// `config` as the full configuration (config_key left empty: the store uses config.dump()),
// metrics iteration_time_s, bubble_fraction, tflops_per_gpu, model_flops, peak_memory_bytes
// and fits (1 or 0).
RunRecord SimRunRecord(const Schedule& schedule, const std::string& cluster_spec,
                       const SimResult& result, bool fits, const nlohmann::json& config);

}  // namespace terasim::cli

// The one layout of a stored run's configuration (runs.config_json, schema version 2), shared by
// every command that writes runs, so that one query reads compare, sweep and simulate rows
// alike (traces/README.md, "The configuration JSON"):
//
//   {"command": "compare",            the terasim command that wrote the run
//    "model": "gpt3-1b", "cluster": "p3.16xlarge:2",
//    "batch": 32,                      global batch, sequences per iteration
//    "network": "flow", "cost_model": "roofline V100-SXM2-16GB",
//    "schedule": {"strategy", "dp", "pp", "tp",
//                 "microbatches",      micro-batches per data-parallel replica per iteration
//                 "microbatch_size",   sequences per micro-batch (0 when the slicing says)
//                 "virtual_stages", "slicing" (TeraPipe spec, "" if none),
//                 "slices" (uniform token slices per micro-batch, 0 if none),
//                 "order", "boundary", "optimizer"},
//    "options": {...}}                 the command's own settings (compare: granularity,
//                                      families, max_evaluations; sweep: nic_gbps, ...)
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "schedule/generator.h"

namespace terasim {

inline constexpr int kRunConfigLayout = 2;

struct RunConfig {
  std::string command;
  std::string model;
  std::string cluster;
  int batch = 0;
  std::string network;
  std::string cost_model;
  nlohmann::json schedule = nlohmann::json::object();  // ScheduleConfigJson
  nlohmann::json options = nlohmann::json::object();
};

// The "schedule" object of `o` (its fields as listed above; microbatches as given).
nlohmann::json ScheduleConfigJson(const GenerateOptions& o);

// The configuration JSON in the layout above.
nlohmann::json RunConfigJson(const RunConfig& config);

}  // namespace terasim

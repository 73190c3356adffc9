// RunRecordJson: a stored run's description as JSON, one shape for every place that prints or
// ships one (`terasim db runs --json`, the sweep's messages to rank 0).
//
// Thread safety: a pure function.
#pragma once

#include <nlohmann/json.hpp>

#include "traces/result_store.h"

namespace terasim {

// {"kind", "model", "cluster", "strategy", "dp", "pp", "tp", "microbatches", "slicing",
// "config", "config_key", "code_version", "seed", "host", "label", "metrics": {NAME: value}};
// a non-finite metric becomes null (JSON has no NaN).
nlohmann::json RunRecordJson(const RunRecord& record);

}  // namespace terasim

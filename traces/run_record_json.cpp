#include "traces/run_record_json.h"

#include <cmath>

namespace terasim {

nlohmann::json RunRecordJson(const RunRecord& r) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, value] : r.metrics) {
    metrics[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
  }
  return {{"kind", r.kind},
          {"model", r.model},
          {"cluster", r.cluster},
          {"strategy", r.strategy},
          {"dp", r.dp},
          {"pp", r.pp},
          {"tp", r.tp},
          {"microbatches", r.microbatches},
          {"slices", r.slices > 0 ? r.slices : r.microbatches},
          {"slicing", r.slicing},
          {"config", r.config},
          {"config_key", r.config_key},
          {"code_version", r.code_version},
          {"seed", r.seed},
          {"host", r.host},
          {"label", r.label},
          {"metrics", std::move(metrics)}};
}

}  // namespace terasim

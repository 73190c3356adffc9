#include "exec/executor.h"

#include <chrono>
#include <numeric>

#include "models/errors.h"

namespace terasim {

BackendFactory MakeBackendFactory(const std::string& name, const ModelCard& card, uint64_t seed) {
  if (name == "cpu") {
    return [card, seed](int device, const ShardSpec& shard) -> std::unique_ptr<ComputeBackend> {
      return std::make_unique<CpuBackend>(card, shard, seed);
    };
  }
  if (name == "cuda") ThrowInput("exec: --backend: cuda back end not built");
  ThrowInput("exec: --backend: unknown back end '{}' (known: cpu, cuda)", name);
}

ExecResult ExecuteInProcess(const Schedule& schedule, const ModelCard& card,
                            const ExecOptions& options, const std::string& backend) {
  BackendFactory factory = MakeBackendFactory(backend, card, options.seed);
  InProcessTransport transport(
      std::chrono::milliseconds(static_cast<int64_t>(options.stall_timeout_s * 1000)));
  std::vector<int> devices(schedule.devices);
  std::iota(devices.begin(), devices.end(), 0);
  return RunSchedule(schedule, card, options, factory, transport, devices);
}

}  // namespace terasim

#include "exec/cuda/cuda_executor.h"

#include <chrono>
#include <numeric>

#include "exec/cuda/loopback_transport.h"
#include "models/errors.h"

namespace terasim {

BackendFactory MakeCudaBackendFactory(const ModelCard& card, uint64_t seed,
                                      const CudaBackendOptions& options) {
  return [card, seed, options](int device, const ShardSpec& shard) {
    return std::unique_ptr<ComputeBackend>(new CudaBackend(card, shard, seed, options));
  };
}

ExecResult ExecuteOnGpu(const Schedule& schedule, const ModelCard& card,
                        const ExecOptions& exec_options, const CudaBackendOptions& options) {
  const int count = CudaDeviceCount();
  if (count == 0) ThrowInput("exec: --backend cuda: no CUDA device (no GPU or no driver here)");
  if (options.device < 0 || options.device >= count) {
    ThrowInput("exec: --gpu: device {} not in [0, {})", options.device, count);
  }
  if (schedule.devices > kMaxDevicesPerProcess) {
    ThrowInput("{}: devices {}: exec runs at most {} devices in one process",
               schedule.source.empty() ? "schedule" : schedule.source, schedule.devices,
               kMaxDevicesPerProcess);
  }
  LoopbackTransport transport(
      schedule.devices, options.device,
      std::chrono::milliseconds(static_cast<int64_t>(exec_options.stall_timeout_s * 1000)));
  std::vector<int> devices(schedule.devices);
  std::iota(devices.begin(), devices.end(), 0);
  return RunSchedule(schedule, card, exec_options,
                     MakeCudaBackendFactory(card, exec_options.seed, options), transport, devices);
}

}  // namespace terasim

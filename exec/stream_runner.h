// Runner: the executor's engine behind RunSchedule (exec/runner.h), internal to exec/. One
// Runner runs one schedule on the devices of this process; its members are defined by idea:
//   exec/run_plan.cpp   planning: devices, shards, streams, the deps each op waits for
//   exec/run_ops.cpp    what each op does: layer math through the back end, collectives,
//                       SEND / RECV, the optimizer
//   exec/runner.cpp     running the streams: threads per stream or per device, waiting,
//                       stall reports, iterations
//   exec/run_trace.cpp  timing and tracing: the clock, trace rows, gathered gradients
// Thread safety: as RunSchedule; a Runner is used once.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include "exec/runner.h"

#ifdef __linux__
#include <sched.h>
#endif

#include <fmt/format.h>

#include "exec/model_params.h"
#include "exec/stop_flag.h"
#include "exec/tensor_id.h"
#include "exec/tensor_store.h"
#include "models/errors.h"

namespace terasim::run_detail {

using Clock = std::chrono::steady_clock;

// The cores this process may run on.
int UsableCores();
// The op kinds this executor runs; a kind added to the IR is refused by name until it runs.
bool Executable(OpKind kind);
// "FILE:LINE: KEY" of an op, for errors.
std::string OpWhere(const Schedule& schedule, const Op& op);

struct DeviceState {
  int device = 0;
  ShardSpec shard;
  std::map<int, Range> stage_layers;  // stage -> layers it spans on this device
  bool sequence_parallel = false;     // its layer compute has sp=1: every tp rank has a loss
  // ZeRO-1 and 2: stage -> this device's shard of the stage's flattened gradients (set by the
  // gradients' reduce-scatter). ZeRO-3: layer -> its shard and the reduce-scattered gradients
  // of the shard summed over the units so far, until they are back in the back end.
  struct ZeroLayer {
    ElementRange owned;
    std::vector<float> sum;
    bool in_backend = false;
  };
  std::map<int, ElementRange> zero_shard;
  std::map<int, int> zero_stage;  // stage -> the zero= of its OPTIMIZER on this device
  std::map<int, ZeroLayer> zero_layers;
  // ZeRO-3: layer -> the passes (a unit's forward or backward) using its gathered parameters,
  // and the device's shard of them, kept when the last use ends (guarded by backend_mutex).
  std::map<int, int> zero_users;
  std::map<int, ElementRange> zero_params;
  std::unique_ptr<ComputeBackend> backend;
  std::mutex backend_mutex;  // serializes back-end calls (one device's compute units)
  std::unique_ptr<TensorStore> store;
  std::mutex done_mutex;
  std::condition_variable done_cv;
  std::vector<std::pair<std::string, std::vector<int>>> streams;  // in order of first op
};

class Runner {
 public:
  Runner(const Schedule& schedule, const ModelCard& card, const ExecOptions& options,
         Transport& transport)
      : schedule_(schedule),
        card_(card),
        options_(options),
        transport_(transport),
        stall_timeout_(static_cast<int64_t>(options.stall_timeout_s * 1000)),
        dep_index_(KeyIndex(schedule)),
        implicit_after_(schedule.ops.size()),
        deps_(schedule.ops.size()),
        input_keys_(schedule.ops.size()),
        done_(schedule.ops.size(), 0) {}

  ExecResult Run(const BackendFactory& make_backend, const std::vector<int>& devices);

 private:
  void Prepare(const BackendFactory& make_backend, const std::vector<int>& devices);
  void RunStream(DeviceState& dev, const std::vector<int>& ops, int iteration,
                 std::vector<TraceRow>& rows);
  // StreamThreads::kDevice: one thread runs every stream of `dev`. Each turn it runs the first
  // stream head that can go, SEND and RECV before compute, and sleeps until a message arrives
  // when none can.
  void RunDevice(DeviceState& dev, int iteration, std::vector<TraceRow>& rows);
  // Whether every device run here can use one thread (see StreamThreads::kDevice); else
  // `why` says what cannot.
  bool DeviceThreadsPossible(std::string* why) const;
  // kDevice: returns once a message for `device` arrived after `seen` (Transport::Arrivals) or
  // a time slice passed. Spins (yielding the core) when spin_, else sleeps in the transport.
  void WaitForArrival(int device, uint64_t seen);
  // For kDevice: whether op `index` could run now without waiting (its deps are done, the
  // tensor it reads is in the store).
  bool CanRun(DeviceState& dev, int index) const;
  // For a stall report: op `index` (a stream head of `dev`) and what it waits for.
  std::string WhyWaiting(DeviceState& dev, int index) const;
  // The store key op `index` reads (empty if none or from the back end itself).
  std::string InputKey(int index) const;
  void Record(const DeviceState& dev, const Op& op, int iteration, TimeNs start,
              std::vector<TraceRow>& rows) const;
  void MarkDone(DeviceState& dev, int index);
  TimeNs Now() const;
  void RunOp(DeviceState& dev, const Op& op, int iteration);
  void RunCompute(DeviceState& dev, const Op& op);
  // A RECOMPUTE of one block of a tp-split layer (its tp collectives finish it).
  void RunRecomputeBlock(DeviceState& dev, const Op& op, const SliceRef& slice);
  void RunAllReduce(DeviceState& dev, const Op& op);
  // Sequence parallelism: the all-gather before a block (this rank's shard from the back end)
  // and the reduce-scatter after it (then the block's finish on the shard).
  void RunSpGather(DeviceState& dev, const Op& op, const TensorId& id);
  void RunSpScatter(DeviceState& dev, const Op& op, const TensorId& id);
  // ZeRO (exec/zero notes in run_ops.cpp): the gradients' reduce-scatter over the dp group,
  // the parameters' all-gather, and the optimizer step on the device's shard.
  void RunZeroScatter(DeviceState& dev, const Op& op, const TensorId& id);
  // `per_use` (ZeRO-3): the gathered parameters are one more pass's, freed after it
  // (ReleaseAfterUse).
  void RunZeroGather(DeviceState& dev, const Op& op, Range layers, bool per_use);
  // ZeRO-3: a pass over `layer` ended (its forward's or backward's last op that reads the
  // parameters); the last one frees them but the device's shard.
  void ReleaseAfterUse(DeviceState& dev, int layer);
  void RunZeroOptimizer(DeviceState& dev, const Op& op, Range layers, int iteration);
  // ZeRO-3: the summed shards of `layers` back into the back end's gradients (zeros outside
  // the shard); a layer without a pending sum is left as it is.
  void ZeroGradientsBack(DeviceState& dev, Range layers);
  // The layers of `stage` on `dev`; InputError naming `op` when it holds none.
  Range StageLayers(const DeviceState& dev, const Op& op, int stage) const;
  // This tp rank's shard of a slice (sequence parallelism).
  SliceRef Shard(const DeviceState& dev, int microbatch, Range tokens) const;
  // After the tp sum of a block: bias, residual, LayerNorm backward; puts the resulting
  // activation / gradient (or computes the loss) as the block's consumer expects.
  void FinishBlock(DeviceState& dev, bool backward, int layer, LayerPart part,
                   const SliceRef& slice, std::span<const float> summed);
  // The forward of the last layer ended with `output`: loss and its gradient.
  void FinishStackForward(DeviceState& dev, int layer_end, const SliceRef& slice,
                          std::vector<float> output);
  // A stage's weight gradients are complete only once every backward op of the stage and
  // every tp all-reduce of a backward (whose finish runs the LayerNorm and embedding
  // backward) is done. The dp all-reduce of wgrad and OPTIMIZER therefore also wait for the
  // earlier (in issue order) such ops of their device, whatever their `after` lists say.
  void AddImplicitDeps(int device);
  SliceRef Slice(int microbatch, Range tokens) const;
  CollectiveCall Call(const DeviceState& dev, const Op& op) const;
  double OpFlops(const DeviceState& dev, const Op& op) const;
  void Fail(std::exception_ptr error);

  const Schedule& schedule_;
  const ModelCard& card_;
  const ExecOptions& options_;
  Transport& transport_;
  std::chrono::milliseconds stall_timeout_;
  std::vector<std::unique_ptr<DeviceState>> devices_;
  std::map<int, int> rows_of_mb_;
  std::map<int, int64_t> first_sequence_of_mb_;
  std::map<std::string, int> dep_index_;
  // Per op: ops it waits for beyond its `after` list (see ImplicitDeps).
  std::vector<std::vector<int>> implicit_after_;
  // Per op of the devices run here: every op it waits for (`after` and implicit), and the
  // store key it reads (InputKey).
  std::vector<std::vector<int>> deps_;
  std::vector<std::string> input_keys_;
  // Per op. kStream: guarded by the owning device's done_mutex. kDevice: written and read only
  // by the owning device's thread (its deps are ops of the same device).
  std::vector<uint8_t> done_;
  bool device_threads_ = false;  // StreamThreads::kDevice chosen
  // kDevice threads wait for messages spinning: there are no more of them than cores. As CUDA's
  // cudaDeviceScheduleAuto: a core that sleeps in every bubble wakes slowly and cold (TeraPipe's
  // ops after a wait ran about 3 % slower than back-to-back ones on the validation VM).
  bool spin_ = false;
  StopFlag stop_;
  std::mutex error_mutex_;
  std::exception_ptr error_;
  Clock::time_point run_start_;
};

}  // namespace terasim::run_detail

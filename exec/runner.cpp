#include "exec/runner.h"

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

#ifdef __linux__
#include <sched.h>
#endif

#include <fmt/format.h>

#include "exec/model_params.h"
#include "exec/stop_flag.h"
#include "exec/tensor_id.h"
#include "exec/tensor_store.h"
#include "models/errors.h"

namespace terasim {

namespace {

using Clock = std::chrono::steady_clock;

// The cores this process may run on.
int UsableCores() {
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string OpWhere(const Schedule& schedule, const Op& op) {
  std::string where = schedule.source.empty() ? "schedule" : schedule.source;
  if (op.line > 0) where += fmt::format(":{}", op.line);
  return where + ": " + op.key;
}

struct DeviceState {
  int device = 0;
  ShardSpec shard;
  std::map<int, Range> stage_layers;  // stage -> layers it spans on this device
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
  void RunAllReduce(DeviceState& dev, const Op& op);
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

void Runner::Prepare(const BackendFactory& make_backend, const std::vector<int>& devices) {
  const std::string source = schedule_.source.empty() ? "schedule" : schedule_.source;
  if (schedule_.layers != card_.layers) {
    ThrowInput("{}: layers: the schedule has {} layers but model {} has {}", source,
               schedule_.layers, card_.name, card_.layers);
  }
  if (schedule_.sequence != card_.sequence) {
    ThrowInput("{}: sequence: the schedule has {} tokens per sequence but model {} has {}", source,
               schedule_.sequence, card_.name, card_.sequence);
  }
  for (const Op& op : schedule_.ops) {
    if (std::string f = RecipeFeature(op); !f.empty()) {
      ThrowInput("{}: the executor does not run {} yet", OpWhere(schedule_, op), f);
    }
    if (op.microbatch < 0 || op.rows <= 0) continue;
    auto [it, inserted] = rows_of_mb_.emplace(op.microbatch, op.rows);
    if (!inserted && it->second != op.rows) {
      ThrowInput("{}: micro-batch {} has {} rows here and {} elsewhere", OpWhere(schedule_, op),
                 op.microbatch, op.rows, it->second);
    }
  }
  int64_t first = 0;
  for (const auto& [mb, rows] : rows_of_mb_) {
    first_sequence_of_mb_[mb] = first;
    first += rows;
  }
  for (int d : devices) {
    if (d < 0 || d >= schedule_.devices) {
      ThrowInput("{}: device {} is not in 0..{}", source, d, schedule_.devices - 1);
    }
    auto dev = std::make_unique<DeviceState>();
    dev->device = d;
    dev->store = std::make_unique<TensorStore>(stop_, stall_timeout_);
    std::set<int> layers;
    std::string tp_group;
    for (size_t i = 0; i < schedule_.ops.size(); ++i) {
      const Op& op = schedule_.ops[i];
      if (op.device != d) continue;
      auto stream = std::find_if(dev->streams.begin(), dev->streams.end(),
                                 [&](const auto& s) { return s.first == op.stream; });
      if (stream == dev->streams.end()) {
        dev->streams.push_back({op.stream, {}});
        stream = dev->streams.end() - 1;
      }
      stream->second.push_back(static_cast<int>(i));
      if (!IsLayerCompute(op.kind)) continue;
      for (int l = op.layers.begin; l < op.layers.end; ++l) layers.insert(l);
      if (op.stage >= 0) {
        auto [it, inserted] = dev->stage_layers.emplace(op.stage, op.layers);
        if (!inserted) {
          it->second.begin = std::min(it->second.begin, op.layers.begin);
          it->second.end = std::max(it->second.end, op.layers.end);
        }
      }
      if (op.group.empty()) continue;  // tp degree 1: a split block finishes itself
      const int g = schedule_.FindGroup(op.group);
      if (g < 0) ThrowInput("{}: unknown group {}", OpWhere(schedule_, op), op.group);
      if (op.part == LayerPart::kWhole && schedule_.groups[g].ranks.size() > 1) {
        ThrowInput(
            "{}: a whole-layer op cannot be sharded over tp group {}; split it into "
            "part=attn and part=mlp",
            OpWhere(schedule_, op), op.group);
      }
      if (!tp_group.empty() && tp_group != op.group) {
        ThrowInput("{}: device {} computes in tp groups {} and {}", OpWhere(schedule_, op), d,
                   tp_group, op.group);
      }
      tp_group = op.group;
      const auto& ranks = schedule_.groups[g].ranks;
      dev->shard.tp = static_cast<int>(ranks.size());
      dev->shard.tp_rank =
          static_cast<int>(std::find(ranks.begin(), ranks.end(), d) - ranks.begin());
    }
    AddImplicitDeps(d);
    for (const auto& stream : dev->streams) {
      for (int index : stream.second) {
        deps_[index] = implicit_after_[index];
        for (const std::string& key : schedule_.ops[index].after) {
          deps_[index].push_back(dep_index_.at(key));
        }
        input_keys_[index] = InputKey(index);
      }
    }
    dev->shard.layers.assign(layers.begin(), layers.end());
    ValidateTensorParallel(card_, dev->shard.tp, source);
    dev->backend = make_backend(d, dev->shard);
    devices_.push_back(std::move(dev));
  }
}

void Runner::AddImplicitDeps(int device) {
  std::vector<int> backward_ops;  // earlier backward compute and tpb all-reduce ops
  for (size_t i = 0; i < schedule_.ops.size(); ++i) {
    const Op& op = schedule_.ops[i];
    if (op.device != device) continue;
    const TensorId id = ParseTensorId(op.tensor);
    if ((IsLayerCompute(op.kind) && op.kind != OpKind::kFwd) ||
        (op.kind == OpKind::kAllReduce && id.kind == TensorKind::kTpBackward)) {
      backward_ops.push_back(static_cast<int>(i));
      continue;
    }
    const bool wgrad = op.kind == OpKind::kAllReduce && id.kind == TensorKind::kWeightGradient;
    if (!wgrad && op.kind != OpKind::kOptimizer) continue;
    for (int b : backward_ops) {
      const int stage = schedule_.ops[b].stage;
      if (op.kind == OpKind::kOptimizer || stage == id.stage || stage < 0) {
        implicit_after_[i].push_back(b);
      }
    }
  }
}

SliceRef Runner::Slice(int microbatch, Range tokens) const {
  SliceRef s;
  s.microbatch = microbatch;
  auto it = rows_of_mb_.find(microbatch);
  TERASIM_CHECK(it != rows_of_mb_.end(), "micro-batch {} unknown", microbatch);
  s.rows = it->second;
  s.t0 = tokens.begin;
  s.t1 = tokens.end;
  s.first_sequence = first_sequence_of_mb_.at(microbatch);
  return s;
}

CollectiveCall Runner::Call(const DeviceState& dev, const Op& op) const {
  const int g = schedule_.FindGroup(op.group);
  if (g < 0) ThrowInput("{}: unknown group {}", OpWhere(schedule_, op), op.group);
  CollectiveCall call;
  call.group = op.group;
  call.ranks = schedule_.groups[g].ranks;
  call.device = dev.device;
  call.tensor = op.tensor;
  return call;
}

double Runner::OpFlops(const DeviceState& dev, const Op& op) const {
  if (!IsLayerCompute(op.kind) || op.kind == OpKind::kBwdWeight) return 0;
  const SliceRef slice = Slice(op.microbatch, op.tokens);
  const bool backward = op.kind != OpKind::kFwd;
  return dev.backend->LayerFlops(op.part, slice, backward) * op.layers.Length();
}

void Runner::FinishStackForward(DeviceState& dev, int layer_end, const SliceRef& slice,
                                std::vector<float> output) {
  if (layer_end < card_.layers) {
    dev.store->Put(ActivationKey(layer_end, slice.microbatch, {slice.t0, slice.t1}),
                   std::move(output));
    return;
  }
  std::vector<float> grad(output.size());
  const int64_t global_tokens = static_cast<int64_t>(schedule_.batch) * schedule_.sequence;
  {
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    dev.backend->Loss(slice, output, grad, global_tokens);
  }
  dev.store->Put(GradientKey(layer_end, slice.microbatch, {slice.t0, slice.t1}), std::move(grad));
}

void Runner::FinishBlock(DeviceState& dev, bool backward, int layer, LayerPart part,
                         const SliceRef& slice, std::span<const float> summed) {
  const Range tokens{slice.t0, slice.t1};
  const int64_t values = slice.Values(card_.hidden);
  if (!backward) {
    if (part == LayerPart::kAttention) {
      std::lock_guard<std::mutex> lock(dev.backend_mutex);
      dev.backend->FinishForward(layer, part, slice, summed, {});
      return;
    }
    std::vector<float> out(values);
    {
      std::lock_guard<std::mutex> lock(dev.backend_mutex);
      dev.backend->FinishForward(layer, part, slice, summed, out);
    }
    FinishStackForward(dev, layer + 1, slice, std::move(out));
    return;
  }
  if (part == LayerPart::kMlp) {
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    dev.backend->FinishBackward(layer, part, slice, summed, {});
    return;
  }
  std::vector<float> grad_in(values);
  {
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    dev.backend->FinishBackward(layer, part, slice, summed, grad_in);
    if (layer == 0) dev.backend->InputBackward(slice, grad_in);
  }
  if (layer > 0) dev.store->Put(GradientKey(layer, slice.microbatch, tokens), std::move(grad_in));
}

void Runner::RunCompute(DeviceState& dev, const Op& op) {
  if (op.kind == OpKind::kBwdWeight) return;  // BWD_INPUT did the weight gradients too
  const SliceRef slice = Slice(op.microbatch, op.tokens);
  const int64_t values = slice.Values(card_.hidden);
  const bool split = !op.group.empty();  // partial sums go to the tp all-reduce
  ComputeBackend& backend = *dev.backend;
  if (op.kind == OpKind::kFwd) {
    if (op.part == LayerPart::kMlp) {
      const int layer = op.layers.begin;
      std::vector<float> partial(values);
      {
        std::lock_guard<std::mutex> lock(dev.backend_mutex);
        backend.Forward(layer, LayerPart::kMlp, slice, {}, partial);
      }
      if (split) {
        dev.store->Put(TpSumKey(false, layer, LayerPart::kMlp, op.microbatch, op.tokens),
                       std::move(partial));
      } else {
        FinishBlock(dev, false, layer, LayerPart::kMlp, slice, partial);
      }
      return;
    }
    std::vector<float> x(values);
    if (op.layers.begin == 0) {
      std::lock_guard<std::mutex> lock(dev.backend_mutex);
      backend.Input(slice, x);
    } else {
      x = dev.store->Get(ActivationKey(op.layers.begin, op.microbatch, op.tokens));
    }
    if (op.part == LayerPart::kAttention) {
      const int layer = op.layers.begin;
      std::vector<float> partial(values);
      {
        std::lock_guard<std::mutex> lock(dev.backend_mutex);
        backend.Forward(layer, LayerPart::kAttention, slice, x, partial);
      }
      if (split) {
        dev.store->Put(TpSumKey(false, layer, LayerPart::kAttention, op.microbatch, op.tokens),
                       std::move(partial));
      } else {
        FinishBlock(dev, false, layer, LayerPart::kAttention, slice, partial);
      }
      return;
    }
    std::vector<float> y(values);
    for (int l = op.layers.begin; l < op.layers.end; ++l) {
      {
        std::lock_guard<std::mutex> lock(dev.backend_mutex);
        backend.Forward(l, LayerPart::kWhole, slice, x, y);
      }
      std::swap(x, y);
    }
    FinishStackForward(dev, op.layers.end, slice, std::move(x));
    return;
  }
  // BWD or BWD_INPUT.
  if (op.part == LayerPart::kAttention) {
    const int layer = op.layers.begin;
    std::vector<float> partial(values);
    {
      std::lock_guard<std::mutex> lock(dev.backend_mutex);
      backend.Backward(layer, LayerPart::kAttention, slice, {}, partial);
    }
    if (split) {
      dev.store->Put(TpSumKey(true, layer, LayerPart::kAttention, op.microbatch, op.tokens),
                     std::move(partial));
    } else {
      FinishBlock(dev, true, layer, LayerPart::kAttention, slice, partial);
    }
    return;
  }
  std::vector<float> grad = dev.store->Get(GradientKey(op.layers.end, op.microbatch, op.tokens));
  if (op.part == LayerPart::kMlp) {
    const int layer = op.layers.begin;
    std::vector<float> partial(values);
    {
      std::lock_guard<std::mutex> lock(dev.backend_mutex);
      backend.Backward(layer, LayerPart::kMlp, slice, grad, partial);
    }
    if (split) {
      dev.store->Put(TpSumKey(true, layer, LayerPart::kMlp, op.microbatch, op.tokens),
                     std::move(partial));
    } else {
      FinishBlock(dev, true, layer, LayerPart::kMlp, slice, partial);
    }
    return;
  }
  std::vector<float> grad_in(values);
  for (int l = op.layers.end - 1; l >= op.layers.begin; --l) {
    {
      std::lock_guard<std::mutex> lock(dev.backend_mutex);
      backend.Backward(l, LayerPart::kWhole, slice, grad, grad_in);
    }
    std::swap(grad, grad_in);
  }
  if (op.layers.begin == 0) {
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    backend.InputBackward(slice, grad);
  } else {
    dev.store->Put(GradientKey(op.layers.begin, op.microbatch, op.tokens), std::move(grad));
  }
}

void Runner::RunAllReduce(DeviceState& dev, const Op& op) {
  const TensorId id = ParseTensorId(op.tensor);
  const CollectiveCall call = Call(dev, op);
  if (id.kind == TensorKind::kTpForward || id.kind == TensorKind::kTpBackward) {
    std::vector<float> data = dev.store->Get(id.store_key);
    transport_.AllReduce(call, data);
    FinishBlock(dev, id.kind == TensorKind::kTpBackward, id.layer, id.part,
                Slice(id.microbatch, id.tokens), data);
    return;
  }
  if (id.kind == TensorKind::kWeightGradient) {
    auto it = dev.stage_layers.find(id.stage);
    if (it == dev.stage_layers.end()) {
      ThrowInput("{}: device {} holds no layers of stage {}", OpWhere(schedule_, op), dev.device,
                 id.stage);
    }
    std::vector<float> grads;
    {
      std::lock_guard<std::mutex> lock(dev.backend_mutex);
      grads = dev.backend->Gradients(it->second);
    }
    transport_.AllReduce(call, grads);
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    dev.backend->SetGradients(it->second, grads);
    return;
  }
  std::vector<float> data = dev.store->Get(id.store_key);
  transport_.AllReduce(call, data);
  dev.store->Put(id.store_key, std::move(data));
}

void Runner::RunOp(DeviceState& dev, const Op& op, int iteration) {
  switch (op.kind) {
    case OpKind::kFwd:
    case OpKind::kBwd:
    case OpKind::kBwdInput:
    case OpKind::kBwdWeight:
      RunCompute(dev, op);
      return;
    case OpKind::kSend: {
      const TensorId id = ParseTensorId(op.tensor);
      std::vector<float> data = dev.store->Get(id.store_key);
      transport_.Send(dev.device, op.peer, op.tensor, data);
      return;
    }
    case OpKind::kRecv: {
      const TensorId id = ParseTensorId(op.tensor);
      dev.store->Put(id.store_key, transport_.Recv(dev.device, op.peer, op.tensor));
      return;
    }
    case OpKind::kBroadcast: {
      const TensorId id = ParseTensorId(op.tensor);
      std::vector<float> data;
      if (dev.device == op.peer) data = dev.store->Get(id.store_key);
      transport_.Broadcast(Call(dev, op), op.peer, data);
      if (dev.device != op.peer) dev.store->Put(id.store_key, std::move(data));
      return;
    }
    case OpKind::kAllReduce:
      RunAllReduce(dev, op);
      return;
    case OpKind::kAllGather: {
      const TensorId id = ParseTensorId(op.tensor);
      std::vector<float> data = dev.store->Get(id.store_key);
      dev.store->Put(id.store_key, transport_.AllGather(Call(dev, op), data));
      return;
    }
    case OpKind::kReduceScatter: {
      const TensorId id = ParseTensorId(op.tensor);
      std::vector<float> data = dev.store->Get(id.store_key);
      dev.store->Put(id.store_key, transport_.ReduceScatter(Call(dev, op), data));
      return;
    }
    case OpKind::kOptimizer: {
      Range layers = op.layers;
      if (layers.Empty()) {
        auto it = dev.stage_layers.find(op.stage);
        layers = it != dev.stage_layers.end() ? it->second : Range{0, card_.layers};
      }
      std::lock_guard<std::mutex> lock(dev.backend_mutex);
      if (iteration == 0) dev.backend->SnapshotGradients(layers);
      dev.backend->OptimizerStep(layers, options_.adam);
      return;
    }
  }
}

void Runner::Fail(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = error;
  }
  stop_.Stop();
  transport_.Abort();
  for (auto& dev : devices_) {
    dev->store->Notify();
    dev->done_cv.notify_all();
  }
}

TimeNs Runner::Now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - run_start_).count();
}

void Runner::Record(const DeviceState& dev, const Op& op, int iteration, TimeNs start,
                    std::vector<TraceRow>& rows) const {
  const TimeNs end = Now();
  TraceRow row;
  row.iteration = iteration;
  row.key = op.key;
  row.kind = op.kind;
  row.device = op.device;
  row.stream = op.stream;
  row.start_ns = start;
  row.end_ns = end;
  row.bytes = IsCompute(op.kind) ? 0 : op.bytes;
  row.flops = OpFlops(dev, op);
  rows.push_back(std::move(row));
}

void Runner::MarkDone(DeviceState& dev, int index) {
  {
    std::lock_guard<std::mutex> lock(dev.done_mutex);
    done_[index] = 1;
  }
  dev.done_cv.notify_all();
}

void Runner::RunStream(DeviceState& dev, const std::vector<int>& ops, int iteration,
                       std::vector<TraceRow>& rows) {
  try {
    for (int index : ops) {
      const Op& op = schedule_.ops[index];
      if (!deps_[index].empty()) {
        std::unique_lock<std::mutex> lock(dev.done_mutex);
        for (int dep : deps_[index]) {
          WaitFor(
              dev.done_cv, lock, [&] { return done_[dep] != 0; }, stop_, stall_timeout_,
              fmt::format("device {}: {} after {}", dev.device, op.key, schedule_.ops[dep].key));
        }
      }
      const TimeNs start = Now();
      RunOp(dev, op, iteration);
      Record(dev, op, iteration, start, rows);
      MarkDone(dev, index);
    }
  } catch (const StoppedError&) {
    // Another thread failed first; its error is the one reported.
  } catch (...) {
    Fail(std::current_exception());
  }
}

std::string Runner::InputKey(int index) const {
  const Op& op = schedule_.ops[index];
  switch (op.kind) {
    case OpKind::kSend:
      return ParseTensorId(op.tensor).store_key;
    case OpKind::kFwd:
      if (op.part == LayerPart::kMlp || op.layers.begin == 0) return "";
      return ActivationKey(op.layers.begin, op.microbatch, op.tokens);
    case OpKind::kBwd:
    case OpKind::kBwdInput:
      if (op.part == LayerPart::kAttention) return "";
      return GradientKey(op.layers.end, op.microbatch, op.tokens);
    default:
      return "";
  }
}

bool Runner::CanRun(DeviceState& dev, int index) const {
  for (int dep : deps_[index]) {
    if (!done_[dep]) return false;  // deps are ops of this device: this thread set them
  }
  return input_keys_[index].empty() || dev.store->Has(input_keys_[index]);
}

std::string Runner::WhyWaiting(DeviceState& dev, int index) const {
  const Op& op = schedule_.ops[index];
  for (int dep : deps_[index]) {
    if (!done_[dep])
      return fmt::format("{} after {}", OpWhere(schedule_, op), schedule_.ops[dep].key);
  }
  if (!input_keys_[index].empty() && !dev.store->Has(input_keys_[index])) {
    return fmt::format("{} for tensor {}", OpWhere(schedule_, op), input_keys_[index]);
  }
  if (op.kind == OpKind::kRecv) {
    return fmt::format("{} for {} from device {}", OpWhere(schedule_, op), op.tensor, op.peer);
  }
  return OpWhere(schedule_, op);
}

void Runner::WaitForArrival(int device, uint64_t seen) {
  constexpr auto kSlice = std::chrono::milliseconds(20);  // then the caller checks for stalls
  if (!spin_) {
    transport_.WaitArrival(device, seen, kSlice);
    return;
  }
  const auto until = Clock::now() + kSlice;
  while (transport_.Arrivals(device) == seen && Clock::now() < until) {
    if (stop_.Stopped()) throw StoppedError();
    std::this_thread::yield();
  }
}

bool Runner::DeviceThreadsPossible(std::string* why) const {
  if (!transport_.Polls()) {
    *why = "the transport cannot poll";
    return false;
  }
  for (const auto& dev : devices_) {
    for (const auto& [name, ops] : dev->streams) {
      for (int index : ops) {
        const Op& op = schedule_.ops[index];
        if (IsCompute(op.kind) || op.kind == OpKind::kSend || op.kind == OpKind::kRecv) continue;
        *why = fmt::format("{} is a {} (a collective blocks every stream of its device)",
                           OpWhere(schedule_, op), OpKindName(op.kind));
        return false;
      }
    }
  }
  return true;
}

void Runner::RunDevice(DeviceState& dev, int iteration, std::vector<TraceRow>& rows) {
  try {
    const size_t streams = dev.streams.size();
    std::vector<size_t> next(streams, 0);         // per stream: its head
    std::vector<TimeNs> head_ready(streams, -1);  // when a RECV head's deps were first seen done
    size_t left = 0;
    for (const auto& stream : dev.streams) left += stream.second.size();
    auto last_progress = Clock::now();
    while (left > 0) {
      const uint64_t arrivals = transport_.Arrivals(dev.device);
      bool ran = false;
      for (int pass = 0; pass < 2 && !ran; ++pass) {  // 0: SEND and RECV; 1: the rest
        for (size_t s = 0; s < streams && !ran; ++s) {
          const std::vector<int>& ops = dev.streams[s].second;
          if (next[s] == ops.size()) continue;
          const int index = ops[next[s]];
          const Op& op = schedule_.ops[index];
          const bool comm = op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
          if (comm != (pass == 0) || !CanRun(dev, index)) continue;
          if (op.kind == OpKind::kRecv) {
            // A receive is posted once its deps are done, as a stream thread would post it.
            if (head_ready[s] < 0) head_ready[s] = Now();
            std::optional<std::vector<float>> data =
                transport_.TryRecv(dev.device, op.peer, op.tensor);
            if (!data) continue;
            dev.store->Put(ParseTensorId(op.tensor).store_key, std::move(*data));
            Record(dev, op, iteration, head_ready[s], rows);
          } else {
            const TimeNs start = Now();
            RunOp(dev, op, iteration);
            Record(dev, op, iteration, start, rows);
          }
          MarkDone(dev, index);
          next[s] += 1;
          head_ready[s] = -1;
          left -= 1;
          ran = true;
        }
      }
      if (ran) {
        last_progress = Clock::now();
        continue;
      }
      if (Clock::now() - last_progress >= stall_timeout_) {
        std::string heads;
        for (size_t s = 0; s < streams; ++s) {
          if (next[s] == dev.streams[s].second.size()) continue;
          heads += (heads.empty() ? "" : "; ") + WhyWaiting(dev, dev.streams[s].second[next[s]]);
        }
        throw InternalError(fmt::format("executor stalled for {} s: device {} waiting: {}",
                                        stall_timeout_.count() / 1000.0, dev.device, heads));
      }
      if (stop_.Stopped()) throw StoppedError();
      WaitForArrival(dev.device, arrivals);
    }
  } catch (const StoppedError&) {
    // Another thread failed first; its error is the one reported.
  } catch (...) {
    Fail(std::current_exception());
  }
}

ExecResult Runner::Run(const BackendFactory& make_backend, const std::vector<int>& devices) {
  Prepare(make_backend, devices);
  std::string why;
  const bool possible = options_.threads != StreamThreads::kStream && DeviceThreadsPossible(&why);
  if (options_.threads == StreamThreads::kDevice && !possible) {
    ThrowInput("{}: cannot run one thread per device (--exec-threads device): {}",
               schedule_.source.empty() ? "schedule" : schedule_.source, why);
  }
  device_threads_ = possible;
  spin_ = device_threads_ &&
          static_cast<int>(devices_.size()) * options_.threads_per_device <= UsableCores();
  ExecResult result;
  result.threads = device_threads_ ? StreamThreads::kDevice : StreamThreads::kStream;
  result.trace.run_kind = "exec";
  run_start_ = Clock::now();
  for (int iteration = 0; iteration < options_.iterations; ++iteration) {
    std::fill(done_.begin(), done_.end(), 0);
    for (auto& dev : devices_) {
      dev->backend->BeginIteration();
      dev->store->Clear();
    }
    const auto start = Clock::now();
    std::vector<std::vector<TraceRow>> rows;
    std::vector<std::pair<DeviceState*, const std::vector<int>*>> work;  // ops null: kDevice
    for (auto& dev : devices_) {
      if (device_threads_) {
        work.emplace_back(dev.get(), nullptr);
        continue;
      }
      for (const auto& [name, ops] : dev->streams) work.emplace_back(dev.get(), &ops);
    }
    rows.resize(work.size());
    {
      std::vector<std::jthread> threads;
      threads.reserve(work.size());
      for (size_t i = 0; i < work.size(); ++i) {
        threads.emplace_back([this, &work, &rows, i, iteration] {
          if (work[i].second == nullptr) {
            RunDevice(*work[i].first, iteration, rows[i]);
          } else {
            RunStream(*work[i].first, *work[i].second, iteration, rows[i]);
          }
        });
      }
    }
    if (error_) std::rethrow_exception(error_);
    result.iteration_times_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    double loss = 0;
    for (auto& dev : devices_) {
      if (dev->shard.tp_rank == 0) loss += dev->backend->LossSum();
      // Layers without an OPTIMIZER op keep this iteration's gradients as the snapshot.
      if (iteration == 0) dev->backend->SnapshotGradients(Range{0, card_.layers});
    }
    result.losses.push_back(loss);
    for (auto& r : rows) {
      for (auto& row : r) result.trace.rows.push_back(std::move(row));
    }
  }
  std::sort(result.trace.rows.begin(), result.trace.rows.end(),
            [](const TraceRow& a, const TraceRow& b) {
              return std::tie(a.iteration, a.start_ns, a.device, a.key) <
                     std::tie(b.iteration, b.start_ns, b.device, b.key);
            });
  for (auto& dev : devices_) dev->backend->GatherSnapshot(result.gradients);
  result.grad_norm = GradNorm(result.gradients);
  result.trace.metadata["model"] = card_.name;
  result.trace.metadata["iterations"] = std::to_string(options_.iterations);
  result.trace.metadata["seed"] = std::to_string(options_.seed);
  result.trace.metadata["threads"] = StreamThreadsName(result.threads);
  return result;
}

}  // namespace

std::string StreamThreadsName(StreamThreads threads) {
  switch (threads) {
    case StreamThreads::kAuto:
      return "auto";
    case StreamThreads::kStream:
      return "stream";
    case StreamThreads::kDevice:
      return "device";
  }
  return "auto";
}

StreamThreads ParseStreamThreads(const std::string& name, const std::string& where) {
  for (StreamThreads t : {StreamThreads::kAuto, StreamThreads::kStream, StreamThreads::kDevice}) {
    if (name == StreamThreadsName(t)) return t;
  }
  ThrowInput("{}: unknown thread mode '{}' (known: auto, stream, device)", where, name);
}

void MergeGathered(FullTensors& into, const FullTensors& from) {
  for (const auto& [name, values] : from.values) {
    auto& to_values = into.values[name];
    auto& to_covered = into.covered[name];
    const auto covered = from.covered.find(name);
    TERASIM_CHECK(covered != from.covered.end() && covered->second.size() == values.size(),
                  "gathered tensor {} without its coverage", name);
    if (to_values.empty()) {
      to_values.assign(values.size(), 0.0f);
      to_covered.assign(values.size(), 0);
    }
    TERASIM_CHECK(to_values.size() == values.size(), "gathered tensor {} has {} and {} values",
                  name, to_values.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      if (to_covered[i] || !covered->second[i]) continue;
      to_values[i] = values[i];
      to_covered[i] = 1;
    }
  }
}

double GradNorm(const FullTensors& tensors) {
  double squares = 0;
  for (const auto& [name, values] : tensors.values) {
    for (float v : values) squares += static_cast<double>(v) * v;
  }
  return std::sqrt(squares);
}

ExecResult RunSchedule(const Schedule& schedule, const ModelCard& card, const ExecOptions& options,
                       const BackendFactory& make_backend, Transport& transport,
                       const std::vector<int>& devices) {
  if (options.iterations < 1)
    ThrowInput("exec: iterations must be >= 1, not {}", options.iterations);
  Runner runner(schedule, card, options, transport);
  return runner.Run(make_backend, devices);
}

}  // namespace terasim

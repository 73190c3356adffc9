// Planning a run: devices, shards, streams and the deps of each op (exec/stream_runner.h).
#include "exec/stream_runner.h"

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

namespace terasim::run_detail {

// The cores this process may run on.
int UsableCores() {
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

// The op kinds this executor runs. A kind added to the IR is refused here, by name, until the
// runner and the back-end layer run it (a switch without default: the compiler lists it).
bool Executable(OpKind kind) {
  switch (kind) {
    case OpKind::kFwd:
    case OpKind::kBwd:
    case OpKind::kBwdInput:
    case OpKind::kBwdWeight:
    case OpKind::kSend:
    case OpKind::kRecv:
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kBroadcast:
    case OpKind::kOptimizer:
    case OpKind::kRecompute:
      return true;
  }
  return false;
}

std::string OpWhere(const Schedule& schedule, const Op& op) {
  std::string where = schedule.source.empty() ? "schedule" : schedule.source;
  if (op.line > 0) where += fmt::format(":{}", op.line);
  return where + ": " + op.key;
}

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
    if (!Executable(op.kind)) {
      ThrowInput(
          "{}: exec does not run {} ops (it runs FWD, BWD, BWD_INPUT, BWD_WEIGHT, RECOMPUTE, "
          "SEND, RECV, ALLREDUCE, ALLGATHER, REDUCE_SCATTER, BROADCAST, OPTIMIZER)",
          OpWhere(schedule_, op), OpKindName(op.kind));
    }
    // Of today's recipes (schedule/op.h) the executor runs activation recomputation (of
    // whole layers and of blocks split over a tp group), sequence parallelism and ZeRO 1-3.
    if (op.kind == OpKind::kRecompute && op.part != LayerPart::kWhole && op.layers.Length() != 1) {
      ThrowInput("{}: a RECOMPUTE of part={} spans layers {}-{}; a block is one layer's",
                 OpWhere(schedule_, op), LayerPartName(op.part), op.layers.begin, op.layers.end);
    }
    if (op.sequence_parallel && op.part == LayerPart::kWhole) {
      ThrowInput(
          "{}: sp=1 on a whole layer; sequence parallelism splits it into part=attn and "
          "part=mlp",
          OpWhere(schedule_, op));
    }
  }
  if (devices.size() > static_cast<size_t>(kMaxDevicesPerProcess)) {
    ThrowInput(
        "{}: {} devices in one process; exec runs at most {} per process (one rank per "
        "device under mpirun has no such limit)",
        source, devices.size(), kMaxDevicesPerProcess);
  }
  for (const Op& op : schedule_.ops) {
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
      if (op.kind == OpKind::kOptimizer && op.zero > 0) dev->zero_stage[op.stage] = op.zero;
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
      if (!op.sequence_parallel) continue;
      dev->sequence_parallel = true;
      // Each tp rank holds an equal share of the slice's token rows.
      if (op.rows * op.tokens.Length() % dev->shard.tp != 0) {
        ThrowInput(
            "{}: sp=1: the slice's {} rows x {} tokens do not divide into {} equal shares "
            "(one per rank of tp group {})",
            OpWhere(schedule_, op), op.rows, op.tokens.Length(), dev->shard.tp, op.group);
      }
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
        (op.kind == OpKind::kAllReduce && id.kind == TensorKind::kTpBackward) ||
        (op.kind == OpKind::kReduceScatter && id.kind == TensorKind::kSpScatter && id.backward)) {
      backward_ops.push_back(static_cast<int>(i));
      continue;
    }
    // A stage's whole gradients: their dp sum (or ZeRO-1 / 2 reduce-scatter) and the tp sum
    // of sequence parallelism's parts.
    const bool wgrad = ((op.kind == OpKind::kAllReduce || op.kind == OpKind::kReduceScatter) &&
                        id.kind == TensorKind::kWeightGradient) ||
                       (op.kind == OpKind::kAllReduce && id.kind == TensorKind::kSpGradient);
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

std::string Runner::InputKey(int index) const {
  const Op& op = schedule_.ops[index];
  if (op.sequence_parallel && IsLayerCompute(op.kind)) {
    // The all-gather before it (a BWD_WEIGHT reads nothing).
    if (op.kind == OpKind::kBwdWeight) return "";
    if (op.kind == OpKind::kRecompute) {
      return RecomputeKey("g", op.layers.begin, op.part, op.microbatch, op.tokens);
    }
    return SpKey(true, op.kind != OpKind::kFwd, op.layers.begin, op.part, op.microbatch, op.tokens);
  }
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

}  // namespace terasim::run_detail

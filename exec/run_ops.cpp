// What each op does: layer math, collectives, SEND / RECV, OPTIMIZER (exec/stream_runner.h).
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

double Runner::OpFlops(const DeviceState& dev, const Op& op) const {
  if (!IsLayerCompute(op.kind) || op.kind == OpKind::kBwdWeight) return 0;
  const SliceRef slice = Slice(op.microbatch, op.tokens);
  const bool backward = op.kind != OpKind::kFwd && op.kind != OpKind::kRecompute;
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
    ReleaseAfterUse(dev, layer);  // the forward's last use of the layer's parameters
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
  ReleaseAfterUse(dev, layer);  // the backward's last use of the layer's parameters
}

void Runner::RunCompute(DeviceState& dev, const Op& op) {
  if (op.kind == OpKind::kBwdWeight) return;  // BWD_INPUT did the weight gradients too
  const SliceRef slice = Slice(op.microbatch, op.tokens);
  const int64_t values = slice.Values(card_.hidden);
  const bool split = !op.group.empty();  // partial sums go to the tp all-reduce
  ComputeBackend& backend = *dev.backend;
  if (op.kind == OpKind::kRecompute && op.part != LayerPart::kWhole) {
    return RunRecomputeBlock(dev, op, slice);
  }
  if (op.kind == OpKind::kRecompute) {
    // Whole layers: each layer's forward again from the input its FWD kept. It reads nothing
    // from the store and writes nothing there.
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    for (int l = op.layers.begin; l < op.layers.end; ++l) backend.RecomputeForward(l, slice);
    return;
  }
  if (op.kind == OpKind::kFwd && op.part != LayerPart::kMlp) {
    // How each layer's forward keeps its activations (recompute=); before its Forward.
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    for (int l = op.layers.begin; l < op.layers.end; ++l) {
      backend.KeepActivations(l, slice, op.recompute);
    }
  }
  if (op.sequence_parallel) {
    // The block on every token row: its input gathered by the all-gather before it, its
    // partial output for the reduce-scatter after it.
    const bool backward = op.kind != OpKind::kFwd;
    const int layer = op.layers.begin;
    const std::vector<float> in =
        dev.store->Get(SpKey(true, backward, layer, op.part, op.microbatch, op.tokens));
    std::vector<float> partial(values);
    {
      std::lock_guard<std::mutex> lock(dev.backend_mutex);
      if (backward) {
        backend.Backward(layer, op.part, slice, in, partial);
      } else {
        backend.Forward(layer, op.part, slice, in, partial);
      }
    }
    dev.store->Put(SpKey(false, backward, layer, op.part, op.microbatch, op.tokens),
                   std::move(partial));
    return;
  }
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

void Runner::RunRecomputeBlock(DeviceState& dev, const Op& op, const SliceRef& slice) {
  // One block of a tp-split layer's forward again, as the forward's block: with sequence
  // parallelism from the all-gather before it (tprg), its partial output to the
  // reduce-scatter after it (tprs); else from the kept input to the all-reduce (tpr).
  const int layer = op.layers.begin;
  std::vector<float> in;
  if (op.sequence_parallel) {
    in = dev.store->Get(RecomputeKey("g", layer, op.part, op.microbatch, op.tokens));
  }
  std::vector<float> partial(static_cast<size_t>(slice.Values(card_.hidden)));
  std::lock_guard<std::mutex> lock(dev.backend_mutex);
  dev.backend->RecomputeBlock(layer, op.part, slice, in, partial);
  if (op.group.empty()) {  // tp degree 1: the partial sum is whole
    dev.backend->FinishRecompute(layer, op.part, slice, partial);
    return;
  }
  dev.store->Put(
      RecomputeKey(op.sequence_parallel ? "s" : "", layer, op.part, op.microbatch, op.tokens),
      std::move(partial));
}

void Runner::RunAllReduce(DeviceState& dev, const Op& op) {
  const TensorId id = ParseTensorId(op.tensor);
  const CollectiveCall call = Call(dev, op);
  if (id.recompute) {
    // A recomputed block's tp sum: its finish rebuilds what the backward reads.
    std::vector<float> data = dev.store->Get(id.store_key);
    transport_.AllReduce(call, data);
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    dev.backend->FinishRecompute(id.layer, id.part, Slice(id.microbatch, id.tokens), data);
    return;
  }
  if (id.kind == TensorKind::kTpForward || id.kind == TensorKind::kTpBackward) {
    std::vector<float> data = dev.store->Get(id.store_key);
    transport_.AllReduce(call, data);
    FinishBlock(dev, id.kind == TensorKind::kTpBackward, id.layer, id.part,
                Slice(id.microbatch, id.tokens), data);
    return;
  }
  if (id.kind == TensorKind::kBarrier) {
    std::vector<float> one(1, 0.0f);
    transport_.AllReduce(call, one);
    return;
  }
  if (id.kind == TensorKind::kWeightGradient || id.kind == TensorKind::kSpGradient) {
    // The dp sum of a stage's gradients (a bucket: of the op's layers), or (sequence
    // parallelism) the tp sum of the parts of its replicated parameters' gradients.
    const Range stage_layers = StageLayers(dev, op, id.stage);
    const Range layers = id.bucket >= 0 ? op.layers : stage_layers;
    if (layers.Empty() || layers.begin < stage_layers.begin || layers.end > stage_layers.end) {
      ThrowInput("{}: bucket layers [{}, {}) are not inside stage {}'s [{}, {})",
                 OpWhere(schedule_, op), layers.begin, layers.end, id.stage, stage_layers.begin,
                 stage_layers.end);
    }
    // ZeRO-3 took the gradients out unit by unit: the tp sum adds the dp-summed shards.
    if (id.kind == TensorKind::kSpGradient) ZeroGradientsBack(dev, layers);
    const ParamSubset subset =
        id.kind == TensorKind::kSpGradient ? ParamSubset::kReplicated : ParamSubset::kAll;
    std::vector<float> grads;
    {
      std::lock_guard<std::mutex> lock(dev.backend_mutex);
      grads = dev.backend->Gradients(layers, subset);
    }
    transport_.AllReduce(call, grads);
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    dev.backend->SetGradients(layers, grads, subset);
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
    case OpKind::kRecompute:
      RunCompute(dev, op);
      // A whole layer's forward or backward (a RECOMPUTE is followed by its backward) is the
      // pass's last use of its parameters; a split one ends in FinishBlock.
      if (op.part == LayerPart::kWhole && op.kind != OpKind::kRecompute &&
          op.kind != OpKind::kBwdWeight) {
        for (int l = op.layers.begin; l < op.layers.end; ++l) ReleaseAfterUse(dev, l);
      }
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
      if (id.kind == TensorKind::kSpGather) return RunSpGather(dev, op, id);
      if (id.kind == TensorKind::kLayerParams) {
        return RunZeroGather(dev, op, Range{id.layer, id.layer + 1}, true);
      }
      if (id.kind == TensorKind::kStageParams) {
        return RunZeroGather(dev, op, StageLayers(dev, op, id.stage), false);
      }
      std::vector<float> data = dev.store->Get(id.store_key);
      dev.store->Put(id.store_key, transport_.AllGather(Call(dev, op), data));
      return;
    }
    case OpKind::kReduceScatter: {
      const TensorId id = ParseTensorId(op.tensor);
      if (id.kind == TensorKind::kSpScatter) return RunSpScatter(dev, op, id);
      if (id.kind == TensorKind::kWeightGradient || id.kind == TensorKind::kLayerGradient) {
        return RunZeroScatter(dev, op, id);
      }
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
      if (op.zero > 0) return RunZeroOptimizer(dev, op, layers, iteration);
      std::lock_guard<std::mutex> lock(dev.backend_mutex);
      if (iteration == 0) dev.backend->SnapshotGradients(layers);
      dev.backend->OptimizerStep(layers, options_.adam);
      return;
    }
  }
}

Range Runner::StageLayers(const DeviceState& dev, const Op& op, int stage) const {
  auto it = dev.stage_layers.find(stage);
  if (it == dev.stage_layers.end()) {
    ThrowInput("{}: device {} holds no layers of stage {}", OpWhere(schedule_, op), dev.device,
               stage);
  }
  return it->second;
}

SliceRef Runner::Shard(const DeviceState& dev, int microbatch, Range tokens) const {
  SliceRef shard = Slice(microbatch, tokens);
  shard.part = dev.shard.tp_rank;
  shard.parts = dev.shard.tp;
  return shard;
}

void Runner::RunSpGather(DeviceState& dev, const Op& op, const TensorId& id) {
  const SliceRef shard = Shard(dev, id.microbatch, id.tokens);
  // The pass's first block takes this rank's shard of the layer input (forward) or of the
  // layer output gradient (backward); the second one continues inside the back end, and so
  // does a recomputation (from the kept shard).
  std::vector<float> input;
  if (!id.recompute && id.part == (id.backward ? LayerPart::kMlp : LayerPart::kAttention)) {
    if (!id.backward && id.layer == 0) {
      input.resize(static_cast<size_t>(shard.Values(card_.hidden)));
      std::lock_guard<std::mutex> lock(dev.backend_mutex);
      dev.backend->Input(shard, input);
    } else {
      input = dev.store->Get(id.backward ? GradientKey(id.layer + 1, id.microbatch, id.tokens)
                                         : ActivationKey(id.layer, id.microbatch, id.tokens));
    }
  }
  std::vector<float> mine(static_cast<size_t>(shard.Values(card_.hidden)));
  {
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    if (id.recompute) {
      dev.backend->RecomputeShard(id.layer, id.part, shard, mine);
    } else {
      dev.backend->SequenceShard(id.layer, id.part, id.backward, shard, input, mine);
    }
  }
  dev.store->Put(id.store_key, transport_.AllGather(Call(dev, op), mine));
}

void Runner::RunSpScatter(DeviceState& dev, const Op& op, const TensorId& id) {
  const std::vector<float> partial = dev.store->Get(id.store_key);
  const std::vector<float> summed = transport_.ReduceScatter(Call(dev, op), partial);
  if (id.recompute) {
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    dev.backend->FinishRecompute(id.layer, id.part, Shard(dev, id.microbatch, id.tokens), summed);
    return;
  }
  FinishBlock(dev, id.backward, id.layer, id.part, Shard(dev, id.microbatch, id.tokens), summed);
}

// ZeRO in the executor. A flattened vector (the parameters or gradients of a stage, or with
// ZeRO-3 of one layer, in Gradients() order) is cut into n equal chunks over the dp group's
// n members, the last padded with zeros; the member at position i owns chunk i. The optimizer
// steps only the owned chunk, so the back end holds Adam moments of that chunk alone (stage
// 1); with stage 2 the gradients outside it are freed after their reduce-scatter, with stage 3
// also after each layer's shards are summed, and the parameters outside it after each use.
// The all-gather of the owners' chunks makes the weights whole again before they are used.
namespace {

struct Chunk {
  int64_t size = 0;  // elements per chunk (the padded vector holds n of them)
  ElementRange owned;
};

Chunk ChunkOf(int64_t total, int members, int position) {
  Chunk c;
  c.size = (total + members - 1) / members;
  c.owned.begin = std::min(total, position * c.size);
  c.owned.end = std::min(total, (position + 1) * c.size);
  return c;
}

}  // namespace

void Runner::RunZeroScatter(DeviceState& dev, const Op& op, const TensorId& id) {
  const bool layer = id.kind == TensorKind::kLayerGradient;  // ZeRO-3: one layer, one unit
  const Range layers = layer ? Range{id.layer, id.layer + 1} : StageLayers(dev, op, id.stage);
  const CollectiveCall call = Call(dev, op);
  const int members = static_cast<int>(call.ranks.size());
  std::vector<float> grads;
  {
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    grads = dev.backend->Gradients(layers);
    // ZeRO-3: taken out in one step, so what the compute stream adds meanwhile (the next
    // units) goes to the next reduce-scatter.
    if (layer) dev.backend->SetGradients(layers, std::vector<float>(grads.size(), 0.0f));
  }
  const int64_t total = static_cast<int64_t>(grads.size());
  const Chunk chunk = ChunkOf(total, members, GroupPosition(call, dev.device));
  grads.resize(static_cast<size_t>(chunk.size * members), 0.0f);
  const std::vector<float> mine = transport_.ReduceScatter(call, grads);
  const int64_t owned = chunk.owned.end - chunk.owned.begin;
  if (!layer) {
    // ZeRO-1 / 2: the owned chunk holds the dp sum now; the optimizer steps only that.
    std::copy(mine.begin(), mine.begin() + owned, grads.begin() + chunk.owned.begin);
    grads.resize(static_cast<size_t>(total));
    dev.zero_shard[id.stage] = chunk.owned;
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    dev.backend->SetGradients(layers, grads);
    // ZeRO-2: only the shard's gradients stay (4 bytes x params / D).
    auto stage = dev.zero_stage.find(id.stage);
    if (stage != dev.zero_stage.end() && stage->second >= 2) {
      dev.backend->ReleaseGradients(layers, chunk.owned);
    }
    return;
  }
  // ZeRO-3: this unit's sum joins the shard's (the dp stream's own state).
  DeviceState::ZeroLayer& z = dev.zero_layers[id.layer];
  z.owned = chunk.owned;
  z.sum.resize(static_cast<size_t>(owned), 0.0f);
  for (int64_t i = 0; i < owned; ++i) z.sum[i] += mine[i];
}

void Runner::ZeroGradientsBack(DeviceState& dev, Range layers) {
  for (int l = layers.begin; l < layers.end; ++l) {
    auto it = dev.zero_layers.find(l);
    if (it == dev.zero_layers.end() || it->second.in_backend) continue;
    DeviceState::ZeroLayer& z = it->second;
    const Range layer{l, l + 1};
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    std::vector<float> grads(dev.backend->Gradients(layer).size(), 0.0f);
    std::copy(z.sum.begin(), z.sum.end(), grads.begin() + z.owned.begin);
    dev.backend->SetGradients(layer, grads);
    dev.backend->ReleaseGradients(layer, z.owned);  // only the shard's stay
    z.in_backend = true;
  }
}

void Runner::RunZeroGather(DeviceState& dev, const Op& op, Range layers, bool per_use) {
  const CollectiveCall call = Call(dev, op);
  const int members = static_cast<int>(call.ranks.size());
  std::vector<float> params;
  {
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    params = dev.backend->Parameters(layers);
  }
  const int64_t total = static_cast<int64_t>(params.size());
  const Chunk chunk = ChunkOf(total, members, GroupPosition(call, dev.device));
  std::vector<float> mine(static_cast<size_t>(chunk.size), 0.0f);
  std::copy(params.begin() + chunk.owned.begin, params.begin() + chunk.owned.end, mine.begin());
  std::vector<float> all = transport_.AllGather(call, mine);
  all.resize(static_cast<size_t>(total));
  std::lock_guard<std::mutex> lock(dev.backend_mutex);
  dev.backend->SetParameters(layers, all);
  if (per_use) {
    dev.zero_users[layers.begin] += 1;
    dev.zero_params[layers.begin] = chunk.owned;
  }
}

void Runner::ReleaseAfterUse(DeviceState& dev, int layer) {
  std::lock_guard<std::mutex> lock(dev.backend_mutex);
  auto it = dev.zero_users.find(layer);
  if (it == dev.zero_users.end() || it->second == 0) return;  // not gathered per use
  if (--it->second > 0) return;                               // another pass holds them
  dev.backend->ReleaseParameters(Range{layer, layer + 1}, dev.zero_params.at(layer));
}

void Runner::RunZeroOptimizer(DeviceState& dev, const Op& op, Range layers, int iteration) {
  if (op.zero < 3) {
    auto it = dev.zero_shard.find(op.stage);
    if (it == dev.zero_shard.end()) {
      ThrowInput("{}: zero={}: no reduce-scatter of stage {}'s gradients ran before it",
                 OpWhere(schedule_, op), op.zero, op.stage);
    }
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    if (iteration == 0) dev.backend->SnapshotGradients(layers, it->second);
    dev.backend->OptimizerStep(layers, options_.adam, it->second);
    return;
  }
  // ZeRO-3: the shards' summed gradients back into the back end (unless the tp sum of
  // sequence parallelism did it), then the step of each layer's shard.
  ZeroGradientsBack(dev, layers);
  for (int l = layers.begin; l < layers.end; ++l) {
    const Range layer{l, l + 1};
    auto it = dev.zero_layers.find(l);
    if (it == dev.zero_layers.end()) {
      ThrowInput("{}: zero=3: no reduce-scatter of layer {}'s gradients ran before it",
                 OpWhere(schedule_, op), l);
    }
    std::lock_guard<std::mutex> lock(dev.backend_mutex);
    if (iteration == 0) dev.backend->SnapshotGradients(layer, it->second.owned);
    dev.backend->OptimizerStep(layer, options_.adam, it->second.owned);
    dev.zero_layers.erase(it);
  }
}

}  // namespace terasim::run_detail

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
  if (op.kind == OpKind::kRecompute) {
    // Whole layers (Prepare): each layer's forward again from the input its FWD kept. It
    // reads nothing from the store and writes nothing there.
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
    case OpKind::kRecompute:
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

}  // namespace terasim::run_detail

#include "schedule/memory_estimate.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace terasim {
namespace {

Block ToBlock(LayerPart part) {
  switch (part) {
    case LayerPart::kWhole:
      return Block::kWhole;
    case LayerPart::kAttention:
      return Block::kAttention;
    case LayerPart::kMlp:
      return Block::kMlp;
  }
  return Block::kWhole;
}

// The tp degree an op is sharded over: the size of its group, 1 without one. A device's
// compute ops share one group: the last one found is tried first.
class TpDegrees {
 public:
  explicit TpDegrees(const Schedule& schedule) : schedule_(schedule) {}
  int Of(const Op& op) {
    if (op.group.empty()) return 1;
    if (last_ == nullptr || op.group != *last_) {
      const int g = schedule_.FindGroup(op.group);
      last_ = &op.group;
      degree_ = g < 0 ? 1 : std::max<int>(1, static_cast<int>(schedule_.groups[g].ranks.size()));
    }
    return degree_;
  }

 private:
  const Schedule& schedule_;
  const std::string* last_ = nullptr;  // the group of degree_
  int degree_ = 1;
};

// One saved (micro-batch, slice, layer, block, what): what 0 is what the forward keeps, 1 what
// a RECOMPUTE op rebuilt.
using SavedKey = std::tuple<int, int, int, int, int, int>;

struct Saved {
  Bytes activations = 0;
  Bytes kv_cache = 0;
};

std::string StageList(const std::vector<int>& stages) {
  if (stages.empty()) return "no stage";
  std::string out = stages.size() == 1 ? "stage " : "stages ";
  for (size_t i = 0; i < stages.size(); ++i) out += (i ? "," : "") + std::to_string(stages[i]);
  return out;
}

DeviceMemory EstimateDevice(const Schedule& schedule, const ModelCard& model,
                            const DeviceSpec& spec, int device, const std::vector<int>& ops) {
  DeviceMemory m;
  m.device = device;
  m.capacity = spec.CapacityBytes();
  const bool split_backward = std::any_of(
      ops.begin(), ops.end(), [&](int i) { return schedule.ops[i].kind == OpKind::kBwdWeight; });
  std::set<int> stages;
  std::map<int, std::pair<int, std::set<Block>>> held;  // layer -> (tp, blocks)
  std::map<SavedKey, Saved> live;
  Saved now;
  Saved at_peak;
  Bytes largest_boundary = 0;
  int zero_stage = 0;
  int zero_ranks = 1;
  Bytes largest_gather = 0;
  TpDegrees tp_degrees(schedule);
  auto add = [&](const SavedKey& key, const Saved& s) {
    Saved& slot = live[key];
    now.activations += s.activations - slot.activations;
    now.kv_cache += s.kv_cache - slot.kv_cache;
    slot = s;
  };
  auto release = [&](const SavedKey& key) {
    auto it = live.find(key);
    if (it == live.end()) return;
    now.activations -= it->second.activations;
    now.kv_cache -= it->second.kv_cache;
    live.erase(it);
  };
  for (int i : ops) {
    const Op& op = schedule.ops[i];
    if (IsPointToPoint(op.kind) || op.kind == OpKind::kBroadcast) {
      largest_boundary = std::max(largest_boundary, op.bytes);
      continue;
    }
    if (op.kind == OpKind::kAllGather && op.tensor.rfind("param.", 0) == 0) {
      largest_gather = std::max(largest_gather, op.bytes);
      continue;
    }
    if (op.kind == OpKind::kOptimizer && op.zero > zero_stage) {
      zero_stage = op.zero;
      const int g = schedule.FindGroup(op.group);
      zero_ranks = g < 0 ? 1 : std::max<int>(1, static_cast<int>(schedule.groups[g].ranks.size()));
    }
    if (!IsLayerCompute(op.kind)) continue;
    const int tp = tp_degrees.Of(op);
    const Block block = ToBlock(op.part);
    const ActivationPolicy policy{op.recompute, op.sequence_parallel};
    const bool frees = op.kind == OpKind::kBwd || op.kind == OpKind::kBwdWeight ||
                       (op.kind == OpKind::kBwdInput && !split_backward);
    if (op.stage >= 0) stages.insert(op.stage);
    if (op.kind == OpKind::kRecompute) {
      // The recomputed activations are rebuilt and consumed layer by layer with the backward:
      // one layer of the op's range is live at a time, until the backward frees it.
      add({op.microbatch, op.tokens.begin, op.tokens.end, op.layers.begin, static_cast<int>(block),
           1},
          {LayerRecomputeBytes(model, op.rows, op.tokens.Length(), op.tokens.begin, tp, block,
                               op.sequence_parallel),
           0});
    }
    for (int layer = op.layers.begin; layer < op.layers.end; ++layer) {
      if (op.kind == OpKind::kRecompute) break;
      held[layer].first = tp;
      held[layer].second.insert(block);
      const SavedKey key{op.microbatch, op.tokens.begin,         op.tokens.end,
                         layer,         static_cast<int>(block), 0};
      if (op.kind == OpKind::kFwd) {
        Saved s;
        s.activations = LayerActivationBytes(model, op.rows, op.tokens.Length(), op.tokens.begin,
                                             tp, block, policy);
        const bool cut = op.tokens.Length() < schedule.sequence;
        s.kv_cache = cut ? LayerKvCacheBytes(model, op.rows, op.tokens.Length(), tp, block) : 0;
        add(key, s);
      } else if (frees) {
        release(key);
        release({op.microbatch, op.tokens.begin, op.tokens.end, layer, static_cast<int>(block), 1});
      }
    }
    if (now.activations + now.kv_cache > at_peak.activations + at_peak.kv_cache) {
      at_peak = now;
      m.peak_key = op.key;
    }
  }
  m.stages.assign(stages.begin(), stages.end());
  for (const auto& [layer, tp_blocks] : held) {
    const auto& [tp, blocks] = tp_blocks;
    if (blocks.count(Block::kWhole) ||
        (blocks.count(Block::kAttention) && blocks.count(Block::kMlp))) {
      m.params += LayerShardParams(model, tp, Block::kWhole);
    } else {
      for (Block b : blocks) m.params += LayerShardParams(model, tp, b);
    }
  }
  if (!held.empty()) {
    const int tp = held.begin()->second.first;
    if (model.embedding_in_stack && held.count(0)) m.params += model.EmbeddingParams() / tp;
    if (model.lm_head_in_stack && !model.embedding_in_stack && held.count(model.layers - 1)) {
      m.params += static_cast<int64_t>(model.vocab) * model.hidden / tp;
    }
  }
  m.zero_stage = zero_stage;
  m.state = TrainingState(m.params, zero_stage, zero_ranks);
  m.activations = at_peak.activations;
  m.kv_cache = at_peak.kv_cache;
  m.boundary = 2 * largest_boundary;
  m.gathered = 2 * largest_gather;
  m.peak = m.state.Total() + m.activations + m.kv_cache + m.boundary + m.gathered;
  m.fits = m.peak <= m.capacity;
  const std::string zero =
      zero_stage > 0 ? fmt::format(", ZeRO-{} over {}", zero_stage, zero_ranks) : std::string();
  const std::string gathered =
      m.gathered > 0 ? fmt::format(" + gathered parameters {}", FormatGiB(m.gathered)) : "";
  m.reason = fmt::format(
      "device {} ({}): peak {} = state {} (weights {}, gradients {}, optimizer {}{}) + activations "
      "{} + kv cache {} + boundary {}{} {} capacity {} ({} less {} reserve, {})",
      device, StageList(m.stages), FormatGiB(m.peak), FormatGiB(m.state.Total()),
      FormatGiB(m.state.weights), FormatGiB(m.state.gradients), FormatGiB(m.state.optimizer_state),
      zero, FormatGiB(m.activations), FormatGiB(m.kv_cache), FormatGiB(m.boundary), gathered,
      m.fits ? "<=" : ">", FormatGiB(m.capacity), FormatGiB(spec.memory_bytes),
      FormatGiB(spec.memory_reserve_bytes), spec.name);
  if (!m.fits) {
    const auto [term, bytes] = m.LargestTerm();
    m.reason += fmt::format("; largest term: {} {}", term, FormatGiB(bytes));
  }
  return m;
}

}  // namespace

std::pair<std::string, Bytes> DeviceMemory::LargestTerm() const {
  const std::pair<std::string, Bytes> terms[] = {
      {"activations", activations},   {"optimizer state", state.optimizer_state},
      {"weights", state.weights},     {"gradients", state.gradients},
      {"kv cache", kv_cache},         {"gathered parameters", gathered},
      {"boundary buffers", boundary},
  };
  std::pair<std::string, Bytes> best = terms[0];
  for (const auto& t : terms) {
    if (t.second > best.second) best = t;
  }
  return best;
}

std::string FormatGiB(Bytes bytes) {
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

MemoryEstimate EstimateMemory(const Schedule& schedule, const ModelCard& model,
                              const DeviceSpec& spec) {
  MemoryEstimate estimate;
  estimate.capacity_bytes = spec.CapacityBytes();
  const std::vector<std::vector<int>> by_device = schedule.OpsByDevice();
  for (int d = 0; d < static_cast<int>(by_device.size()); ++d) {
    const int image = schedule.symmetry.PresentImage(d);
    if (image != d) {
      // A representatives-only schedule (Schedule::symmetry): d runs its image's program.
      DeviceMemory copy = estimate.devices[image];
      copy.device = d;
      copy.reason =
          fmt::format("device {}", d) + copy.reason.substr(fmt::format("device {}", image).size());
      estimate.devices.push_back(std::move(copy));
    } else {
      estimate.devices.push_back(EstimateDevice(schedule, model, spec, d, by_device[d]));
    }
    const DeviceMemory& m = estimate.devices.back();
    if (!m.fits) estimate.fits = false;
    if (d == 0 || m.peak > estimate.peak_bytes) {
      estimate.peak_bytes = m.peak;
      estimate.peak_device = d;
    }
  }
  if (estimate.devices.empty()) {
    estimate.reason = "fits: the schedule has no devices";
    return estimate;
  }
  estimate.reason = (estimate.fits ? "fits: largest " : "does not fit: largest ") +
                    estimate.devices[estimate.peak_device].reason;
  return estimate;
}

}  // namespace terasim

#include "schedule/generator.h"

#include <string_view>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/limits.h"
#include "schedule/pipeline_order.h"
#include "schedule/slicing_planner.h"

namespace terasim {
namespace {

void RequirePositive(int value, std::string_view flag) {
  if (value < 1) ThrowInput("{} {}: must be >= 1", flag, value);
}

// Refuses a size above its limit (models/limits.h) before anything is allocated for it.
void RequireAtMost(int64_t value, int64_t limit, std::string_view what, std::string_view name) {
  if (value > limit) {
    ThrowInput("{} {}: exceeds the limit {} ({}, models/limits.h)", what, value, limit, name);
  }
}

void CheckLimits(const GenerateOptions& o) {
  RequireAtMost(o.microbatches, limits::kMaxMicrobatches, "--microbatches", "kMaxMicrobatches");
  RequireAtMost(o.microbatch_size, limits::kMaxBatch, "--microbatch-size", "kMaxBatch");
  const int64_t devices = int64_t{o.dp} * o.pp * o.tp;  // each <= INT32_MAX: no overflow
  RequireAtMost(devices, limits::kMaxDevices, "--dp x --pp x --tp =", "kMaxDevices");
  const int64_t batch = int64_t{o.dp} * o.microbatches * o.microbatch_size;
  RequireAtMost(batch, limits::kMaxBatch,
                "batch = --dp x --microbatches x --microbatch-size =", "kMaxBatch");
  // At least a forward and a backward per device, micro-batch, slice and model chunk (in double:
  // the product of unchecked factors may pass int64).
  const double slices = o.uniform_slices > 0 ? o.uniform_slices : 1;
  const double ops =
      2.0 * static_cast<double>(devices) * o.virtual_stages * o.microbatches * slices;
  if (ops > static_cast<double>(limits::kMaxOps)) {
    ThrowInput(
        "--dp {} x --pp {} x --tp {} x --virtual-stages {} x --microbatches {} x --slices {} makes "
        "at least {:.0f} ops, above the limit {} (kMaxOps, models/limits.h)",
        o.dp, o.pp, o.tp, o.virtual_stages, o.microbatches, slices, ops, limits::kMaxOps);
  }
}

// Everything the emitter needs, fixed once the options are validated.
struct Plan {
  const GenerateOptions& options;
  int dp, pp, tp, virtual_stages, stages;  // stages = P * V virtual stages
  std::vector<Range> layers;               // per virtual stage
  std::vector<MicrobatchSlices> microbatches;
  std::vector<std::vector<Range>> tokens;  // per local micro-batch, per slice
  std::vector<int> slices_per_microbatch;

  int Device(int d, int p, int r) const { return d * pp * tp + p * tp + r; }
  int Microbatches() const { return static_cast<int>(microbatches.size()); }
  // ".r{r}" when T > 1: keys and per-rank tensor copies.
  std::string RankSuffix(int r) const { return tp > 1 ? fmt::format(".r{}", r) : ""; }
  std::string TpGroup(int d, int p) const { return fmt::format("tp.d{}.s{}", d, p); }
  std::string DpGroup(int p, int r) const { return fmt::format("dp.s{}.r{}", p, r); }
};

// The position of one unit of work on one device.
struct UnitPlace {
  int d, p, r;  // replica, pipeline rank, tp rank
  int stage;    // virtual stage
  int mb;       // global micro-batch id
  int rows;
  Range tokens;

  std::string Tag() const {
    return fmt::format("s{}.m{}.t{}-{}", stage, mb, tokens.begin, tokens.end);
  }
  std::string TensorTag() const { return fmt::format("m{}.t{}-{}", mb, tokens.begin, tokens.end); }
};

// Writes one device's ops in issue order.
class DeviceEmitter {
 public:
  DeviceEmitter(const Plan& plan, int d, int p, int r, std::vector<Op>& ops)
      : plan_(plan), d_(d), p_(p), r_(r), device_(plan.Device(d, p, r)), ops_(ops) {}

  void Emit(const std::vector<PipelineStep>& steps) {
    // The last backward step of each chunk: where its weight gradients are complete.
    std::vector<int> last_backward(plan_.virtual_stages, -1);
    for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
      if (!steps[i].forward) last_backward[steps[i].chunk] = i;
    }
    std::vector<int> finished_stages;  // in the order their backwards finish
    std::vector<std::string> dp_keys;
    for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
      const PipelineStep& step = steps[i];
      UnitPlace u = Place(step);
      std::string last = step.forward ? Forward(u) : Backward(u);
      if (!step.forward && last_backward[step.chunk] == i) {
        finished_stages.push_back(u.stage);
        dp_keys.push_back(plan_.dp > 1 ? DataParallel(u.stage, last) : "");
      }
    }
    if (!plan_.options.optimizer) return;
    for (size_t i = 0; i < finished_stages.size(); ++i) {
      Op& op = Add(fmt::format("OPT.s{}.d{}{}", finished_stages[i], d_, Sfx()), OpKind::kOptimizer,
                   "compute");
      op.stage = finished_stages[i];
      op.layers = plan_.layers[op.stage];
      if (!dp_keys[i].empty()) op.after = {dp_keys[i]};
    }
  }

 private:
  std::string Sfx() const { return plan_.RankSuffix(r_); }

  UnitPlace Place(const PipelineStep& step) const {
    UnitPlace u;
    u.d = d_;
    u.p = p_;
    u.r = r_;
    u.stage = step.chunk * plan_.pp + p_;
    u.mb = d_ * plan_.Microbatches() + step.microbatch;
    u.rows = plan_.microbatches[step.microbatch].rows;
    u.tokens = plan_.tokens[step.microbatch][step.slice];
    return u;
  }

  Op& Add(std::string key, OpKind kind, std::string stream) {
    Op op;
    op.key = std::move(key);
    op.kind = kind;
    op.device = device_;
    op.stream = std::move(stream);
    ops_.push_back(std::move(op));
    return ops_.back();
  }

  // An op that carries or computes one unit: stage, micro-batch, rows, tokens.
  Op& AddUnitOp(std::string key, OpKind kind, std::string stream, const UnitPlace& u) {
    Op& op = Add(std::move(key), kind, std::move(stream));
    op.stage = u.stage;
    op.microbatch = u.mb;
    op.rows = u.rows;
    op.tokens = u.tokens;
    return op;
  }

  int64_t ActivationBytes(const UnitPlace& u) const {
    return static_cast<int64_t>(u.rows) * u.tokens.Length() * plan_.options.model.hidden * 2;
  }

  // The RECV (and BROADCAST) bringing a unit's input across the boundary into u.stage from
  // the previous stage (forward) or the next one (backward). Returns the key the compute
  // waits on, or "" when there is no boundary.
  std::string Receive(const UnitPlace& u, bool forward) {
    const int from = forward ? u.stage - 1 : u.stage + 1;
    if (from < 0 || from >= plan_.stages) return "";
    const Range& layers = plan_.layers[u.stage];
    const std::string tensor = forward ? fmt::format("act.l{}.{}", layers.begin, u.TensorTag())
                                       : fmt::format("grad.l{}.{}", layers.end, u.TensorTag());
    const int from_rank = from % plan_.pp;
    const bool broadcast = plan_.options.boundary == Boundary::kBroadcast && plan_.tp > 1;
    std::string key;
    if (!broadcast || r_ == 0) {
      key = fmt::format("{}.{}{}", forward ? "RF" : "RB", u.Tag(), Sfx());
      Op& op = AddUnitOp(key, OpKind::kRecv, "recv", u);
      op.peer = plan_.Device(d_, from_rank, broadcast ? 0 : r_);
      op.tensor = broadcast ? tensor : tensor + Sfx();
      op.bytes = ActivationBytes(u);
    }
    if (broadcast) {
      key = fmt::format("{}.{}{}", forward ? "BCF" : "BCB", u.Tag(), Sfx());
      Op& op = AddUnitOp(key, OpKind::kBroadcast, "recv", u);
      op.group = plan_.TpGroup(d_, p_);
      op.peer = plan_.Device(d_, p_, 0);
      op.tensor = tensor;
      op.bytes = ActivationBytes(u);
    }
    return key;
  }

  // The SEND of a unit's output (forward) or input gradient (backward) to the next or
  // previous stage, after `last` (the compute op that produced it).
  void Send(const UnitPlace& u, bool forward, const std::string& last) {
    const int to = forward ? u.stage + 1 : u.stage - 1;
    if (to < 0 || to >= plan_.stages) return;
    const bool broadcast = plan_.options.boundary == Boundary::kBroadcast && plan_.tp > 1;
    if (broadcast && r_ != 0) return;
    const Range& layers = plan_.layers[u.stage];
    const std::string tensor = forward ? fmt::format("act.l{}.{}", layers.end, u.TensorTag())
                                       : fmt::format("grad.l{}.{}", layers.begin, u.TensorTag());
    Op& op = AddUnitOp(fmt::format("{}.{}{}", forward ? "SF" : "SB", u.Tag(), Sfx()), OpKind::kSend,
                       "send", u);
    op.peer = plan_.Device(d_, to % plan_.pp, broadcast ? 0 : r_);
    op.tensor = broadcast ? tensor : tensor + Sfx();
    op.bytes = ActivationBytes(u);
    op.after = {last};
  }

  // One layer part's compute op and its tp ALLREDUCE. Returns {compute key, all-reduce key}.
  std::pair<std::string, std::string> Part(const UnitPlace& u, bool forward, int layer,
                                           LayerPart part, std::string& first_key,
                                           const std::string& input) {
    const std::string part_name(LayerPartName(part));
    const std::string where = fmt::format("{}.l{}.{}", u.Tag(), layer, part_name);
    Op& op = AddUnitOp(fmt::format("{}.{}{}", forward ? "F" : "B", where, Sfx()),
                       forward ? OpKind::kFwd : OpKind::kBwd, "compute", u);
    op.layers = {layer, layer + 1};
    op.part = part;
    op.group = plan_.TpGroup(d_, p_);
    if (first_key.empty()) {
      first_key = op.key;
      if (!input.empty()) op.after = {input};
    }
    std::string compute_key = op.key;  // `op` dangles once the next op is added
    Op& ar = AddUnitOp(fmt::format("{}.{}{}", forward ? "ARF" : "ARB", where, Sfx()),
                       OpKind::kAllReduce, "compute", u);
    ar.layers = {layer, layer + 1};
    ar.group = plan_.TpGroup(d_, p_);
    ar.tensor =
        fmt::format("{}.l{}.{}.{}", forward ? "tpf" : "tpb", layer, part_name, u.TensorTag());
    ar.bytes = ActivationBytes(u);
    return {std::move(compute_key), ar.key};
  }

  // The layer math of one unit on this device. Returns {the op whose output crosses the
  // boundary, the op after which the weight gradients are complete (with tp > 1 the last
  // tp all-reduce, not the last compute op)}.
  std::pair<std::string, std::string> Compute(const UnitPlace& u, bool forward,
                                              const std::string& input) {
    const Range& layers = plan_.layers[u.stage];
    if (plan_.tp == 1) {
      Op& op = AddUnitOp(fmt::format("{}.{}", forward ? "F" : "B", u.Tag()),
                         forward ? OpKind::kFwd : OpKind::kBwd, "compute", u);
      op.layers = layers;
      if (!input.empty()) op.after = {input};
      return {op.key, op.key};
    }
    std::string first;
    std::pair<std::string, std::string> keys;
    if (forward) {
      for (int l = layers.begin; l < layers.end; ++l) {
        Part(u, true, l, LayerPart::kAttention, first, input);
        keys = Part(u, true, l, LayerPart::kMlp, first, input);
      }
      return {keys.second, keys.second};
    }
    for (int l = layers.end - 1; l >= layers.begin; --l) {
      Part(u, false, l, LayerPart::kMlp, first, input);
      keys = Part(u, false, l, LayerPart::kAttention, first, input);
    }
    // The input gradient leaves after the last all-reduce; so do the weight gradients: the
    // LayerNorm (and, at layer 0, embedding) gradients are complete only after the finish
    // that follows the last tp all-reduce, so the dp all-reduce waits for it.
    return {keys.second, keys.second};
  }

  std::string Forward(const UnitPlace& u) {
    const std::string input = Receive(u, true);
    auto [out, last] = Compute(u, true, input);
    Send(u, true, out);
    return last;
  }

  std::string Backward(const UnitPlace& u) {
    const std::string input = Receive(u, false);
    auto [out, last] = Compute(u, false, input);
    Send(u, false, out);
    return last;
  }

  // The data-parallel all-reduce of `stage`'s weight gradients after `last_backward` (with
  // tp > 1 the stage's last backward tp all-reduce, see Compute()).
  std::string DataParallel(int stage, const std::string& last_backward) {
    Op& op = Add(fmt::format("DP.s{}.d{}{}", stage, d_, Sfx()), OpKind::kAllReduce, "dp");
    op.stage = stage;
    op.layers = plan_.layers[stage];
    op.group = plan_.DpGroup(p_, r_);
    op.tensor = fmt::format("wgrad.s{}.r{}", stage, r_);
    op.bytes = 2 * op.layers.Length() * plan_.options.model.ParamsPerLayer() / plan_.tp;
    op.after = {last_backward};
    return op.key;
  }

  const Plan& plan_;
  const int d_, p_, r_, device_;
  std::vector<Op>& ops_;
};

void Validate(const GenerateOptions& o) {
  RequirePositive(o.dp, "--dp");
  RequirePositive(o.pp, "--pp");
  RequirePositive(o.tp, "--tp");
  RequirePositive(o.virtual_stages, "--virtual-stages");
  RequirePositive(o.microbatches, "--microbatches");
  RequirePositive(o.microbatch_size, "--microbatch-size");
  CheckLimits(o);
  const ModelCard& m = o.model;
  if (m.layers < 1 || m.hidden < 1 || m.heads < 1 || m.sequence < 1) {
    ThrowInput("--model {}: layers, hidden, heads and sequence must be >= 1", m.name);
  }
  if (m.heads % o.tp != 0) ThrowInput("--tp {} does not divide {} heads", o.tp, m.heads);
  if (m.ffn % o.tp != 0) ThrowInput("--tp {} does not divide ffn {}", o.tp, m.ffn);
  if (o.virtual_stages > 1 && o.strategy != Strategy::kInterleaved) {
    ThrowInput("--virtual-stages {} needs --strategy interleaved (not {})", o.virtual_stages,
               StrategyName(o.strategy));
  }
  if (o.strategy == Strategy::kInterleaved) {
    if (o.virtual_stages > 1 && o.pp < 2) {
      ThrowInput("--virtual-stages {} needs --pp >= 2 (interleaved 1F1B)", o.virtual_stages);
    }
    if (o.microbatches > o.pp && o.microbatches % o.pp != 0) {
      ThrowInput(
          "--microbatches {} is not a multiple of --pp {} (interleaved 1F1B runs groups "
          "of P micro-batches, or one group when there are fewer than P)",
          o.microbatches, o.pp);
    }
  }
  if (o.pp * o.virtual_stages > m.layers) {
    if (o.virtual_stages == 1) ThrowInput("--pp {} exceeds {} layers", o.pp, m.layers);
    ThrowInput("--pp {} x --virtual-stages {} = {} stages exceed {} layers", o.pp, o.virtual_stages,
               o.pp * o.virtual_stages, m.layers);
  }
}

}  // namespace

std::string StrategyName(Strategy strategy) {
  switch (strategy) {
    case Strategy::kGpipe:
      return "gpipe";
    case Strategy::kOneFOneB:
      return "1f1b";
    case Strategy::kInterleaved:
      return "interleaved";
    case Strategy::kTeraPipe:
      return "terapipe";
  }
  return "?";
}

std::string SliceOrderName(SliceOrder order) {
  return order == SliceOrder::kFlush ? "flush" : "1f1b";
}

std::string BoundaryName(Boundary boundary) {
  return boundary == Boundary::kPointToPoint ? "p2p" : "broadcast";
}

Strategy ParseStrategy(const std::string& text, const std::string& flag) {
  for (Strategy s :
       {Strategy::kGpipe, Strategy::kOneFOneB, Strategy::kInterleaved, Strategy::kTeraPipe}) {
    if (text == StrategyName(s)) return s;
  }
  ThrowInput("{}: '{}' must be one of gpipe, 1f1b, interleaved, terapipe", flag, text);
}

SliceOrder ParseSliceOrder(const std::string& text, const std::string& flag) {
  if (text == "flush") return SliceOrder::kFlush;
  if (text == "1f1b") return SliceOrder::kOneFOneB;
  ThrowInput("{}: '{}' must be one of flush, 1f1b", flag, text);
}

Boundary ParseBoundary(const std::string& text, const std::string& flag) {
  if (text == "p2p") return Boundary::kPointToPoint;
  if (text == "broadcast") return Boundary::kBroadcast;
  ThrowInput("{}: '{}' must be one of p2p, broadcast", flag, text);
}

std::vector<MicrobatchSlices> ReplicaMicrobatches(const GenerateOptions& o) {
  const int sequence = o.model.sequence;
  if (o.strategy != Strategy::kTeraPipe) {
    if (!o.slicing.empty()) {
      ThrowInput("--slicing is only for --strategy terapipe (not {})", StrategyName(o.strategy));
    }
    if (o.uniform_slices > 0) {
      ThrowInput("--slices is only for --strategy terapipe (not {})", StrategyName(o.strategy));
    }
    RequirePositive(o.microbatches, "--microbatches");
    RequirePositive(o.microbatch_size, "--microbatch-size");
    return std::vector<MicrobatchSlices>(o.microbatches, {o.microbatch_size, {sequence}});
  }
  if (!o.slicing.empty()) {
    if (o.uniform_slices > 0)
      ThrowInput("--slicing and --slices {} exclude each other", o.uniform_slices);
    return ExpandSlicing(o.slicing, sequence);
  }
  RequirePositive(o.microbatches, "--microbatches");
  RequirePositive(o.microbatch_size, "--microbatch-size");
  if (o.uniform_slices < 0) ThrowInput("--slices {}: must be >= 1", o.uniform_slices);
  const int n = o.uniform_slices > 0 ? o.uniform_slices : 1;
  return std::vector<MicrobatchSlices>(o.microbatches,
                                       {o.microbatch_size, UniformSlices(sequence, n)});
}

std::vector<Range> StageLayers(int layers, int pp, int virtual_stages) {
  const int stages = pp * virtual_stages;
  if (stages > layers) {
    ThrowInput("--pp {} x --virtual-stages {} = {} stages exceed {} layers", pp, virtual_stages,
               stages, layers);
  }
  std::vector<Range> out;
  int begin = 0;
  for (int s = 0; s < stages; ++s) {
    const int count = layers / stages + (s < layers % stages ? 1 : 0);
    out.push_back({begin, begin + count});
    begin += count;
  }
  return out;
}

Schedule Generate(const GenerateOptions& options) {
  Validate(options);
  Plan plan{options,
            options.dp,
            options.pp,
            options.tp,
            options.virtual_stages,
            options.pp * options.virtual_stages,
            StageLayers(options.model.layers, options.pp, options.virtual_stages),
            ReplicaMicrobatches(options),
            {},
            {}};
  int rows = 0;
  for (const MicrobatchSlices& mb : plan.microbatches) {
    rows += mb.rows;
    std::vector<Range> ranges;
    int t = 0;
    for (int len : mb.slices) {
      ranges.push_back({t, t + len});
      t += len;
    }
    plan.tokens.push_back(std::move(ranges));
    plan.slices_per_microbatch.push_back(static_cast<int>(mb.slices.size()));
  }

  Schedule s;
  s.model = options.model.name;
  s.layers = options.model.layers;
  s.sequence = options.model.sequence;
  s.devices = plan.dp * plan.pp * plan.tp;
  s.batch = plan.dp * rows;
  s.shape = {StrategyName(options.strategy), plan.dp, plan.pp, plan.tp, plan.virtual_stages};
  if (plan.tp > 1) {
    for (int d = 0; d < plan.dp; ++d) {
      for (int p = 0; p < plan.pp; ++p) {
        Group g{plan.TpGroup(d, p), {}, 0};
        for (int r = 0; r < plan.tp; ++r) g.ranks.push_back(plan.Device(d, p, r));
        s.groups.push_back(std::move(g));
      }
    }
  }
  if (plan.dp > 1) {
    for (int p = 0; p < plan.pp; ++p) {
      for (int r = 0; r < plan.tp; ++r) {
        Group g{plan.DpGroup(p, r), {}, 0};
        for (int d = 0; d < plan.dp; ++d) g.ranks.push_back(plan.Device(d, p, r));
        s.groups.push_back(std::move(g));
      }
    }
  }

  std::vector<std::vector<PipelineStep>> steps(plan.pp);
  for (int p = 0; p < plan.pp; ++p) {
    switch (options.strategy) {
      case Strategy::kGpipe:
        steps[p] = FlushOrder(plan.slices_per_microbatch);
        break;
      case Strategy::kOneFOneB:
        steps[p] = OneFOneBOrder(plan.pp, p, plan.slices_per_microbatch);
        break;
      case Strategy::kInterleaved:
        steps[p] = InterleavedOrder(plan.pp, plan.virtual_stages, p, plan.Microbatches());
        break;
      case Strategy::kTeraPipe:
        steps[p] = options.order == SliceOrder::kFlush
                       ? FlushOrder(plan.slices_per_microbatch)
                       : OneFOneBOrder(plan.pp, p, plan.slices_per_microbatch);
        break;
    }
  }
  // Device by device (rank order: replica, pipeline rank, tp rank), each in issue order.
  for (int d = 0; d < plan.dp; ++d) {
    for (int p = 0; p < plan.pp; ++p) {
      for (int r = 0; r < plan.tp; ++r) DeviceEmitter(plan, d, p, r, s.ops).Emit(steps[p]);
    }
  }
  return s;
}

}  // namespace terasim

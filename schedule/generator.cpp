#include "schedule/generator.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string_view>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/limits.h"
#include "models/memory_model.h"
#include "schedule/compact_schedule.h"
#include "schedule/pipeline_order.h"
#include "schedule/slicing_planner.h"

namespace terasim {
namespace {

// dist.barrier on NCCL: an ALLREDUCE of one 4-byte element over the group.
constexpr int64_t kBarrierBytes = 4;

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
  std::vector<int> stage_rank;                // pipeline rank of each virtual stage
  std::vector<std::vector<int>> rank_stages;  // per pipeline rank: its stages by chunk
  // One send and one recv stream per stage boundary and direction instead of one of each per
  // device (see BoundaryStream).
  bool boundary_streams = false;

  int Device(int d, int p, int r) const { return d * pp * tp + p * tp + r; }
  int Microbatches() const { return static_cast<int>(microbatches.size()); }
  // ".r{r}" when T > 1: keys and per-rank tensor copies.
  std::string RankSuffix(int r) const { return tp > 1 ? fmt::format(".r{}", r) : ""; }
  std::string TpGroup(int d, int p) const { return fmt::format("tp.d{}.s{}", d, p); }
  std::string DpGroup(int p, int r) const { return fmt::format("dp.s{}.r{}", p, r); }
  // Replica d's P x T devices: the flattened dp step's barrier.
  std::string ReplicaGroup(int d) const { return fmt::format("replica.d{}", d); }
  // The positions of those groups in Schedule::groups (Op::group_id), in GenerateWith's order:
  // the tp groups (T > 1), the dp groups (D > 1), the replica groups.
  int TpGroupId(int d, int p) const { return d * pp + p; }
  int DpGroupId(int p, int r) const { return (tp > 1 ? dp * pp : 0) + p * tp + r; }
  int ReplicaGroupId(int d) const { return (tp > 1 ? dp * pp : 0) + pp * tp + d; }
};

// The generator's stream numbers (Op::stream_id): the fixed streams, then the stage-boundary
// streams (BoundaryStream): "send" and "recv", or per stage and direction.
constexpr int kComputeStream = 0;
constexpr int kDpStream = 1;
constexpr int kZeroStream = 2;
constexpr int kSendStream = 3;
constexpr int kRecvStream = 4;
constexpr int kFirstStageStream = 5;  // + 4 x stage + (recv ? 2 : 0) + (backward ? 1 : 0)

// A name (key, tensor or stream) assembled from text and integers in a fixed buffer: the hot
// path of generation, where fmt::format's parsing and the temporaries it left were most of the
// cost. Str() is the one allocation (none for names of up to 15 characters). Every name the
// generator writes is a few fields of at most 11 characters each.
class Name {
 public:
  Name() = default;
  // One length check for all the pieces (each at most its Bound), then copies unchecked.
  template <typename... Pieces>
  explicit Name(const Pieces&... pieces) {
    if ((Bound(pieces) + ... + size_t{0}) <= sizeof(chars_)) {
      (Put(pieces), ...);
    } else {
      (Append(pieces), ...);
    }
  }

  // Inlined, so that a literal piece becomes a store of its known length.
  template <typename Piece>
  [[gnu::always_inline]] Name& Append(const Piece& piece) {
    if (size_ + Bound(piece) > sizeof(chars_)) TooLong(View(piece));
    Put(piece);
    return *this;
  }

  std::string_view View() const { return {chars_, size_}; }
  std::string Str() const { return std::string(chars_, size_); }

 private:
  // At most the characters a piece writes; its text.
  static constexpr size_t kIntChars = 11;  // "-2147483648"
  [[gnu::always_inline]] static size_t Bound(std::string_view text) { return text.size(); }
  [[gnu::always_inline]] static size_t Bound(const char* text) { return std::strlen(text); }
  [[gnu::always_inline]] static size_t Bound(const std::string& text) { return text.size(); }
  [[gnu::always_inline]] static size_t Bound(const Name& name) { return name.size_; }
  [[gnu::always_inline]] static constexpr size_t Bound(char) { return 1; }
  [[gnu::always_inline]] static constexpr size_t Bound(int) { return kIntChars; }
  static std::string_view View(std::string_view text) { return text; }
  static std::string_view View(const Name& name) { return name.View(); }
  static std::string_view View(char c) { return std::string_view(&c, 1); }
  static std::string_view View(int) { return "(number)"; }

  // Appends a piece that fits.
  [[gnu::always_inline]] void Put(std::string_view text) {
    CopyShort(chars_ + size_, text);
    size_ += text.size();
  }
  [[gnu::always_inline]] void Put(const char* text) { Put(std::string_view(text)); }
  [[gnu::always_inline]] void Put(const std::string& text) { Put(std::string_view(text)); }
  [[gnu::always_inline]] void Put(const Name& name) { Put(name.View()); }
  [[gnu::always_inline]] void Put(char c) { chars_[size_++] = c; }
  [[gnu::always_inline]] void Put(int value) {
    // Room for kIntChars checked: straight into the buffer.
    size_ = static_cast<size_t>(
        std::to_chars(chars_ + size_, chars_ + size_ + kIntChars, value).ptr - chars_);
  }

  [[noreturn, gnu::cold, gnu::noinline]] void TooLong(std::string_view text) const {
    TERASIM_CHECK(false, "name too long: {}{}", View(), text);
    std::abort();  // not reached: TERASIM_CHECK(false) throws
  }

  char chars_[160];
  size_t size_ = 0;
};

// The position of one unit of work on one device.
struct UnitPlace {
  int d, p, r;  // replica, pipeline rank, tp rank
  int stage;    // virtual stage
  int mb;       // global micro-batch id
  int rows;
  Range tokens;
  Name tag;         // "s{stage}.m{mb}.t{t0}-{t1}", the unit's part of op keys
  Name tag_sfx;     // tag and the rank suffix: the key of its boundary ops after their prefix
  Name tensor_tag;  // "m{mb}.t{t0}-{t1}", its part of tensor identities (Generate only)
};

// What a compute op of one unit computes: the key prefix, the kind and the tensor prefix of
// its tp collectives. Key prefixes end with the '.' before the unit's part of the key.
struct PassNames {
  OpKind kind;
  std::string_view key;  // "F.", "B.", "BI.", "BW.", "R."
  std::string_view tp;   // tensor prefix of its tp collectives: "tpf", "tpb", "tpr" ("" for none)
  std::string_view ar;   // all-reduce key prefix: "ARF.", "ARB.", "ARR."
  std::string_view ag;   // sequence-parallel all-gather key prefix: "AGF.", "AGB.", "AGR."
  std::string_view rs;   // sequence-parallel reduce-scatter key prefix: "RSF.", "RSB.", "RSR."
  std::string_view tpg;  // tensor prefixes of the sequence-parallel all-gather and
  std::string_view tps;  // reduce-scatter: "tpfg", "tpfs", ...
};

PassNames NamesOf(OpKind kind) {
  switch (kind) {
    case OpKind::kFwd:
      return {kind, "F.", "tpf", "ARF.", "AGF.", "RSF.", "tpfg", "tpfs"};
    case OpKind::kBwd:
      return {kind, "B.", "tpb", "ARB.", "AGB.", "RSB.", "tpbg", "tpbs"};
    case OpKind::kBwdInput:
      return {kind, "BI.", "tpb", "ARB.", "AGB.", "RSB.", "tpbg", "tpbs"};
    case OpKind::kBwdWeight:
      return {kind, "BW.", "", "", "", "", "", ""};
    default:
      return {OpKind::kRecompute, "R.", "tpr", "ARR.", "AGR.", "RSR.", "tprg", "tprs"};
  }
}

// An op's key: `head` followed by `tail` (a prefix and a part several ops share).
struct Key {
  // Implicit, for one-piece keys.
  Key(std::string_view whole) : head(whole) {}    // NOLINT(google-explicit-constructor)
  Key(const std::string& whole) : head(whole) {}  // NOLINT(google-explicit-constructor)
  Key(std::string_view h, std::string_view t) : head(h), tail(t) {}
  std::string_view head;
  std::string_view tail;
};

// Writes one device's ops in issue order.
class DeviceEmitter {
 public:
  // With `keys` (GenerateForReplay) the keys go there, the ops' keys and collective tensors
  // stay empty.
  DeviceEmitter(const Plan& plan, int d, int p, int r, std::vector<Op>& ops, AfterOps& after,
                OpKeys* keys = nullptr)
      : plan_(plan),
        d_(d),
        p_(p),
        r_(r),
        device_(plan.Device(d, p, r)),
        ops_(ops),
        after_(after),
        keys_(keys),
        sfx_(plan.RankSuffix(r)),
        tp_group_(plan.TpGroup(d, p)),
        dp_group_(plan.DpGroup(p, r)),
        tp_group_id_(plan.TpGroupId(d, p)),
        dp_group_id_(plan.DpGroupId(p, r)),
        layer_done_(plan.options.model.layers, -1) {}

  void Emit(const std::vector<PipelineStep>& steps) {
    // The last step of each chunk that completes weight gradients (a whole backward or a
    // weight-gradient step): where the chunk's weight gradients are complete.
    std::vector<int> last_backward(plan_.virtual_stages, -1);
    for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
      if (!steps[i].forward && steps[i].part != BackwardPart::kInput) {
        last_backward[steps[i].chunk] = i;
      }
    }
    std::vector<int> finished_stages;  // in the order their backwards finish
    // What each finished stage's OPTIMIZER waits for (its dp reduction, or sequence
    // parallelism's tp sum).
    std::vector<std::vector<int>> dp_keys;
    std::vector<int> flattened_after;  // kFlattened: each stage's last gradient op
    for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
      const PipelineStep& step = steps[i];
      UnitPlace u = Place(step);
      int last;
      if (step.forward) {
        last = Forward(u);
      } else if (step.part == BackwardPart::kWeight) {
        last = Weight(u);
      } else {
        last = Backward(u, step.part == BackwardPart::kInput ? OpKind::kBwdInput : OpKind::kBwd);
      }
      if (!step.forward && last_backward[step.chunk] == i) {
        finished_stages.push_back(u.stage);
        dp_keys.push_back(StageGradients(u.stage, last, flattened_after));
      }
    }
    if (Mode() == DpStep::kFlattened) FlattenedStep(finished_stages, flattened_after, dp_keys);
    if (!plan_.options.optimizer) return;
    for (size_t i = 0; i < finished_stages.size(); ++i) {
      const int stage = finished_stages[i];
      Op& op = Add(fmt::format("OPT.s{}.d{}{}", stage, d_, Sfx()), OpKind::kOptimizer, "compute",
                   kComputeStream);
      op.stage = stage;
      op.layers = plan_.layers[op.stage];
      for (int dep : dp_keys[i]) After(op, dep);
      if (Zero() > 0) {
        op.zero = Zero();
        SetGroup(op, dp_group_, dp_group_id_);
      }
      if (Zero() == 1 || Zero() == 2) {
        // The updated parameter shards gathered back onto every replica.
        const int opt = Last();
        Op& ag = Add(fmt::format("AGS.s{}.d{}{}", stage, d_, Sfx()), OpKind::kAllGather, "dp",
                     kDpStream);
        ag.stage = stage;
        ag.layers = plan_.layers[stage];
        SetGroup(ag, dp_group_, dp_group_id_);
        if (CollectiveTensors()) ag.tensor = fmt::format("step.s{}.r{}", stage, r_);
        ag.bytes = StageGradientBytes(stage);
        After(ag, opt);
      }
    }
  }

  // An upper bound of the ops Emit(steps) writes, for Generate to size the schedule once (a
  // vector that doubles holds up to twice the ops at its last growth). Exact for the unit ops;
  // allows four per model chunk for the ops after its last backward, and the dp step's.
  size_t MaxOps(const std::vector<PipelineStep>& steps) const {
    const bool broadcast = BroadcastBoundary();
    const bool owner = !broadcast || r_ == 0;  // the tp rank that sends and receives
    const int parts = plan_.tp > 1 ? 2 : 1;
    const int collectives = plan_.tp > 1 ? (SequenceParallel() ? 2 : 1) : 0;
    size_t ops = 0;
    for (const PipelineStep& step : steps) {
      const int stage = plan_.rank_stages[p_][step.chunk];
      const bool weight = !step.forward && step.part == BackwardPart::kWeight;
      if (!weight) {
        if (Crosses(step.forward ? stage - 1 : stage + 1)) ops += (owner ? 1 : 0) + broadcast;
        if (Crosses(step.forward ? stage + 1 : stage - 1) && owner) ops += 1;
      }
      const bool recompute = RecomputeMode() == Recompute::kFull && !step.forward && !weight;
      if (!PerLayer()) {
        ops += recompute ? 2 : 1;
        continue;
      }
      const size_t layers = plan_.layers[stage].Length();
      ops += layers * parts * (1 + (weight ? 0 : collectives)) * (recompute ? 2 : 1);
      if (Zero() == 3) {
        // The parameter all-gather (not for the weight step), the gradient reduce-scatter (a
        // backward that computes weight gradients).
        const bool input_only = !step.forward && step.part == BackwardPart::kInput;
        ops += layers * ((weight ? 0 : 1) + (step.forward || input_only ? 0 : 1));
      }
    }
    // The dp step: a bucketed chunk's buckets beyond the one all-reduce counted above, a
    // flattened step's barrier.
    size_t dp_ops = Mode() == DpStep::kFlattened ? 1 : 0;
    if (Mode() == DpStep::kBucketed) {
      for (int stage : plan_.rank_stages[p_]) dp_ops += BucketLayers(stage).size() - 1;
    }
    return ops + 4 * static_cast<size_t>(plan_.virtual_stages) + dp_ops;
  }

 private:
  const std::string& Sfx() const { return sfx_; }
  // Whether collectives name their tensors (not for GenerateForReplay: a replay matches them by
  // their order on the group).
  bool CollectiveTensors() const { return keys_ == nullptr; }
  int Zero() const { return plan_.dp > 1 ? plan_.options.zero : 0; }
  bool SequenceParallel() const { return plan_.options.sequence_parallel && plan_.tp > 1; }
  // Compute ops per layer (and part): with tensor parallelism (the tp collectives sit between
  // parts), with ZeRO-3 (the parameter all-gathers sit between layers) and with bucketed dp
  // (each bucket waits for its own layers).
  bool PerLayer() const { return plan_.tp > 1 || Zero() == 3 || Mode() == DpStep::kBucketed; }
  // The data-parallel step this device runs: per-stage without a dp all-reduce to shape (D = 1,
  // ZeRO-3) and for bucketed with ZeRO-1 / 2 (one reduce-scatter per stage).
  DpStep Mode() const {
    if (plan_.dp < 2 || Zero() == 3) return DpStep::kPerStage;
    const DpStep mode = ResolvedDpStep(plan_.options);
    return mode == DpStep::kBucketed && Zero() > 0 ? DpStep::kPerStage : mode;
  }
  Recompute RecomputeMode() const { return plan_.options.recompute; }
  bool BroadcastBoundary() const {
    return plan_.options.boundary == Boundary::kBroadcast && plan_.tp > 1;
  }

  // fp16 parameters of one layer's tp shard.
  int64_t LayerParamBytes() const {
    return 2 * LayerShardParams(plan_.options.model, plan_.tp, Block::kWhole);
  }
  int64_t StageGradientBytes(int stage) const {
    return LayersGradientBytes(plan_.layers[stage].Length());
  }
  // fp16 weight gradients of `count` layers' tp shard.
  int64_t LayersGradientBytes(int count) const {
    return 2 * count * plan_.options.model.ParamsPerLayer() / plan_.tp;
  }

  UnitPlace Place(const PipelineStep& step) const {
    UnitPlace u;
    u.d = d_;
    u.p = p_;
    u.r = r_;
    u.stage = plan_.rank_stages[p_][step.chunk];
    u.mb = d_ * plan_.Microbatches() + step.microbatch;
    u.rows = plan_.microbatches[step.microbatch].rows;
    u.tokens = plan_.tokens[step.microbatch][step.slice];
    u.tag = Name('s', u.stage, ".m", u.mb, ".t", u.tokens.begin, '-', u.tokens.end);
    u.tag_sfx = Name(u.tag, sfx_);
    // Tensor identities are Generate's only (GenerateForReplay names no tensor by it).
    if (keys_ == nullptr) u.tensor_tag = Name('m', u.mb, ".t", u.tokens.begin, '-', u.tokens.end);
    return u;
  }

  // Sets a string field of the op just added (still empty, so it owns no memory): constructed
  // in place from the text, cheaper than operator='s general case (a quarter of Add's
  // instructions) and than append, which the compiler calls out of line in the larger emitters.
  [[gnu::always_inline]] static void SetFresh(std::string& field, std::string_view text) {
    std::destroy_at(&field);
    std::construct_at(&field, text.data(), text.size());
  }

  // Position of the op added last.
  int Last() const { return static_cast<int>(ops_.size()) - 1; }
  // Makes `op`, the op added last, wait for the op at position `dep`: its key goes into the
  // `after` list, its position into the schedule's AfterOps (ops are referred to by position
  // while they are emitted: a key is copied only into the `after` list that names it).
  void After(Op& op, int dep) {
    TERASIM_CHECK(&op == &ops_.back() && dep >= 0 && dep < Last(), "after: op {} on {}", dep,
                  op.key);
    if (keys_ != nullptr) {
      op.after.emplace_back();  // the keys are apart: an empty reference, one per dependency
    } else {
      op.after.push_back(ops_[dep].key);
    }
    after_.op.push_back(dep);
  }

  Op& Add(Key key, OpKind kind, std::string_view stream, int stream_id) {
    // Closes the row of the op before (its deps are all in) and opens this op's.
    after_.begin.push_back(static_cast<int>(after_.op.size()));
    Op& op = ops_.emplace_back();
    if (keys_ != nullptr) {
      keys_->Add(key.head, key.tail);
    } else {
      SetKey(op, key);
    }
    op.kind = kind;
    op.device = device_;
    op.stream_id = stream_id;
    SetFresh(op.stream, stream);
    return op;
  }

  // Sets the key of the op just added (Generate's): out of line, so that Add stays small enough
  // for its string copies to be inlined.
  [[gnu::noinline]] static void SetKey(Op& op, Key key) {
    op.key.reserve(key.head.size() + key.tail.size());
    op.key.append(key.head.data(), key.head.size()).append(key.tail.data(), key.tail.size());
  }

  // Sets the group of the op just added (its name and its position in Schedule::groups).
  [[gnu::always_inline]] static void SetGroup(Op& op, const std::string& name, int id) {
    SetFresh(op.group, name);
    op.group_id = id;
  }

  // An op that carries or computes one unit: stage, micro-batch, rows, tokens.
  Op& AddUnitOp(Key key, OpKind kind, std::string_view stream, int stream_id, const UnitPlace& u) {
    Op& op = Add(key, kind, stream, stream_id);
    op.stage = u.stage;
    op.microbatch = u.mb;
    op.rows = u.rows;
    op.tokens = u.tokens;
    return op;
  }

  // A layer compute op of one unit, with the recipe fields of the options.
  Op& AddCompute(Key key, OpKind kind, const UnitPlace& u) {
    Op& op = AddUnitOp(key, kind, "compute", kComputeStream, u);
    op.recompute = RecomputeMode();
    op.sequence_parallel = SequenceParallel();
    return op;
  }

  int64_t ActivationBytes(const UnitPlace& u) const {
    return static_cast<int64_t>(u.rows) * u.tokens.Length() * plan_.options.model.hidden * 2;
  }
  // A stage-boundary tensor: with sequence parallelism each tp rank holds 1 / T of the tokens.
  int64_t BoundaryBytes(const UnitPlace& u) const {
    return SequenceParallel() ? ActivationBytes(u) / plan_.tp : ActivationBytes(u);
  }

  // The stream of a stage-boundary op of `stage`: "send" / "recv", or with boundary_streams
  // "send.f.s{stage}" (activations), "send.b.s{stage}" (gradients), "recv.f..." and
  // "recv.b...". A SEND waits for its RECV to head its stream (a rendezvous), so two devices
  // whose boundaries cross in different orders (the V's two directions, a rank sending on one
  // boundary while its peer receives on another) would deadlock on one shared queue; one queue
  // per boundary and direction carries one stage's micro-batches in the order both ends run
  // them, as PyTorch's asynchronous sends and receives do.
  Name BoundaryStream(const char* kind, bool forward, int stage) const {
    if (!plan_.boundary_streams) return Name(kind);
    return Name(kind, forward ? ".f.s" : ".b.s", stage);
  }
  // Its number (Op::stream_id); `recv` for "recv".
  int BoundaryStreamId(bool recv, bool forward, int stage) const {
    if (!plan_.boundary_streams) return recv ? kRecvStream : kSendStream;
    return kFirstStageStream + 4 * stage + (recv ? 2 : 0) + (forward ? 0 : 1);
  }

  // Whether a unit of `stage` hands its tensor to or from stage `other` across a boundary (a
  // stage that exists, on another pipeline rank).
  bool Crosses(int other) const {
    return other >= 0 && other < plan_.stages && plan_.stage_rank[other] != p_;
  }

  // The tensor a unit's boundary op at layer boundary `layer` carries: "act.l{layer}.{tensor
  // tag}" (forward) or "grad.l...", with each tp rank's own copy across a p2p boundary (its
  // rank suffix; one with a broadcast); Generate's only (GenerateForReplay writes the id alone).
  // The integer of the same identity (Op::tensor_id): (micro-batch, layer, direction, t0) in bit
  // fields that hold their limits (GenerateWith checks them once: micro-batch ids below
  // kMaxBatch = 2^16, layers up to 2^15 - 1, tokens below 2^22), unique on a (sender, receiver)
  // pair as the name is (the pair fixes the tp rank, t0 the slice), so equal ids are equal
  // names. The replay pairs a SEND and a RECV by it.
  static int64_t BoundaryTensorId(const UnitPlace& u, bool forward, int layer) {
    return (int64_t{u.mb} << 38) | (int64_t{layer} << 23) | (int64_t{forward ? 1 : 0} << 22) |
           u.tokens.begin;
  }

  Name BoundaryTensor(const UnitPlace& u, bool forward, int layer) const {
    Name tensor(forward ? "act.l" : "grad.l", layer, '.', u.tensor_tag);
    if (!BroadcastBoundary()) tensor.Append(sfx_);
    return tensor;
  }

  // The RECV (and BROADCAST) bringing a unit's input across the boundary into u.stage from
  // the previous stage (forward) or the next one (backward). Returns the position of the op
  // the compute waits on, or -1 when there is no boundary.
  int Receive(const UnitPlace& u, bool forward) {
    const int from = forward ? u.stage - 1 : u.stage + 1;
    // Consecutive stages on one rank (a V placement) hand over in memory: no boundary op; the
    // compute stream runs the producer first.
    if (!Crosses(from)) return -1;
    const Range& layers = plan_.layers[u.stage];
    const bool broadcast = BroadcastBoundary();
    const int boundary = forward ? layers.begin : layers.end;
    // (GenerateForReplay names no boundary tensor: the replay reads tensor_id.)
    const Name tensor = keys_ == nullptr ? BoundaryTensor(u, forward, boundary) : Name();
    const int stream_id = BoundaryStreamId(true, forward, u.stage);
    const int from_rank = plan_.stage_rank[from];
    int last = -1;
    if (!broadcast || r_ == 0) {
      Op& op = AddUnitOp(Key(forward ? "RF." : "RB.", u.tag_sfx.View()), OpKind::kRecv,
                         BoundaryStream("recv", forward, u.stage).View(), stream_id, u);
      op.peer = plan_.Device(d_, from_rank, broadcast ? 0 : r_);
      if (keys_ == nullptr) SetFresh(op.tensor, tensor.View());
      op.tensor_id = BoundaryTensorId(u, forward, boundary);
      op.bytes = BoundaryBytes(u);
      last = Last();
    }
    if (broadcast) {
      Op& op = AddUnitOp(Key(forward ? "BCF." : "BCB.", u.tag_sfx.View()), OpKind::kBroadcast,
                         BoundaryStream("recv", forward, u.stage).View(), stream_id, u);
      SetGroup(op, tp_group_, tp_group_id_);
      op.peer = plan_.Device(d_, p_, 0);
      if (CollectiveTensors()) SetFresh(op.tensor, tensor.View());
      op.bytes = ActivationBytes(u);
      last = Last();
    }
    return last;
  }

  // The SEND of a unit's output (forward) or input gradient (backward) to the next or
  // previous stage, after the op at position `last` (the compute op that produced it).
  void Send(const UnitPlace& u, bool forward, int last) {
    const int to = forward ? u.stage + 1 : u.stage - 1;
    if (!Crosses(to)) return;  // none, or the same rank: handed over in memory
    const bool broadcast = BroadcastBoundary();
    if (broadcast && r_ != 0) return;
    const Range& layers = plan_.layers[u.stage];
    const int boundary = forward ? layers.end : layers.begin;
    const Name tensor = keys_ == nullptr ? BoundaryTensor(u, forward, boundary) : Name();
    Op& op = AddUnitOp(Key(forward ? "SF." : "SB.", u.tag_sfx.View()), OpKind::kSend,
                       BoundaryStream("send", forward, u.stage).View(),
                       BoundaryStreamId(false, forward, u.stage), u);
    op.peer = plan_.Device(d_, plan_.stage_rank[to], broadcast ? 0 : r_);
    if (keys_ == nullptr) SetFresh(op.tensor, tensor.View());
    op.tensor_id = BoundaryTensorId(u, forward, boundary);
    op.bytes = BoundaryBytes(u);
    After(op, last);
  }

  // A tp collective of one layer part (kind ALLREDUCE, or with sequence parallelism
  // ALLGATHER / REDUCE_SCATTER) on the compute stream; `where` is the part's key after the
  // prefix ("{tag}.l{layer}.{part}{sfx}", as its compute op's), `key_prefix` the key's
  // before it ("ARF." ...). Returns its position.
  int TpCollective(const UnitPlace& u, OpKind kind, std::string_view key_prefix,
                   std::string_view tensor_prefix, int layer, std::string_view part_name,
                   const Name& where) {
    Op& op = AddUnitOp(Key(key_prefix, where.View()), kind, "compute", kComputeStream, u);
    op.layers = {layer, layer + 1};
    SetGroup(op, tp_group_, tp_group_id_);
    if (CollectiveTensors()) {
      op.tensor = Name(tensor_prefix, ".l", layer, '.', part_name, '.', u.tensor_tag).Str();
    }
    op.bytes = ActivationBytes(u);
    return Last();
  }

  // One layer part's compute op and its tp collectives (ALLREDUCE after it; with sequence
  // parallelism an ALLGATHER before and a REDUCE_SCATTER after). `first` is set to the first
  // op of the unit when it is -1 (that op waits on `input`, when >= 0); `wait` (when >= 0) is
  // a further dependency of the compute op. Ops are positions. Returns the last op.
  int Part(const UnitPlace& u, OpKind kind, int layer, LayerPart part, int& first, int input,
           int wait) {
    const PassNames names = NamesOf(kind);
    const std::string_view part_name = LayerPartName(part);
    const bool collectives = plan_.tp > 1 && !names.tp.empty();
    auto is_first = [&](int op) {
      if (first != -1) return false;
      first = op;
      return input >= 0;
    };
    // The key after the prefix, shared by the part's compute op and its tp collectives.
    Name where(u.tag, ".l", layer);
    if (part != LayerPart::kWhole) where.Append('.').Append(part_name);
    where.Append(sfx_);
    if (collectives && SequenceParallel()) {
      const int gather =
          TpCollective(u, OpKind::kAllGather, names.ag, names.tpg, layer, part_name, where);
      if (is_first(gather)) After(ops_[gather], input);
      // Its LayerNorm (run on the sequence shard before the gather) reads the layer's
      // parameters: with ZeRO-3 it waits for their gather too.
      if (wait >= 0) After(ops_[gather], wait);
    }
    Op& op = AddCompute(Key(names.key, where.View()), kind, u);
    op.layers = {layer, layer + 1};
    op.part = part;
    if (plan_.tp > 1) SetGroup(op, tp_group_, tp_group_id_);
    const int compute = Last();
    if (is_first(compute)) After(op, input);
    if (wait >= 0) After(op, wait);
    if (!collectives) return compute;
    if (SequenceParallel()) {
      return TpCollective(u, OpKind::kReduceScatter, names.rs, names.tps, layer, part_name, where);
    }
    return TpCollective(u, OpKind::kAllReduce, names.ar, names.tp, layer, part_name, where);
  }

  // A unit's name that every data-parallel replica shares (its local micro-batch id), for the
  // identities of dp collectives, which every member issues alike: "u{local}.t{t0}-{t1}".
  Name ReplicaName(const UnitPlace& u) const {
    return Name('u', u.mb - d_ * plan_.Microbatches(), ".t", u.tokens.begin, '-', u.tokens.end);
  }

  // ZeRO-3: the all-gather of layer `layer`'s parameters for one unit's `tag` pass ("F"
  // forward, "B" backward and its recomputation), on the `zero` stream. It waits for the
  // compute op two layers back (position `two_back`, when >= 0): one layer in use, one
  // prefetched. Returns its position.
  int GatherParams(const UnitPlace& u, const char* tag, int layer, int two_back) {
    Op& op = AddUnitOp(Name("AGP", tag, '.', u.tag, ".l", layer, sfx_).View(), OpKind::kAllGather,
                       "zero", kZeroStream, u);
    op.layers = {layer, layer + 1};
    SetGroup(op, dp_group_, dp_group_id_);
    if (CollectiveTensors()) {
      op.tensor = Name("param.l", layer, '.', tag, '.', ReplicaName(u), ".r", r_).Str();
    }
    op.bytes = LayerParamBytes();
    if (two_back >= 0) After(op, two_back);
    return Last();
  }

  // ZeRO-3: the reduce-scatter of layer `layer`'s weight gradients of one unit, after the op at
  // position `last`. Returns its position.
  int ScatterGradients(const UnitPlace& u, int layer, int last) {
    Op& op = AddUnitOp(Name("RSG.", u.tag, ".l", layer, sfx_).View(), OpKind::kReduceScatter, "dp",
                       kDpStream, u);
    op.layers = {layer, layer + 1};
    SetGroup(op, dp_group_, dp_group_id_);
    if (CollectiveTensors())
      op.tensor = Name("wgrad.l", layer, '.', ReplicaName(u), ".r", r_).Str();
    op.bytes = LayerParamBytes();
    After(op, last);
    return Last();
  }

  // The layer math of one unit for `kind`, after the op at position `input` (-1: none).
  // Returns the positions of {the op whose output crosses the boundary, the op after which the
  // unit's weight gradients are complete (with tp > 1 the last tp collective, not the last
  // compute op; with ZeRO-3 the last gradient reduce-scatter)}.
  std::pair<int, int> Compute(const UnitPlace& u, OpKind kind, int input) {
    const Range& layers = plan_.layers[u.stage];
    const PassNames names = NamesOf(kind);
    const bool forward = kind == OpKind::kFwd;
    const bool recompute =
        RecomputeMode() == Recompute::kFull && (kind == OpKind::kBwd || kind == OpKind::kBwdInput);
    if (!PerLayer()) {
      if (recompute) {
        // The stage's forward again before its backward (layer by layer inside the op pair).
        Op& r = AddCompute(Name("R.", u.tag).View(), OpKind::kRecompute, u);
        r.layers = layers;
      }
      Op& op = AddCompute(Key(names.key, u.tag.View()), kind, u);
      op.layers = layers;
      if (input >= 0) After(op, input);
      return {Last(), Last()};
    }
    const bool zero3 = Zero() == 3;
    const bool whole = plan_.tp == 1;
    const LayerPart first_part = whole ? LayerPart::kWhole : LayerPart::kAttention;
    int first = -1;
    int last = -1;
    // The last compute op of the previous layer and of the one before (-1 until there).
    int one_back = -1;
    int two_back = -1;
    auto finish_layer = [&] {
      two_back = one_back;
      one_back = last;
    };
    if (forward) {
      for (int l = layers.begin; l < layers.end; ++l) {
        const int gather = zero3 ? GatherParams(u, "F", l, two_back) : -1;
        last = Part(u, kind, l, first_part, first, input, gather);
        if (!whole) last = Part(u, kind, l, LayerPart::kMlp, first, input, -1);
        finish_layer();
      }
      return {last, last};
    }
    int weights_done = -1;
    for (int l = layers.end - 1; l >= layers.begin; --l) {
      const bool gather_needed = zero3 && kind != OpKind::kBwdWeight;
      const int gather = gather_needed ? GatherParams(u, "B", l, two_back) : -1;
      if (recompute) {
        // Megatron's full recomputation: the layer's forward again, just before its backward.
        // It needs no input gradient, so it does not wait for the boundary.
        int not_first = -2;
        Part(u, OpKind::kRecompute, l, first_part, not_first, -1, gather);
        if (!whole) Part(u, OpKind::kRecompute, l, LayerPart::kMlp, not_first, -1, -1);
      }
      if (!whole) Part(u, kind, l, LayerPart::kMlp, first, input, recompute ? -1 : gather);
      last = Part(u, kind, l, first_part, first, input, (recompute || !whole) ? -1 : gather);
      finish_layer();
      if (kind != OpKind::kBwdInput) layer_done_[l] = last;
      if (zero3 && kind != OpKind::kBwdInput) {
        weights_done = ScatterGradients(u, l, last);
      }
    }
    // The input gradient leaves after the last tp collective; so do the weight gradients: the
    // LayerNorm (and, at layer 0, embedding) gradients are complete only after the finish
    // that follows the last tp all-reduce, so the dp all-reduce waits for it.
    return {last, weights_done < 0 ? last : weights_done};
  }

  // A unit's forward, backward or deferred weight gradients (one whose input gradients already
  // ran). Each returns the position of the op after which its weight gradients are complete.
  int Forward(const UnitPlace& u) {
    const int input = Receive(u, true);
    auto [out, last] = Compute(u, OpKind::kFwd, input);
    Send(u, true, out);
    return last;
  }

  int Backward(const UnitPlace& u, OpKind kind) {
    const int input = Receive(u, false);
    auto [out, last] = Compute(u, kind, input);
    Send(u, false, out);
    return last;
  }

  int Weight(const UnitPlace& u) { return Compute(u, OpKind::kBwdWeight, -1).second; }

  // Sequence parallelism: each tp rank computed the gradients of the replicated parameters
  // (LayerNorms, row-parallel biases, embedding, head) from its own token rows; their tp sum
  // (Megatron-LM's all-reduce of the sequence-parallel gradients), after `after` (the stage's
  // last backward; bucketed: also its last bucket, on the "dp" stream, as Megatron-LM sums them
  // after the dp reduction). Ops are positions; returns its position.
  int SequenceParallelGradients(int stage, std::initializer_list<int> after, const char* stream,
                                int stream_id) {
    const Range& layers = plan_.layers[stage];
    Op& op =
        Add(fmt::format("ARSP.s{}.d{}{}", stage, d_, Sfx()), OpKind::kAllReduce, stream, stream_id);
    op.stage = stage;
    op.layers = layers;
    SetGroup(op, tp_group_, tp_group_id_);
    if (CollectiveTensors()) op.tensor = fmt::format("spgrad.s{}.d{}", stage, d_);
    const ModelCard& m = plan_.options.model;
    // fp16: four LayerNorm vectors and two biases of `hidden` per layer.
    op.bytes = 2 * int64_t{6} * m.hidden * layers.Length();
    for (int dep : after) After(op, dep);
    return Last();
  }

  // The weight-gradient step of `stage` after its last backward op `last` (with tp > 1 the
  // stage's last backward tp collective, see Compute()). Returns what its OPTIMIZER waits for;
  // kFlattened only notes `last` in `flattened` (FlattenedStep emits the reduction later). Ops
  // are positions.
  std::vector<int> StageGradients(int stage, int last, std::vector<int>& flattened) {
    const DpStep mode = Mode();
    if (mode == DpStep::kBucketed) {
      std::vector<int> keys = Buckets(stage);
      if (SequenceParallel()) {
        keys.push_back(SequenceParallelGradients(stage, {last, keys.back()}, "dp", kDpStream));
      }
      return keys;
    }
    if (SequenceParallel())
      last = SequenceParallelGradients(stage, {last}, "compute", kComputeStream);
    if (plan_.dp == 1) {
      if (SequenceParallel()) return {last};
      return {};
    }
    if (mode == DpStep::kFlattened) {
      flattened.push_back(last);
      return {};
    }
    return {DataParallel(stage, last)};
  }

  // TeraPipe's flattened step: once every stage of the replica has ended its backward (a
  // barrier over the replica's devices after this device's last gradient op, when the replica
  // has more than one device), each of this device's stages all-reduces its whole gradient.
  void FlattenedStep(const std::vector<int>& stages, const std::vector<int>& last,
                     std::vector<std::vector<int>>& dp_keys) {
    int barrier = -1;
    if (plan_.pp * plan_.tp > 1 && !last.empty()) {
      Op& op =
          Add(fmt::format("BAR.p{}.d{}{}", p_, d_, Sfx()), OpKind::kAllReduce, "dp", kDpStream);
      SetGroup(op, plan_.ReplicaGroup(d_), plan_.ReplicaGroupId(d_));
      if (CollectiveTensors()) op.tensor = fmt::format("barrier.d{}", d_);
      op.bytes = kBarrierBytes;
      for (int dep : last) After(op, dep);
      barrier = Last();
    }
    for (size_t i = 0; i < stages.size(); ++i) {
      dp_keys[i] = {DataParallel(stages[i], last[i], barrier)};
    }
  }

  // DDP's buckets of `stage`: whole layers from the last down, a bucket closed once it holds
  // dp_bucket_bytes or more; each ALLREDUCE ("DP.s.d.b{k}", tensor "wgrad.s{S}.b{k}.r{tp}",
  // layers its own) waits for the last backward of its lowest layer (the compute stream ran
  // the layers above it before).
  std::vector<int> Buckets(int stage) {
    std::vector<int> keys;
    for (const Range& bucket : BucketLayers(stage)) {
      const int k = static_cast<int>(keys.size());
      Op& op = Add(fmt::format("DP.s{}.d{}.b{}{}", stage, d_, k, Sfx()), OpKind::kAllReduce, "dp",
                   kDpStream);
      op.stage = stage;
      op.layers = bucket;
      SetGroup(op, dp_group_, dp_group_id_);
      if (CollectiveTensors()) op.tensor = fmt::format("wgrad.s{}.b{}.r{}", stage, k, r_);
      op.bytes = LayersGradientBytes(bucket.Length());
      const int done = layer_done_[bucket.begin];
      TERASIM_CHECK(done >= 0, "bucket of layer {}: no backward before it", bucket.begin);
      After(op, done);
      keys.push_back(Last());
    }
    return keys;
  }

  // The layers of `stage`'s buckets, from the last layer down.
  std::vector<Range> BucketLayers(int stage) const {
    const Range& layers = plan_.layers[stage];
    const int64_t cap = plan_.options.dp_bucket_bytes;
    std::vector<Range> out;
    for (int top = layers.end; top > layers.begin;) {
      int bottom = top;
      while (bottom > layers.begin && LayersGradientBytes(top - bottom) < cap) --bottom;
      out.push_back({bottom, top});
      top = bottom;
    }
    return out;
  }

  // The data-parallel reduction of `stage`'s weight gradients after the op at position `last`
  // (and `barrier`, when >= 0): an ALLREDUCE, with ZeRO-1 and 2 a REDUCE_SCATTER (each replica
  // updates its shard), with ZeRO-3 nothing more (the per-layer reduce-scatters did it; the
  // optimizer waits for the last of them). Returns the position of the op the optimizer waits on.
  int DataParallel(int stage, int last, int barrier = -1) {
    if (Zero() == 3) return last;
    const bool scatter = Zero() > 0;
    Op& op = Add(fmt::format("{}.s{}.d{}{}", scatter ? "RS" : "DP", stage, d_, Sfx()),
                 scatter ? OpKind::kReduceScatter : OpKind::kAllReduce, "dp", kDpStream);
    op.stage = stage;
    op.layers = plan_.layers[stage];
    SetGroup(op, dp_group_, dp_group_id_);
    if (CollectiveTensors()) op.tensor = fmt::format("wgrad.s{}.r{}", stage, r_);
    op.bytes = StageGradientBytes(stage);
    After(op, last);
    if (barrier >= 0) After(op, barrier);
    return Last();
  }

  const Plan& plan_;
  const int d_, p_, r_, device_;
  std::vector<Op>& ops_;
  AfterOps& after_;  // the schedule's, filled as the ops are added
  OpKeys* keys_;     // GenerateForReplay's keys, else nullptr
  // Fixed per device: the key suffix (Plan::RankSuffix) and the names of its groups.
  const std::string sfx_, tp_group_, dp_group_;
  const int tp_group_id_, dp_group_id_;  // their positions in Schedule::groups
  // The position of the op after which each layer's weight gradients of the latest backward
  // are complete, per layer of the model (-1: none yet).
  std::vector<int> layer_done_;
};

// An imported order (schedule/torch_csv.h builds one): a rank per pipeline rank, V stages on
// each, every step naming a chunk and micro-batch that exist.
void ValidateImported(const GenerateOptions& o) {
  const int stages = o.pp * o.virtual_stages;
  if (static_cast<int>(o.imported_steps.size()) != o.pp) {
    ThrowInput("imported order: {} ranks, but --pp is {}", o.imported_steps.size(), o.pp);
  }
  if (static_cast<int>(o.stage_ranks.size()) != stages) {
    ThrowInput("imported order: {} stages, but P x V = {}", o.stage_ranks.size(), stages);
  }
  std::vector<int> per_rank(o.pp, 0);
  for (int vs = 0; vs < stages; ++vs) {
    const int r = o.stage_ranks[vs];
    if (r < 0 || r >= o.pp) ThrowInput("imported order: stage {} on rank {} of {}", vs, r, o.pp);
    ++per_rank[r];
  }
  for (int r = 0; r < o.pp; ++r) {
    if (per_rank[r] != o.virtual_stages) {
      ThrowInput("imported order: rank {} holds {} stages, every rank must hold {}", r, per_rank[r],
                 o.virtual_stages);
    }
    for (const PipelineStep& step : o.imported_steps[r]) {
      if (step.chunk < 0 || step.chunk >= o.virtual_stages || step.microbatch < 0 ||
          step.microbatch >= o.microbatches || step.slice != 0) {
        ThrowInput("imported order: rank {}: a step names chunk {} micro-batch {} of {} x {}", r,
                   step.chunk, step.microbatch, o.virtual_stages, o.microbatches);
      }
    }
  }
}

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
  if (o.zero < 0 || o.zero > 3) ThrowInput("--zero {}: must be 0, 1, 2 or 3", o.zero);
  if (o.dp_bucket_bytes < 1) {
    ThrowInput("--dp-bucket-mb: the bucket of {} bytes must be >= 1 byte", o.dp_bucket_bytes);
  }
  if (o.zero > 0 && o.dp < 2) {
    ThrowInput("--zero {} needs --dp >= 2 (it shards over the data-parallel group)", o.zero);
  }
  if (o.sequence_parallel && o.tp < 2) {
    ThrowInput("--sequence-parallel needs --tp >= 2 (it shards over the tp group)");
  }
  if (o.sequence_parallel && o.boundary == Boundary::kBroadcast) {
    ThrowInput("--sequence-parallel needs --boundary p2p (each tp rank holds its own tokens)");
  }
  if (o.backward_in_forward_order && o.strategy != Strategy::kGpipe) {
    ThrowInput("--backward-order forward is only for --strategy gpipe (not {})",
               StrategyName(o.strategy));
  }
  const bool interleaved =
      o.strategy == Strategy::kInterleaved || o.strategy == Strategy::kInterleavedZb;
  const bool v_shape = o.strategy == Strategy::kZbV || o.strategy == Strategy::kDualPipeV;
  const bool chunked =
      interleaved || o.strategy == Strategy::kLoopedBfs || o.strategy == Strategy::kImported;
  if (o.strategy == Strategy::kImported) ValidateImported(o);
  if (o.representatives_only &&
      (o.representative_tp_ranks < 1 || o.tp % o.representative_tp_ranks != 0)) {
    ThrowInput("representative tp ranks {}: must divide --tp {}", o.representative_tp_ranks, o.tp);
  }
  if (o.representatives_only && !o.representative_tp_set.empty()) {
    const std::vector<int>& set = o.representative_tp_set;
    bool valid = set.front() == 0 && static_cast<int>(set.size()) < o.tp;
    for (size_t k = 1; k < set.size(); ++k) valid = valid && set[k - 1] < set[k];
    if (!valid || set.back() >= o.tp) {
      ThrowInput("representative tp ranks {}: must ascend from 0 below --tp {}, fewer than {}",
                 fmt::join(set, ","), o.tp, o.tp);
    }
  }
  if (v_shape && o.virtual_stages != 2) {
    ThrowInput("--virtual-stages {}: --strategy {} places exactly 2 stages per device (a V)",
               o.virtual_stages, StrategyName(o.strategy));
  }
  if (o.virtual_stages > 1 && !chunked && !v_shape) {
    ThrowInput(
        "--virtual-stages {} needs --strategy interleaved, interleaved-zb or looped-bfs (not {})",
        o.virtual_stages, StrategyName(o.strategy));
  }
  if (o.strategy == Strategy::kDualPipeV && !DualPipeVSupports(o.pp, o.microbatches)) {
    ThrowInput("--microbatches {} with --pp {}: dualpipe-v needs M >= 2 P = {} (PyTorch's rule)",
               o.microbatches, o.pp, 2 * o.pp);
  }
  if (interleaved) {
    const char* name =
        o.strategy == Strategy::kInterleaved ? "interleaved 1F1B" : "interleaved zero bubble";
    if (o.virtual_stages > 1 && o.pp < 2) {
      ThrowInput("--virtual-stages {} needs --pp >= 2 ({})", o.virtual_stages, name);
    }
    if (!InterleavedSupports(o.pp, o.microbatches)) {
      ThrowInput(
          "--microbatches {} with --pp {}: {} runs floor(M / P) = {} rounds of equal size "
          "(PyTorch's rule), which must divide M",
          o.microbatches, o.pp, name, InterleavedRounds(o.pp, o.microbatches));
    }
  }
  if (o.pp * o.virtual_stages > m.layers) {
    if (o.virtual_stages == 1) ThrowInput("--pp {} exceeds {} layers", o.pp, m.layers);
    ThrowInput("--pp {} x --virtual-stages {} = {} stages exceed {} layers", o.pp, o.virtual_stages,
               o.pp * o.virtual_stages, m.layers);
  }
}

// What GenerateOptions::representatives_only declares: the replica shift with dp >= 2; the tp
// rotation with T >= 2 unless the boundary is a broadcast from tp rank 0 (rank 0 then runs
// RECVs the others do not) or every tp rank is asked for.
DeclaredSymmetry DeclareSymmetry(const GenerateOptions& o) {
  DeclaredSymmetry symmetry;
  if (!o.representatives_only) return symmetry;
  if (o.dp > 1) symmetry.replica_block = o.pp * o.tp;
  if (o.tp > 1 && o.boundary == Boundary::kPointToPoint && o.representative_tp_ranks < o.tp) {
    symmetry.tp = o.tp;
    symmetry.tp_ranks = o.representative_tp_ranks;
  }
  if (o.tp > 1 && o.boundary == Boundary::kPointToPoint && !o.representative_tp_set.empty()) {
    symmetry.tp = o.tp;
    symmetry.tp_set = o.representative_tp_set;
    symmetry.tp_ranks = static_cast<int>(o.representative_tp_set.size());
  }
  symmetry.representatives_only = symmetry.replica_block > 0 || symmetry.tp > 1;
  return symmetry;
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
    case Strategy::kZbH1:
      return "zb-h1";
    case Strategy::kZbH2:
      return "zb-h2";
    case Strategy::kLoopedBfs:
      return "looped-bfs";
    case Strategy::kInterleavedZb:
      return "interleaved-zb";
    case Strategy::kZbV:
      return "zb-v";
    case Strategy::kDualPipeV:
      return "dualpipe-v";
    case Strategy::kImported:
      return "imported";
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
  for (Strategy s : {Strategy::kGpipe, Strategy::kOneFOneB, Strategy::kInterleaved,
                     Strategy::kTeraPipe, Strategy::kZbH1, Strategy::kZbH2, Strategy::kLoopedBfs,
                     Strategy::kInterleavedZb, Strategy::kZbV, Strategy::kDualPipeV}) {
    if (text == StrategyName(s)) return s;
  }
  ThrowInput(
      "{}: '{}' must be one of gpipe, 1f1b, interleaved, terapipe, zb-h1, zb-h2, looped-bfs, "
      "interleaved-zb, zb-v, dualpipe-v",
      flag, text);
}

SliceOrder ParseSliceOrder(const std::string& text, const std::string& flag) {
  if (text == "flush") return SliceOrder::kFlush;
  if (text == "1f1b") return SliceOrder::kOneFOneB;
  ThrowInput("{}: '{}' must be one of flush, 1f1b", flag, text);
}

std::string DpStepName(DpStep step) {
  switch (step) {
    case DpStep::kAuto:
      return "auto";
    case DpStep::kPerStage:
      return "per-stage";
    case DpStep::kFlattened:
      return "flattened";
    case DpStep::kBucketed:
      return "bucketed";
  }
  return "?";
}

DpStep DefaultDpStep(Strategy strategy) {
  return strategy == Strategy::kTeraPipe || strategy == Strategy::kGpipe ? DpStep::kFlattened
                                                                         : DpStep::kBucketed;
}

DpStep ResolvedDpStep(const GenerateOptions& options) {
  return options.dp_step == DpStep::kAuto ? DefaultDpStep(options.strategy) : options.dp_step;
}

DpStep ParseDpStep(const std::string& text, const std::string& flag) {
  for (DpStep step : {DpStep::kAuto, DpStep::kPerStage, DpStep::kFlattened, DpStep::kBucketed}) {
    if (text == DpStepName(step)) return step;
  }
  ThrowInput("{}: '{}' must be one of auto, per-stage, flattened, bucketed", flag, text);
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

namespace {

// Generate, or GenerateForReplay with `keys`.
Schedule GenerateWith(const GenerateOptions& options, OpKeys* keys) {
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
            {},
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

  if (options.strategy == Strategy::kImported) {
    plan.stage_rank = options.stage_ranks;
  } else if (options.strategy == Strategy::kZbV || options.strategy == Strategy::kDualPipeV) {
    for (int vs = 0; vs < plan.stages; ++vs) plan.stage_rank.push_back(VShapeRank(plan.pp, vs));
  } else {
    for (int vs = 0; vs < plan.stages; ++vs) plan.stage_rank.push_back(vs % plan.pp);
  }
  // The bit fields of Op::tensor_id (BoundaryTensorId) hold every micro-batch id, layer and
  // token of the plan (the limits of models/limits.h, checked on the options and the model).
  TERASIM_CHECK(int64_t{plan.dp} * plan.Microbatches() <= (int64_t{1} << 16) &&
                    options.model.layers < (1 << 15) && options.model.sequence <= (1 << 22),
                "tensor ids: {} micro-batches, {} layers, {} tokens",
                int64_t{plan.dp} * plan.Microbatches(), options.model.layers,
                options.model.sequence);
  plan.boundary_streams =
      options.strategy == Strategy::kInterleavedZb || options.strategy == Strategy::kZbV ||
      options.strategy == Strategy::kDualPipeV || options.strategy == Strategy::kImported;
  plan.rank_stages.assign(plan.pp, {});
  for (int vs = 0; vs < plan.stages; ++vs) plan.rank_stages[plan.stage_rank[vs]].push_back(vs);

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
    if (ResolvedDpStep(options) == DpStep::kFlattened && options.zero != 3 &&
        plan.pp * plan.tp > 1) {
      for (int d = 0; d < plan.dp; ++d) {
        Group g{plan.ReplicaGroup(d), {}, 0};
        for (int i = 0; i < plan.pp * plan.tp; ++i) g.ranks.push_back(d * plan.pp * plan.tp + i);
        s.groups.push_back(std::move(g));
      }
    }
  }

  std::vector<std::vector<PipelineStep>> steps(plan.pp);
  for (int p = 0; p < plan.pp; ++p) {
    switch (options.strategy) {
      case Strategy::kGpipe:
        steps[p] = FlushOrder(plan.slices_per_microbatch, options.backward_in_forward_order);
        break;
      case Strategy::kZbH1:
      case Strategy::kZbH2:
        steps[p] =
            ZeroBubbleOrder(options.strategy == Strategy::kZbH1 ? ZeroBubble::kH1 : ZeroBubble::kH2,
                            plan.pp, p, plan.Microbatches());
        break;
      case Strategy::kLoopedBfs:
        steps[p] = LoopedBfsOrder(plan.virtual_stages, plan.Microbatches());
        break;
      case Strategy::kInterleavedZb:
        steps[p] = InterleavedZeroBubbleOrder(plan.pp, plan.virtual_stages, p, plan.Microbatches());
        break;
      case Strategy::kZbV:
        steps[p] = ZbvOrder(plan.pp, p, plan.Microbatches());
        break;
      case Strategy::kDualPipeV:
        steps[p] = DualPipeVOrder(plan.pp, p, plan.Microbatches());
        break;
      case Strategy::kImported:
        steps[p] = options.imported_steps[p];
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
  s.symmetry = DeclareSymmetry(options);
  // Sized once: a bound per pipeline rank and boundary role (tp rank 0 or not), summed over
  // the devices written.
  std::vector<size_t> max_ops(2 * plan.pp, 0);
  size_t reserve = 0;
  for (int d = 0; d < plan.dp; ++d) {
    for (int p = 0; p < plan.pp; ++p) {
      for (int r = 0; r < plan.tp; ++r) {
        if (!s.symmetry.Present(plan.Device(d, p, r))) continue;
        size_t& bound = max_ops[2 * p + (r == 0 ? 0 : 1)];
        if (bound == 0) {
          bound = DeviceEmitter(plan, d, p, r, s.ops, s.after_ops).MaxOps(steps[p]);
        }
        reserve += bound;
      }
    }
  }
  // In huge pages (a hint): the ops of a 1T schedule are some 200 MB, faulted in 4 kB pages
  // otherwise.
  ReserveHuge(s.ops, reserve);
  ReserveHuge(s.after_ops.begin, reserve + 1);
  // Keys of the 1T configuration are some 32 characters.
  if (keys != nullptr) keys->Reserve(reserve, 40 * reserve);
  // Device by device (rank order: replica, pipeline rank, tp rank), each in issue order.
  for (int d = 0; d < plan.dp; ++d) {
    for (int p = 0; p < plan.pp; ++p) {
      for (int r = 0; r < plan.tp; ++r) {
        if (s.symmetry.Present(plan.Device(d, p, r))) {
          DeviceEmitter(plan, d, p, r, s.ops, s.after_ops, keys).Emit(steps[p]);
        }
      }
    }
  }
  s.after_ops.begin.push_back(static_cast<int>(s.after_ops.op.size()));
  return s;
}

}  // namespace

Schedule Generate(const GenerateOptions& options) { return GenerateWith(options, nullptr); }

void OpKeys::Reserve(size_t keys, size_t chars) {
  if (chars > capacity_) {
    Grow(chars);
    AdviseHugePages(chars_.get() + size_, capacity_ - size_);
  }
  ReserveHuge(end_, keys);
}

void OpKeys::Grow(size_t chars) {
  const size_t capacity = std::max(chars, 2 * capacity_);
  std::unique_ptr<char[]> grown(new char[capacity]);
  if (size_ > 0) std::memcpy(grown.get(), chars_.get(), size_);
  chars_ = std::move(grown);
  capacity_ = capacity;
}

Schedule GenerateForReplay(const GenerateOptions& options, OpKeys* keys) {
  return GenerateWith(options, keys);
}

}  // namespace terasim

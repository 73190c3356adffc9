#include "schedule/data_flow.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <numeric>
#include <span>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "schedule/dry_run.h"
#include "schedule/key_fields.h"

namespace terasim {
namespace {

// What an op reads or writes on its device. Store tensors (act, grad, tp partial sums, opaque
// identities) as the executor's tensor store holds them; the rest is back-end state: a block's
// finished forward / backward, and the keys and values (forward) or their gradients (backward)
// that a token slice leaves for the next one.
enum class Res : uint8_t {
  kAct,
  kGrad,
  kTpSumF,  // tpf.l.part.m.t: a split block's forward partial output
  kTpSumB,  // tpb...
  kFinF,    // layer `layer` part `part` forward of (mb, [a, b)) finished
  kFinB,    // its backward finished
  kCtxF,    // keys and values of layer `layer`, micro-batch mb, for the slice ending at a
  kCtxB,    // their gradients, for the slice starting at a
  kKept,    // the input of layer `layer` for (mb, [a, b)) kept by a recompute=full forward
  kFinR,    // layer `layer` part `part` forward of (mb, [a, b)) rebuilt by its RECOMPUTE
  kTpSumR,  // tpr.l.part.m.t: a split RECOMPUTE's partial output (sp: tprs)
  kSpInR,   // tprg...: a sequence-parallel RECOMPUTE's gathered input
  kSpInF,   // tpfg.l.part.m.t: a sequence-parallel block's gathered forward input
  kSpInB,   // tpbg...: its gathered output gradient
  kParams,  // ZeRO-3: layer `layer`'s parameters gathered for (mb, [a, b)), part 0 forward, 1
            // backward (param.l{L}.{F|B}*)
  kStep,    // ZeRO-1 / 2: the optimizer step of stage `layer` done (what step.s* gathers)
  kOpaque,  // any other tensor identity (a = interned id)
};

struct Key {
  int device = 0;
  Res kind = Res::kOpaque;
  int part = 0;  // LayerPart as int
  int layer = -1;
  int mb = -1;
  int a = 0;
  int b = 0;
  bool sp = false;  // kTpSumF / B / R: sequence parallelism's tpfs / tpbs / tprs (scattered)
  bool operator==(const Key&) const = default;
};

// A key in three words, for hashing and comparing writes: equal words are equal keys (the
// device aside, which the writes of one device share).
struct PackedKey {
  uint64_t x = 0;  // kind, part, sp, layer
  uint64_t y = 0;  // mb, a
  uint32_t z = 0;  // b
  bool operator==(const PackedKey&) const = default;
};

PackedKey Pack(const Key& k) {
  PackedKey p;
  p.x = static_cast<uint64_t>(k.kind) | static_cast<uint64_t>(static_cast<uint8_t>(k.part)) << 8 |
        static_cast<uint64_t>(k.sp) << 16 |
        static_cast<uint64_t>(static_cast<uint32_t>(k.layer)) << 32;
  p.y = static_cast<uint32_t>(k.mb) | static_cast<uint64_t>(static_cast<uint32_t>(k.a)) << 32;
  p.z = static_cast<uint32_t>(k.b);
  return p;
}

// One op writing one key. The writes of one device are kept in one array, indexed by key
// (DataFlow::IndexWrites), so that a million-op schedule costs a few allocations rather than
// a hash node and a vector per key.
struct Written {
  PackedKey key;
  int op = 0;
};

constexpr int kAttn = static_cast<int>(LayerPart::kAttention);
constexpr int kMlp = static_cast<int>(LayerPart::kMlp);

bool Tokens(std::string_view field, int& a, int& b) {
  if (field.size() < 4 || field[0] != 't') return false;
  const size_t dash = field.find('-');
  if (dash == std::string_view::npos) return false;
  auto r1 = std::from_chars(field.data() + 1, field.data() + dash, a);
  auto r2 = std::from_chars(field.data() + dash + 1, field.data() + field.size(), b);
  return r1.ec == std::errc() && r1.ptr == field.data() + dash && r2.ec == std::errc() &&
         r2.ptr == field.data() + field.size();
}

// The fields of a dotted name between its dots, as SplitDots (schedule/key_fields.h) splits
// them, without allocating: the first six are held, size() counts all.
class Dots {
 public:
  explicit Dots(std::string_view text) {
    size_t start = 0;
    while (true) {
      const size_t dot = text.find('.', start);
      const std::string_view part =
          text.substr(start, dot == std::string_view::npos ? dot : dot - start);
      if (count_ < parts_.size()) parts_[count_] = part;
      ++count_;
      if (dot == std::string_view::npos) return;
      start = dot + 1;
    }
  }
  size_t size() const { return count_; }
  // Field `i` < min(size(), 6).
  std::string_view operator[](size_t i) const { return parts_[i]; }

 private:
  std::array<std::string_view, 6> parts_;
  size_t count_ = 0;
};

// A tensor identity as the executor reads it (exec/tensor_id.cpp: the same grammar).
struct Tensor {
  Key key;               // device left 0
  int wgrad_stage = -1;  // wgrad.s{S}... and spgrad.s{S}...: the stage
  bool spgrad = false;   // spgrad.s{S}: the tp sum of sequence parallelism's gradient parts
  int wgrad_layer = -1;  // ZeRO-3's wgrad.l{L}...: the layer
  bool bucket = false;   // wgrad.s{S}.b{k}.r{tp}: a dp bucket of the op's layers of stage S
  bool barrier = false;  // barrier.*: the flattened dp step's barrier (moves no tensor)
};

class Tensors {
 public:
  // `id` is the name id of `text`.
  Tensor Parse(int id, std::string_view text) {
    Tensor t;
    const Dots f(text);
    if ((f[0] == "act" || f[0] == "grad") && (f.size() == 4 || f.size() == 5)) {
      Key k;
      k.kind = f[0] == "act" ? Res::kAct : Res::kGrad;
      int copy = 0;
      if (ParseTagged(f[1], 'l', k.layer) && ParseTagged(f[2], 'm', k.mb) &&
          Tokens(f[3], k.a, k.b) && (f.size() == 4 || ParseTagged(f[4], 'r', copy))) {
        t.key = k;
        return t;
      }
    } else if ((f[0] == "tpf" || f[0] == "tpb" || f[0] == "tpr" || f[0] == "tpfs" ||
                f[0] == "tpbs" || f[0] == "tprs" || f[0] == "tpfg" || f[0] == "tpbg" ||
                f[0] == "tprg") &&
               f.size() == 5 && (f[2] == "attn" || f[2] == "mlp")) {
      Key k;
      const char pass = f[0][2];  // 'f', 'b' or 'r' (the recomputed forward)
      if (f[0].size() == 4 && f[0][3] == 'g') {
        k.kind = pass == 'b' ? Res::kSpInB : pass == 'r' ? Res::kSpInR : Res::kSpInF;
      } else {
        k.kind = pass == 'b' ? Res::kTpSumB : pass == 'r' ? Res::kTpSumR : Res::kTpSumF;
        k.sp = f[0].size() == 4;
      }
      k.part = f[2] == "attn" ? kAttn : kMlp;
      if (ParseTagged(f[1], 'l', k.layer) && ParseTagged(f[3], 'm', k.mb) &&
          Tokens(f[4], k.a, k.b)) {
        t.key = k;
        return t;
      }
    } else if ((f[0] == "wgrad" || f[0] == "spgrad") && f.size() >= 2) {
      int stage = -1;
      int layer = -1;
      if (ParseTagged(f[1], 's', stage)) t.wgrad_stage = stage;
      if (f[0] == "wgrad" && ParseTagged(f[1], 'l', layer)) t.wgrad_layer = layer;
      int bucket = -1;
      t.bucket = f[0] == "wgrad" && f.size() == 4 && ParseTagged(f[2], 'b', bucket);
      t.spgrad = f[0] == "spgrad";
    } else if (f[0] == "barrier") {
      t.barrier = true;
    } else if (f[0] == "param" && f.size() == 6 && (f[2] == "F" || f[2] == "B")) {
      Key k;  // the unit: from the op
      k.kind = Res::kParams;
      k.part = f[2] == "B";
      if (ParseTagged(f[1], 'l', k.layer)) {
        t.key = k;
        return t;
      }
    } else if (f[0] == "step" && f.size() == 3) {
      Key k;
      k.kind = Res::kStep;
      if (ParseTagged(f[1], 's', k.layer)) {
        t.key = k;
        return t;
      }
    }
    auto [it, inserted] = opaque_.emplace(id, static_cast<int>(opaque_.size()));
    t.key.kind = Res::kOpaque;
    t.key.a = it->second;
    if (inserted) names_.push_back(text);
    return t;
  }
  std::string_view Name(int id) const { return names_[id]; }

 private:
  std::unordered_map<int, int> opaque_;  // tensor name id -> opaque id
  std::vector<std::string_view> names_;  // views into the schedule's NamePool
};

std::string PartWord(int part) { return part == kMlp ? "mlp" : "attn"; }

std::string Describe(const Key& k, const Tensors& tensors) {
  switch (k.kind) {
    case Res::kAct:
      return fmt::format("act.l{}.m{}.t{}-{}", k.layer, k.mb, k.a, k.b);
    case Res::kGrad:
      return fmt::format("grad.l{}.m{}.t{}-{}", k.layer, k.mb, k.a, k.b);
    case Res::kTpSumF:
    case Res::kTpSumB:
    case Res::kTpSumR:
    case Res::kSpInF:
    case Res::kSpInB:
    case Res::kSpInR: {
      const bool backward = k.kind == Res::kTpSumB || k.kind == Res::kSpInB;
      const bool recompute = k.kind == Res::kTpSumR || k.kind == Res::kSpInR;
      const bool gathered = k.kind == Res::kSpInF || k.kind == Res::kSpInB || k.kind == Res::kSpInR;
      return fmt::format("tp{}{}.l{}.{}.m{}.t{}-{}", backward ? 'b' : (recompute ? 'r' : 'f'),
                         gathered ? "g" : (k.sp ? "s" : ""), k.layer, PartWord(k.part), k.mb, k.a,
                         k.b);
    }
    case Res::kParams:
      return fmt::format(
          "the parameters of layer {} gathered for the {} of micro-batch {}, "
          "tokens {}-{} (ZeRO-3)",
          k.layer, k.part ? "backward" : "forward", k.mb, k.a, k.b);
    case Res::kStep:
      return fmt::format("the optimizer step of stage {}", k.layer);
    case Res::kFinF:
    case Res::kFinB:
      return fmt::format("the finished {} of layer {} {} (micro-batch {}, tokens {}-{})",
                         k.kind == Res::kFinF ? "forward" : "backward", k.layer, PartWord(k.part),
                         k.mb, k.a, k.b);
    case Res::kCtxF:
      return fmt::format("the keys and values of layer {}, micro-batch {}, up to token {}", k.layer,
                         k.mb, k.a);
    case Res::kCtxB:
      return fmt::format("the key/value gradients of layer {}, micro-batch {}, from token {}",
                         k.layer, k.mb, k.a);
    case Res::kFinR:
      return fmt::format(
          "the finished forward of layer {} {} rebuilt by its RECOMPUTE (micro-batch {}, "
          "tokens {}-{})",
          k.layer, PartWord(k.part), k.mb, k.a, k.b);
    case Res::kKept:
      return fmt::format(
          "the input of layer {} kept for recomputation (micro-batch {}, tokens {}-{})", k.layer,
          k.mb, k.a, k.b);
    case Res::kOpaque:
      return std::string(tensors.Name(k.a));
  }
  return "?";
}

bool IsBackwardOp(const CompactOp& op, const Tensor& t) {
  return (IsLayerCompute(op.kind) && op.kind != OpKind::kFwd) ||
         ((op.kind == OpKind::kAllReduce || op.kind == OpKind::kReduceScatter) &&
          t.key.kind == Res::kTpSumB);
}

// A stage's weight-gradient collective: the dp all-reduce or (ZeRO-1 / 2) reduce-scatter, or
// sequence parallelism's tp sum.
bool IsStageGradients(const CompactOp& op, const Tensor& t) {
  return (op.kind == OpKind::kAllReduce || op.kind == OpKind::kReduceScatter) && t.wgrad_stage >= 0;
}

class DataFlow {
 public:
  DataFlow(const CompactSchedule& s, const ScheduleIndex& ix, const UnitRunResult& unit_run)
      : s_(s),
        ix_(ix),
        unit_(unit_run),
        tensor_slot_(s.names.Size(), -1),
        stream_stamp_(ix.streams.size(), 0),
        stream_slot_(ix.streams.size(), 0) {
    // Room for every tensor name at once: the names that are not keys, nearly all tensors once
    // the earlier passes hold (every key distinct, every `after` a key). Grown by doubling,
    // the array and its copy were the peak of a million-op check (6 + 12 MB at 145 k tensors).
    parsed_.reserve(static_cast<size_t>(std::max<int64_t>(
                        0, int64_t{s.names.Size()} - static_cast<int64_t>(s.ops.size()))) +
                    64);
  }

  void Run(std::vector<Diagnostic>& out) {
    const int n = static_cast<int>(s_.ops.size());
    // Device by device (a read is served by writes on its own device): one walk over the
    // device's ops collects its writes and its reads, the writes are sorted, and the reads are
    // then checked in op order. The writes and reads of one device at a time are held.
    // Two walks over all ops (each reads every op record): the first counts each device's ops
    // and finds ZeRO-3; the second lists them and collects what the weight gradients below
    // read, and the ops that read them.
    // Each device's op count from its streams (a walk over the op records cost a tenth of
    // this pass).
    std::vector<int> device_offset(s_.devices + 1, 0);
    // The ops grouped by device, in op order; left empty while the ops already come so (op i
    // at place i, as generated schedules and their files have them: 4 bytes per op saved).
    std::vector<int> device_ops;
    for (const StreamInfo& stream : ix_.streams) {
      device_offset[stream.device + 1] += static_cast<int>(stream.ops.size());
    }
    for (int d = 0; d < s_.devices; ++d) device_offset[d + 1] += device_offset[d];
    // Weight gradients: the dp all-reduce of a stage and OPTIMIZER read every backward op that
    // contributes (the executor also waits for every such op issued before them on the device).
    // ZeRO-3's per-layer reduce-scatters complete their stage's gradients too; with sequence
    // parallelism the dp collective of a stage also reads the tp sum's result.
    // The backward ops with their stage, so that the readers' scans read no op record (a
    // cache miss each).
    struct Backward {
      int op;
      int stage;
    };
    std::vector<std::vector<Backward>> backward_of_device(s_.devices);
    std::vector<std::vector<int>> wgrad_of_device(s_.devices), layer_of_device(s_.devices);
    std::vector<int> gradient_readers;  // OPTIMIZER and stage-gradient collectives, in op order
    {
      std::vector<int> fill(device_offset.begin(), device_offset.end() - 1);
      for (int i = 0; i < n; ++i) {
        const CompactOp& op = s_.ops[i];
        const int at = fill[op.device]++;
        if (!device_ops.empty()) {
          device_ops[at] = i;
        } else if (at != i) {  // the first op out of place: the ops before it are in place
          device_ops.resize(n);
          std::iota(device_ops.begin(), device_ops.begin() + i, 0);
          device_ops[at] = i;
        }
        zero3_ = zero3_ || op.zero == 3;  // (read by Effects, in the loop below)
        const Tensor& t = TensorOf(i);
        if (IsBackwardOp(op, t)) backward_of_device[op.device].push_back({i, op.stage});
        if (t.wgrad_layer >= 0) layer_of_device[op.device].push_back(i);
        const bool stage_gradients = IsStageGradients(op, t);
        if (stage_gradients) wgrad_of_device[op.device].push_back(i);
        if (stage_gradients || op.kind == OpKind::kOptimizer) gradient_readers.push_back(i);
      }
    }
    std::vector<std::pair<int, Diagnostic>> found;  // (op, diagnostic), put in op order below
    std::vector<Diagnostic> one;
    std::vector<Key> reads;
    std::vector<size_t> reads_end;  // per op of the device: the end of its reads in `reads`
    std::vector<int> in_place;      // a device's ops when device_ops is empty
    for (int d = 0; d < s_.devices; ++d) {
      std::span<const int> ops;
      if (device_ops.empty()) {
        in_place.resize(static_cast<size_t>(device_offset[d + 1] - device_offset[d]));
        std::iota(in_place.begin(), in_place.end(), device_offset[d]);
        ops = in_place;
      } else {
        ops = std::span<const int>(device_ops.data() + device_offset[d],
                                   device_ops.data() + device_offset[d + 1]);
      }
      writes_.clear();
      reads.clear();
      reads_end.clear();
      for (int i : ops) {
        Effects(i, reads);
        reads_end.push_back(reads.size());
      }
      IndexWrites();
      size_t r = 0;
      for (size_t j = 0; j < ops.size(); r = reads_end[j], ++j) {
        const int i = ops[j];
        for (; r < reads_end[j]; ++r) {
          const Key& k = reads[r];
          const PackedKey packed = Pack(k);
          producers_.clear();
          for (int w = FirstWrite(packed); w >= 0; w = same_key_[w]) {
            producers_.push_back(writes_[w].op);
          }
          if (producers_.empty()) {
            one.push_back(OpDiagnostic(s_, i,
                                       fmt::format("reads {}, which no op on dev {} writes",
                                                   Describe(k, tensors_), s_.ops[i].device)));
            break;
          }
          auto what = [&] { return Describe(k, tensors_); };
          if (!CheckProducers(i, what, producers_, /*all=*/false, one)) break;
        }
        for (Diagnostic& diagnostic : one) found.emplace_back(i, std::move(diagnostic));
        one.clear();
      }
    }
    writes_ = {};
    std::stable_sort(found.begin(), found.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto& [op, diagnostic] : found) out.push_back(std::move(diagnostic));
    std::vector<int> needed;
    for (const int i : gradient_readers) {
      const CompactOp& op = s_.ops[i];
      const Tensor t = TensorOf(i);  // a copy: TensorOf(j) below may add to parsed_
      const bool wgrad = IsStageGradients(op, t);
      if (!wgrad && op.kind != OpKind::kOptimizer) continue;
      const int stage = wgrad ? t.wgrad_stage : op.stage;
      needed.clear();
      const bool bucket = wgrad && t.bucket;
      for (const auto& [b, bs] : backward_of_device[op.device]) {
        if (bucket) {
          // A dp bucket reads the gradients of its own layers only.
          const Range& bl = s_.ops[b].layers;
          const bool overlaps = bl.begin < op.layers.end && op.layers.begin < bl.end;
          if (bs == stage && overlaps) needed.push_back(b);
          continue;
        }
        const bool earlier = b < i && (!wgrad || bs == stage || bs < 0);
        if (earlier || (stage >= 0 && bs == stage) || (!wgrad && stage < 0)) needed.push_back(b);
      }
      for (int j : layer_of_device[op.device]) {
        if (s_.ops[j].stage == stage) needed.push_back(j);
      }
      // (A bucket is summed apart from sequence parallelism's tp sum, which follows it.)
      if (stage >= 0 && (!wgrad || (!t.spgrad && !bucket))) {
        for (int j : wgrad_of_device[op.device]) {
          const Tensor& tj = TensorOf(j);
          if (tj.wgrad_stage == stage && (!wgrad || tj.spgrad)) needed.push_back(j);
        }
      }
      CheckProducers(
          i, [stage] { return fmt::format("the weight gradients of stage {}", stage); }, needed,
          /*all=*/true, out);
    }
  }

 private:
  // Op `op`'s tensor identity, parsed once per distinct name. The reference stays valid until
  // the next call.
  const Tensor& TensorOf(int op) {
    static const Tensor kNone;
    const int name = s_.ops[op].tensor;
    if (name < 0) return kNone;
    int& slot = tensor_slot_[name];
    if (slot < 0) {
      slot = static_cast<int>(parsed_.size());
      parsed_.push_back(tensors_.Parse(name, s_.Name(name)));
    }
    return parsed_[slot];
  }

  void Write(int op, const Key& k) { writes_.push_back({Pack(k), op}); }

  static size_t HashKey(const PackedKey& k) {
    uint64_t h = (k.x * 0x9e3779b97f4a7c15ULL) ^ (k.y * 0xbf58476d1ce4e5b9ULL) ^
                 (k.z * 0x94d049bb133111ebULL);
    return static_cast<size_t>(h ^ (h >> 29) ^ (h >> 47));
  }

  // Indexes writes_ by key (open addressing): key_slot_ holds the last write of each key,
  // same_key_ links each write to the previous one of its key. The order of a key's writes
  // does not matter (CheckProducers keeps the last per stream).
  void IndexWrites() {
    size_t capacity = 64;
    while (capacity < 2 * writes_.size()) capacity *= 2;
    key_slot_.assign(capacity, -1);
    same_key_.resize(writes_.size());
    const size_t mask = capacity - 1;
    for (size_t w = 0; w < writes_.size(); ++w) {
      size_t h = HashKey(writes_[w].key) & mask;
      while (key_slot_[h] >= 0 && !(writes_[key_slot_[h]].key == writes_[w].key)) {
        h = (h + 1) & mask;
      }
      same_key_[w] = key_slot_[h];
      key_slot_[h] = static_cast<int>(w);
    }
  }
  // The last write of `key` (then same_key_ for the others), or -1.
  int FirstWrite(const PackedKey& key) const {
    const size_t mask = key_slot_.size() - 1;
    for (size_t h = HashKey(key) & mask;; h = (h + 1) & mask) {
      const int w = key_slot_[h];
      if (w < 0 || writes_[w].key == key) return w;
    }
  }
  static void Read(std::vector<Key>& reads, const CompactOp& op, Key k) {
    k.device = op.device;
    reads.push_back(k);
  }
  static Key Make(Res kind, int layer, int part, const CompactOp& op) {
    Key k;
    k.kind = kind;
    k.layer = layer;
    k.part = part;
    k.mb = op.microbatch;
    k.a = op.tokens.begin;
    k.b = op.tokens.end;
    return k;
  }
  static Key Ctx(Res kind, int layer, int mb, int at) {
    Key k;
    k.kind = kind;
    k.layer = layer;
    k.mb = mb;
    k.a = at;
    return k;
  }
  // The stage output after layer `end` (the loss gradient after the last layer).
  Key Output(int end, int mb, int a, int b) const {
    Key k;
    k.kind = end < s_.layers ? Res::kAct : Res::kGrad;
    k.layer = end;
    k.mb = mb;
    k.a = a;
    k.b = b;
    return k;
  }

  // Fills producers_ with what op i writes and `reads` with what it reads (see
  // docs/execution_rules.md, "Data flow"; exec/runner.cpp RunCompute, RunAllReduce, RunOp).
  void Effects(int i, std::vector<Key>& reads) {
    const CompactOp& op = s_.ops[i];
    const Tensor& t = TensorOf(i);
    const bool split = op.group >= 0;
    const int mb = op.microbatch, a = op.tokens.begin, b = op.tokens.end;
    // ZeRO-3: layer math reads the layer's gathered parameters.
    if (zero3_ && IsLayerCompute(op.kind) && op.kind != OpKind::kBwdWeight) {
      const int pass = op.kind != OpKind::kFwd;
      for (int l = op.layers.begin; l < op.layers.end; ++l) {
        Read(reads, op, Make(Res::kParams, l, pass, op));
      }
    }
    // What a backward reads of its forward: with recompute=full what its RECOMPUTE rebuilt.
    const Res saved = op.recompute == Recompute::kFull ? Res::kFinR : Res::kFinF;
    if (op.kind == OpKind::kRecompute && op.part != LayerPart::kWhole) {
      // One block of a split layer's forward again (exec's RunRecomputeBlock): the attention
      // block from the kept input (with sequence parallelism its gathered ln1) against the
      // keys and values its forward left, the mlp block after the attention block's rebuilt
      // finish (with sequence parallelism its gathered ln2); its partial output goes to the tp
      // collective that finishes it (tpr / tprs), or without a group it finishes here.
      const int l = op.layers.begin;
      const int part = static_cast<int>(op.part);
      if (op.sequence_parallel) {
        Read(reads, op, Make(Res::kSpInR, l, part, op));
      } else if (op.part == LayerPart::kAttention) {
        Read(reads, op, Make(Res::kKept, l, 0, op));
      } else {
        Read(reads, op, Make(Res::kFinR, l, kAttn, op));
      }
      if (op.part == LayerPart::kAttention) Read(reads, op, Ctx(Res::kCtxF, l, mb, b));
      if (split) {
        Key sum = Make(Res::kTpSumR, l, part, op);
        sum.sp = op.sequence_parallel;
        Write(i, sum);
      } else {
        Write(i, Make(Res::kFinR, l, part, op));
      }
      return;
    }
    if (op.sequence_parallel && op.kind != OpKind::kBwdWeight) {
      // A block on every token row (exec's RunCompute): its gathered input in, its partial
      // output (reduce-scattered next) out; the backward reads the forward's saved state.
      const int l = op.layers.begin;
      const int part = static_cast<int>(op.part);
      const bool backward = op.kind != OpKind::kFwd;
      Read(reads, op, Make(backward ? Res::kSpInB : Res::kSpInF, l, part, op));
      if (backward) Read(reads, op, Make(saved, l, part, op));
      if (op.part == LayerPart::kAttention) {
        if (!backward && a > 0) Read(reads, op, Ctx(Res::kCtxF, l, mb, a));
        if (!backward) Write(i, Ctx(Res::kCtxF, l, mb, b));
        if (backward && b < s_.sequence) Read(reads, op, Ctx(Res::kCtxB, l, mb, b));
        if (backward) Write(i, Ctx(Res::kCtxB, l, mb, a));
      }
      Key sum = Make(backward ? Res::kTpSumB : Res::kTpSumF, l, part, op);
      sum.sp = true;
      Write(i, sum);
      return;
    }
    switch (op.kind) {
      case OpKind::kFwd: {
        const int first = op.layers.begin;
        if (op.part != LayerPart::kMlp && first > 0) {
          Read(reads, op, Make(Res::kAct, first, 0, op));
        }
        if (op.part == LayerPart::kMlp) Read(reads, op, Make(Res::kFinF, first, kAttn, op));
        for (int l = op.layers.begin; l < op.layers.end; ++l) {
          if (op.part != LayerPart::kMlp) {
            if (a > 0) Read(reads, op, Ctx(Res::kCtxF, l, mb, a));
            Write(i, Ctx(Res::kCtxF, l, mb, b));
          }
          if (op.part == LayerPart::kWhole && op.recompute == Recompute::kFull) {
            // Only the layer's input survives; its RECOMPUTE rebuilds the finished forward.
            Write(i, Make(Res::kKept, l, 0, op));
          } else if (op.part == LayerPart::kWhole) {
            Write(i, Make(Res::kFinF, l, kAttn, op));
            Write(i, Make(Res::kFinF, l, kMlp, op));
          }
        }
        if (op.part == LayerPart::kWhole) {
          Write(i, Output(op.layers.end, mb, a, b));
        } else if (split) {
          Write(i, Make(Res::kTpSumF, first, static_cast<int>(op.part), op));
        } else {
          Write(i, Make(Res::kFinF, first, static_cast<int>(op.part), op));
          if (op.part == LayerPart::kMlp) {
            Write(i, Output(first + 1, mb, a, b));
            Write(i, Make(Res::kKept, first, 0, op));  // what a RECOMPUTE would start from
          }
        }
        return;
      }
      case OpKind::kBwd:
      case OpKind::kBwdInput: {
        const int first = op.layers.begin;
        if (op.part != LayerPart::kAttention) {
          Read(reads, op, Make(Res::kGrad, op.layers.end, 0, op));
        } else {
          Read(reads, op, Make(Res::kFinB, first, kMlp, op));
        }
        for (int l = op.layers.begin; l < op.layers.end; ++l) {
          if (op.part == LayerPart::kWhole) {
            Read(reads, op, Make(saved, l, kMlp, op));
          } else {
            Read(reads, op, Make(saved, l, static_cast<int>(op.part), op));
          }
          if (op.part != LayerPart::kMlp) {
            if (b < s_.sequence) Read(reads, op, Ctx(Res::kCtxB, l, mb, b));
            Write(i, Ctx(Res::kCtxB, l, mb, a));
          }
          if (op.part == LayerPart::kWhole) {
            Write(i, Make(Res::kFinB, l, kMlp, op));
            Write(i, Make(Res::kFinB, l, kAttn, op));
          }
        }
        if (op.part == LayerPart::kWhole) {
          if (first > 0) Write(i, Make(Res::kGrad, first, 0, op));
        } else if (split) {
          Write(i, Make(Res::kTpSumB, first, static_cast<int>(op.part), op));
        } else {
          Write(i, Make(Res::kFinB, first, static_cast<int>(op.part), op));
          if (op.part == LayerPart::kAttention && first > 0) {
            Write(i, Make(Res::kGrad, first, 0, op));
          }
        }
        return;
      }
      case OpKind::kBwdWeight:
        for (int l = op.layers.begin; l < op.layers.end; ++l) {
          Read(reads, op, Make(Res::kFinB, l, op.part == LayerPart::kMlp ? kMlp : kAttn, op));
        }
        return;
      case OpKind::kSend:
        Read(reads, op, t.key);
        return;
      case OpKind::kRecv:
        Write(i, t.key);
        return;
      case OpKind::kBroadcast:
        if (op.device == op.peer) {
          Read(reads, op, t.key);
        } else {
          Write(i, t.key);
        }
        return;
      case OpKind::kAllReduce:
      case OpKind::kReduceScatter:
        if (t.key.kind == Res::kTpSumR) {
          // A recomputed block's tp sum (or reduce-scatter) and its finish.
          Read(reads, op, t.key);
          Write(i, Make(Res::kFinR, t.key.layer, t.key.part, op));
          return;
        }
        if (t.key.kind == Res::kTpSumF || t.key.kind == Res::kTpSumB) {
          // The tp sum (or with sequence parallelism its reduce-scatter) and the block's finish.
          const bool backward = t.key.kind == Res::kTpSumB;
          const Key& k = t.key;
          Read(reads, op, k);
          Key fin = k;
          fin.kind = backward ? Res::kFinB : Res::kFinF;
          fin.sp = false;
          Write(i, fin);
          if (!backward && k.part == kMlp) {
            Write(i, Output(k.layer + 1, k.mb, k.a, k.b));
            // The forward's end: a recompute=full forward keeps only the layer input now, for
            // its RECOMPUTE (which alone reads this).
            Key kept = k;
            kept.kind = Res::kKept;
            kept.part = 0;
            kept.sp = false;
            Write(i, kept);
          }
          if (backward && k.part == kAttn && k.layer > 0) {
            Key g = k;
            g.kind = Res::kGrad;
            g.part = 0;
            g.sp = false;
            Write(i, g);
          }
          return;
        }
        if (t.wgrad_stage >= 0 || t.barrier) return;  // handled in Run; a barrier moves nothing
        if (t.wgrad_layer >= 0) {
          // ZeRO-3: one unit's gradients of one layer, complete once its backward finished.
          Read(reads, op, Make(Res::kFinB, t.wgrad_layer, kAttn, op));
          return;
        }
        Read(reads, op, t.key);
        Write(i, t.key);
        return;
      case OpKind::kAllGather:
        if (t.key.kind == Res::kSpInR) {
          // A recomputed block's gathered LayerNorm output: this rank's shard of the kept input
          // (attention) or of the rebuilt residual (mlp); the backward's parameters (ZeRO-3).
          const Key& k = t.key;
          if (k.part == kAttn) {
            Read(reads, op, Make(Res::kKept, k.layer, 0, op));
          } else {
            Read(reads, op, Make(Res::kFinR, k.layer, kAttn, op));
          }
          if (zero3_) Read(reads, op, Make(Res::kParams, k.layer, 1, op));
          Write(i, k);
          return;
        }
        if (t.key.kind == Res::kSpInF || t.key.kind == Res::kSpInB) {
          // This rank's shard (exec's SequenceShard): the first block of the pass reads the
          // layer input or output gradient, the second the first one's finish; the forward's
          // LayerNorm reads the parameters.
          const Key& k = t.key;
          const bool backward = k.kind == Res::kSpInB;
          if (backward && k.part == kMlp) {
            Read(reads, op, Make(Res::kGrad, k.layer + 1, 0, op));
          } else if (!backward && k.part == kAttn) {
            if (k.layer > 0) Read(reads, op, Make(Res::kAct, k.layer, 0, op));
          } else {
            Read(reads, op,
                 Make(backward ? Res::kFinB : Res::kFinF, k.layer, backward ? kMlp : kAttn, op));
          }
          if (zero3_ && !backward) Read(reads, op, Make(Res::kParams, k.layer, 0, op));
          Write(i, k);
          return;
        }
        if (t.key.kind == Res::kParams) {
          Write(i, Make(Res::kParams, t.key.layer, t.key.part, op));
          return;
        }
        if (t.key.kind == Res::kStep) {
          Read(reads, op, t.key);
          return;
        }
        Read(reads, op, t.key);
        Write(i, t.key);
        return;
      case OpKind::kOptimizer: {
        Key step;  // what a ZeRO-1 / 2 all-gather of the stage's parameters reads
        step.kind = Res::kStep;
        step.layer = op.stage;
        Write(i, step);
        return;  // the gradients it reads: in Run
      }
      case OpKind::kRecompute:
        // Whole layers (split ones above): each layer's forward again from its kept input,
        // against the keys and values its forward left in the buffer (this slice's included),
        // rebuilding the finished forward its backward reads.
        for (int l = op.layers.begin; l < op.layers.end; ++l) {
          Read(reads, op, Make(Res::kKept, l, 0, op));
          Read(reads, op, Ctx(Res::kCtxF, l, mb, b));
          Write(i, Make(Res::kFinR, l, kAttn, op));
          Write(i, Make(Res::kFinR, l, kMlp, op));
        }
        return;
    }
  }

  // A few op positions: `op` alone, a SEND with its RECV, or a collective's members.
  class Joined {
   public:
    explicit Joined(std::span<const int> ops) : ops_(ops) {}
    Joined(int a, int b) : pair_{a, b}, ops_(pair_, 2) {}
    Joined(const Joined&) = delete;
    Joined& operator=(const Joined&) = delete;
    const int* begin() const { return ops_.data(); }
    const int* end() const { return ops_.data() + ops_.size(); }

   private:
    int pair_[2] = {0, 0};
    std::span<const int> ops_;
  };

  // The ops whose predecessors must all be done before `op` can finish, `op` included: a RECV
  // completes only once its SEND started, a collective only once every member arrived. Not the
  // reverse for a SEND: executors buffer it (exec/transport.h), so it may finish before its
  // RECV is even posted. These are the edges every implementation honours.
  Joined JoinedBefore(const int& op) const {
    if (ix_.partner[op] >= 0 && s_.ops[op].kind == OpKind::kRecv) return {op, ix_.partner[op]};
    if (ix_.instance[op] >= 0) return Joined(ix_.instance_ops[ix_.instance[op]]);
    return Joined(std::span<const int>(&op, 1));
  }
  // The ops whose successors wait for `op`'s predecessors: the reverse of JoinedBefore (a SEND
  // and its RECV, a collective's members).
  Joined JoinedAfter(const int& op) const {
    if (ix_.partner[op] >= 0 && s_.ops[op].kind == OpKind::kSend) return {op, ix_.partner[op]};
    if (ix_.instance[op] >= 0) return Joined(ix_.instance_ops[ix_.instance[op]]);
    return Joined(std::span<const int>(&op, 1));
  }

  // Whether the order puts `p` before `c` (p finishes before c can start, whatever the
  // durations, in the simulator and in every executor). The unit-duration dry run bounds the
  // search: p before x implies start(x) >= finish(p) there.
  bool Before(int p, int c) {
    if (p == c) return false;
    if (ix_.stream_of[p] == ix_.stream_of[c]) {
      return ix_.position_in_stream[p] < ix_.position_in_stream[c];
    }
    for (int d : ix_.After(c)) {
      if (d == p) return true;
    }
    const int32_t p_finish = unit_.Finish(p);
    if (p_finish < 0 || unit_.Start(c) < 0 || p_finish > unit_.Start(c)) return false;
    if (seen_.empty()) seen_.assign(s_.ops.size(), 0);  // at the first search: often none
    ++stamp_;
    std::vector<int>& stack = stack_;
    stack.clear();
    auto push_preds = [&](const int& x) {
      for (int m : JoinedBefore(x)) {
        const int stream = ix_.stream_of[m];
        const int pos = ix_.position_in_stream[m];
        if (pos > 0) stack.push_back(ix_.streams[stream].ops[pos - 1]);
        for (int d : ix_.After(m)) stack.push_back(d);
      }
    };
    push_preds(c);
    while (!stack.empty()) {
      const int y = stack.back();
      stack.pop_back();
      if (seen_[y] == stamp_) continue;
      seen_[y] = stamp_;
      if (y == p) return true;
      if (unit_.Start(y) < p_finish) continue;
      push_preds(y);
    }
    return false;
  }

  // If `c` comes before `p`, the path c -> ... -> p as "Y waits for X (why)" steps from p back
  // to c; else empty.
  std::vector<std::string> PathFrom(int c, int p) {
    struct Step {
      int from = -2;  // the op waited for (-1 at c, -2 unvisited)
      int via = -1;   // the member of from's node that y follows
      bool after = false;
    };
    const int n = static_cast<int>(s_.ops.size());
    std::vector<Step> step(n);
    std::vector<int> queue{c};
    step[c].from = -1;
    // p waits for c once c is before p or before an op p joins (JoinedBefore).
    const Joined target = JoinedBefore(p);
    int hit = -1;
    for (size_t q = 0; q < queue.size() && hit < 0; ++q) {
      const int x = queue[q];
      for (int m : JoinedAfter(x)) {
        auto visit = [&](int y, bool after) {
          if (step[y].from != -2 || hit >= 0) return;
          if (unit_.Start(y) >= 0 && unit_.Start(p) >= 0 && unit_.Start(y) > unit_.Start(p)) return;
          step[y] = Step{x, m, after};
          if (std::find(target.begin(), target.end(), y) != target.end()) hit = y;
          queue.push_back(y);
        };
        const int stream = ix_.stream_of[m];
        const int pos = ix_.position_in_stream[m];
        const auto& ops = ix_.streams[stream].ops;
        if (pos + 1 < static_cast<int>(ops.size())) visit(ops[pos + 1], false);
        for (int d : ix_.Dependents(m)) visit(d, true);
      }
    }
    std::vector<std::string> steps;
    if (hit < 0) return steps;
    for (int y = hit; step[y].from >= 0; y = step[y].from) {
      const CompactOp& from = s_.ops[step[y].from];
      const CompactOp& via = s_.ops[step[y].via];
      if (step[y].via == step[y].from) {
        steps.push_back(fmt::format(
            "{} waits for {} (line {}, {})", s_.Key(s_.ops[y]), s_.Key(from), from.line,
            step[y].after ? std::string("named in its after=")
                          : fmt::format("before it on stream {}", s_.Name(via.stream))));
      } else {
        steps.push_back(
            fmt::format("{} waits for {} (line {}, {}), which runs together with {} (dev {})",
                        s_.Key(s_.ops[y]), s_.Key(via), via.line,
                        step[y].after ? std::string("named in its after=")
                                      : fmt::format("before it on stream {}", s_.Name(via.stream)),
                        s_.Key(from), from.device));
      }
    }
    return steps;
  }

  // Checks that one (all=false) or every (all=true) op in `producers` comes before `c`;
  // appends a diagnostic and returns false when not.
  // `what()` names what is read; it is called only for a message.
  template <typename What>
  bool CheckProducers(int c, const What& what, const std::vector<int>& producers, bool all,
                      std::vector<Diagnostic>& out) {
    // Only the last producer of each stream matters: stream order puts the others before it.
    // last_ holds (stream, producer), one per stream; stream_slot_ its place while the stream's
    // stamp is this call's.
    last_.clear();
    ++stream_call_;
    for (int p : producers) {
      if (p == c) continue;
      const int stream = ix_.stream_of[p];
      if (stream_stamp_[stream] != stream_call_) {
        stream_stamp_[stream] = stream_call_;
        stream_slot_[stream] = static_cast<int>(last_.size());
        last_.emplace_back(stream, p);
        continue;
      }
      int& held = last_[stream_slot_[stream]].second;
      if (ix_.position_in_stream[p] > ix_.position_in_stream[held]) held = p;
    }
    if (last_.size() > 1) std::sort(last_.begin(), last_.end());  // stream order, as before
    int bad = -1;
    for (const auto& [stream, p] : last_) {
      const bool before = Before(p, c);
      if (before && !all) return true;
      if (!before && bad < 0) bad = p;
      if (!before && all) break;
    }
    if (bad < 0) return true;
    const CompactOp& op = s_.ops[c];
    const CompactOp& producer = s_.ops[bad];
    const std::vector<std::string> path = PathFrom(c, bad);
    if (!path.empty()) {
      std::string cycle = fmt::format(
          "deadlock: cycle of waits: {} (line {}) waits for {}, which {} (line {}) writes",
          s_.Key(op), op.line, what(), s_.Key(producer), producer.line);
      for (const std::string& step : path) cycle += "; " + step;
      out.push_back(OpDiagnostic(s_, op, std::move(cycle)));
    } else {
      out.push_back(OpDiagnostic(
          s_, op,
          fmt::format("reads {}, which {} (line {}, dev {} stream {}) writes, but nothing "
                      "orders {} before it (add after={} or put both on one stream)",
                      what(), s_.Key(producer), producer.line, producer.device,
                      s_.Name(producer.stream), s_.Key(producer), s_.Key(producer))));
    }
    return false;
  }

  const CompactSchedule& s_;
  const ScheduleIndex& ix_;
  bool zero3_ = false;  // some op is ZeRO-3 (set by Run's first walk)
  Tensors tensors_;
  const UnitRunResult& unit_;  // the unit-duration dry run
  std::vector<uint32_t> seen_;
  uint32_t stamp_ = 0;
  std::vector<int> tensor_slot_;  // tensor name id -> its place in parsed_, -1 not parsed yet
  std::vector<Tensor> parsed_;
  std::vector<Written> writes_;  // of one device
  std::vector<int> key_slot_;    // IndexWrites
  std::vector<int> same_key_;
  // Scratch of CheckProducers and Before, kept to reuse their capacity.
  std::vector<int> producers_;
  std::vector<std::pair<int, int>> last_;
  std::vector<uint32_t> stream_stamp_;
  std::vector<int> stream_slot_;
  uint32_t stream_call_ = 0;
  std::vector<int> stack_;
};

}  // namespace

void CheckDataFlow(const CompactSchedule& schedule, const ScheduleIndex& index,
                   const UnitRunResult& unit_run, std::vector<Diagnostic>& diagnostics) {
  DataFlow(schedule, index, unit_run).Run(diagnostics);
}

}  // namespace terasim

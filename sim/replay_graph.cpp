#include "sim/replay_graph.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "models/errors.h"
#include "sim/op_work.h"

namespace terasim {
namespace {

uint64_t Load8(const char* p) {
  uint64_t word;
  std::memcpy(&word, p, 8);
  return word;
}

uint32_t Load4(const char* p) {
  uint32_t word;
  std::memcpy(&word, p, 4);
  return word;
}

// Whether two strings are equal, inline, 8 bytes at a time (a library memcmp call per compare
// costs more than the compare itself for names of 2-40 bytes).
[[gnu::always_inline]] inline bool SameText(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  const char* p = a.data();
  const char* q = b.data();
  if (n < 8) {
    if (n >= 4) return Load4(p) == Load4(q) && Load4(p + n - 4) == Load4(q + n - 4);
    for (size_t i = 0; i < n; ++i) {
      if (p[i] != q[i]) return false;
    }
    return true;
  }
  for (size_t i = 0; i + 8 < n; i += 8) {
    if (Load8(p + i) != Load8(q + i)) return false;
  }
  return Load8(p + n - 8) == Load8(q + n - 8);
}

// A string hash, inline, 8 bytes at a time (keys are 10-40 bytes): the last word overlaps the
// one before it instead of a byte loop over the tail.
size_t HashOf(std::string_view text) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  const char* p = text.data();
  const size_t n = text.size();
  uint64_t h = n * kMul;
  if (n >= 8) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      h = (h ^ Load8(p + i)) * kMul;
      h ^= h >> 32;
    }
    if (n % 8 != 0) h = (h ^ Load8(p + n - 8)) * kMul;
  } else {
    uint64_t word = 0;
    std::memcpy(&word, p, n);
    h = (h ^ word) * kMul;
  }
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  return static_cast<size_t>(h ^ (h >> 32));
}

// An open-addressing index of integer values (op or group positions) by a hash; the caller's
// `same(value)` says whether a stored value has the looked-up name. One flat array of slots,
// sized once for `expected` values: no allocation per entry.
class FlatIndex {
 public:
  explicit FlatIndex(size_t expected) {
    size_t capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
  }

  // The stored value with hash `hash` for which same(value) holds, or -1.
  template <typename Same>
  int Find(size_t hash, Same&& same) const {
    const auto low = static_cast<uint32_t>(hash);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.value < 0) return -1;
      if (slot.hash == low && same(slot.value)) return slot.value;
    }
  }

  // Stores `value` unless a value for which same(value) holds is already there (the first
  // stays, as std::unordered_map::emplace has it).
  template <typename Same>
  void Emplace(size_t hash, int value, Same&& same) {
    const auto low = static_cast<uint32_t>(hash);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.value < 0) {
        slot = Slot{low, value};
        return;
      }
      if (slot.hash == low && same(slot.value)) return;
    }
  }

 private:
  struct Slot {
    uint32_t hash = 0;
    int32_t value = -1;
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// Sorts `values` and drops repeats.
template <typename T>
void SortUnique(std::vector<T>* values) {
  std::sort(values->begin(), values->end());
  values->erase(std::unique(values->begin(), values->end()), values->end());
}

// The hash of a SEND's identity: (source device, destination device, tensor).
size_t SendHash(int src, int dst, std::string_view tensor) {
  const uint64_t pair =
      (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst);
  return HashOf(tensor) ^ (pair * 0x9E3779B97F4A7C15ULL);
}

// The hash of a SEND's identity by the generator's integers: (source, destination, tensor id).
size_t SendIdHash(int src, int dst, int64_t tensor_id) {
  const uint64_t pair =
      (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst);
  uint64_t h =
      (pair * 0x9E3779B97F4A7C15ULL) ^ (static_cast<uint64_t>(tensor_id) * 0xC2B2AE3D27D4EB4FULL);
  h ^= h >> 29;
  return static_cast<size_t>(h);
}

// A SEND / RECV read by name without one (a GenerateForReplay op whose ids were cleared names
// its tensor by Op::tensor_id alone): pairing them by the empty name would pair them wrongly.
[[noreturn, gnu::cold, gnu::noinline]] void UnnamedTensor(const std::string& at) {
  ThrowInput("{}: SEND / RECV without a tensor name (nor the generator's ids)", at);
}

// Lists the SEND pair (device, peer) in `sends` unless `peers` (the device's peers listed so far,
// a few) holds it; past 16 peers it lists every pair, and SortUnique drops the repeats. Out of
// line: the caller's loop over every op keeps its registers.
[[gnu::noinline]] void ListSend(int device, int peer, std::vector<int>* peers,
                                std::vector<std::pair<int, int>>* sends) {
  if (peers->size() < 16) {
    if (std::find(peers->begin(), peers->end(), peer) != peers->end()) return;
    peers->push_back(peer);
  }
  sends->emplace_back(device, peer);
}

}  // namespace

OpClass ClassifyKind(OpKind kind) {
  return IsCompute(kind)        ? OpClass::kCompute
         : IsPointToPoint(kind) ? OpClass::kPointToPoint
         : IsCollective(kind)   ? OpClass::kCollective
                                : OpClass::kOther;
}

bool AfterOpsMatch(const Schedule& schedule) {
  const AfterOps& after = schedule.after_ops;
  const std::vector<Op>& ops = schedule.ops;
  if (after.Empty() || !after.Fits(ops)) return false;
  for (size_t i = 0; i < ops.size(); ++i) {
    const int* dep = after.op.data() + after.begin[i];
    for (const std::string& key : ops[i].after) {
      if (!SameText(ops[*dep++].key, key)) return false;
    }
  }
  return true;
}

namespace {

// Why Build stopped before the end: the caller builds again without what failed.
enum class Outcome { kBuilt, kPositionsStale, kIdsMissing };

// BuildReplayGraph; with `by_position`, the `after` deps are schedule.after_ops' positions,
// checked against the keys op by op as the ops are read (AfterOpsMatch in the same pass):
// kPositionsStale at the first that does not match. With kIds, the streams, groups and SEND /
// RECV tensors are the ops' integer names (Op::stream_id, group_id, tensor_id) and no string is
// read but the after keys: kIdsMissing at the first op without them (or with a group out of
// range, or a collective without a group: the strings then name the error).
template <bool kIds>
Outcome Build(const Schedule& schedule, const std::vector<int>& placement, bool by_position,
              ReplayGraph* out) {
  const std::string where = schedule.source.empty() ? "schedule" : schedule.source;
  const std::vector<Op>& ops = schedule.ops;
  const int n = static_cast<int>(ops.size());
  const int devices = schedule.devices;
  ReplayGraph& g = *out;
  g = ReplayGraph{};
  g.pending.assign(n, 0);
  // Successor counts of op i at succ_begin[i + 2] while the ops are read; their prefix sums
  // then put op i's first slot at succ_begin[i + 1], the cursor that filling advances to its
  // end, which is op i + 1's begin: the CSR offsets without a pass of their own.
  g.succ_begin.assign(n + 2, 0);
  g.partner.assign(n, -1);
  g.instance.assign(n, -1);
  g.work_tp.assign(n, 1);
  g.op_class.assign(n, OpClass::kOther);
  g.gpu.assign(n, -1);
  g.device.assign(n, 0);
  if constexpr (!kIds) g.stream.assign(n, 0);
  g.work.assign(n, -1);
  g.group_member.assign(schedule.groups.size(), ReplayGraph::Member{});
  WorkIndex works;

  // The `after` deps: the generator's positions when they match the keys, else each key
  // resolved through an index of the keys.
  FlatIndex key_index(by_position ? 0 : n);
  if (!by_position) {
    for (int i = 0; i < n; ++i) {
      const std::string_view key = ops[i].key;
      key_index.Emplace(HashOf(key), i, [&](int j) { return SameText(ops[j].key, key); });
    }
  }
  const int num_groups = static_cast<int>(schedule.groups.size());
  FlatIndex group_index(num_groups);
  for (int k = 0; k < num_groups; ++k) {
    const Group& group = schedule.groups[k];
    group_index.Emplace(HashOf(group.name), k,
                        [&](int j) { return SameText(schedule.groups[j].name, group.name); });
    std::vector<int> gpus;
    gpus.reserve(group.ranks.size());
    for (int rank : group.ranks) {
      if (rank < 0 || rank >= static_cast<int>(placement.size())) {
        ThrowInput("{}: group {}: rank {} is not a device", where, group.name, rank);
      }
      gpus.push_back(placement[rank]);
    }
    g.group_gpus.push_back(std::move(gpus));
  }
  // The group an op names, -1 when none is declared; the last name looked up is remembered
  // (consecutive ops mostly name the same group).
  std::string_view last_group_name;
  int last_group = -2;
  auto group_of = [&](const std::string& name) __attribute__((always_inline)) {
    if (last_group != -2 && SameText(name, last_group_name)) return last_group;
    last_group_name = name;
    last_group = group_index.Find(HashOf(name),
                                  [&](int j) { return SameText(schedule.groups[j].name, name); });
    return last_group;
  };

  // Predecessors: the previous op on the same stream (at most one per op), and the `after` deps
  // (the generator's positions, or the keys resolved into the same form).
  std::vector<int> stream_pred(n, -1);
  AfterOps resolved;
  if (!by_position) {
    size_t num_after = 0;
    for (const Op& op : ops) num_after += op.after.size();
    resolved.begin.reserve(n + 1);
    resolved.op.reserve(num_after);
  }
  const AfterOps& after = by_position ? schedule.after_ops : resolved;
  // Per device: its streams (name, or with kIds number, and last op), a handful each.
  using StreamName = std::conditional_t<kIds, int, std::string_view>;
  std::vector<std::vector<std::pair<StreamName, int>>> stream_tail(devices);
  // The SENDs and RECVs with a peer in range, each with the hash of its (source, destination,
  // tensor), in op order: matched after this pass without reading every op again.
  std::vector<std::pair<size_t, int>> send_ops, recv_ops;
  // Per group: the collectives each device issued on it, allocated at the group's first
  // collective (a representatives-only schedule uses few of the groups).
  std::vector<std::vector<int>> issued(num_groups);
  std::vector<std::vector<int>> instance_of(num_groups);  // group -> k -> instance
  // The last plan key listed (consecutive ops mostly repeat it).
  std::tuple<int, int, Bytes, int> last_plan{-1, -1, 0, -1};
  // Per device: the peers it has sent to (ListSend), and the last SEND pair seen (consecutive
  // SENDs mostly repeat it).
  std::vector<std::vector<int>> sent_to(devices);
  std::pair<int, int> last_send{-1, -1};
  // Raw pointers into the per-op arrays: the loop's stores then need no reload of each vector's
  // start (a store through an int* may alias a vector's own fields).
  int* const pending = g.pending.data();
  int* const succ_count = g.succ_begin.data() + 2;
  int* const instance_at = g.instance.data();
  int* const work_tp = g.work_tp.data();
  int* const work_at = g.work.data();
  OpClass* const op_class = g.op_class.data();
  int* const gpu_at = g.gpu.data();
  int* const device_at = g.device.data();
  int* const stream_at = g.stream.data();  // empty with kIds
  int* const pred_at = stream_pred.data();
  const int* const gpu_of = placement.data();
  const int placed = static_cast<int>(placement.size());
  const Op* const op_at = ops.data();
  const int* const after_begin = by_position ? after.begin.data() : nullptr;
  const int* const after_op = by_position ? after.op.data() : nullptr;
  for (int i = 0; i < n; ++i) {
    const Op& op = op_at[i];
    // The place for error messages, formatted only when one is thrown.
    auto at = [&] { return fmt::format("{}:{}: {}", where, op.line, op.key); };
    const int device = op.device;
    if (device < 0 || device >= devices) {
      ThrowInput("{}: device {} is outside 0..{}", at(), device, devices - 1);
    }
    device_at[i] = device;
    gpu_at[i] = device < placed ? gpu_of[device] : -1;
    const OpClass cls = ClassOf(op.kind);
    op_class[i] = cls;
    auto& tails = stream_tail[device];
    auto tail = tails.begin();
    if constexpr (kIds) {
      if (op.stream_id < 0) return Outcome::kIdsMissing;
      while (tail != tails.end() && tail->first != op.stream_id) ++tail;
    } else {
      while (tail != tails.end() && !SameText(tail->first, op.stream)) ++tail;
      stream_at[i] = static_cast<int>(tail - tails.begin());
    }
    int preds = 0;
    if (tail == tails.end()) {
      if constexpr (kIds) {
        tails.emplace_back(op.stream_id, i);
      } else {
        tails.emplace_back(op.stream, i);
      }
    } else {
      pred_at[i] = tail->second;
      ++succ_count[tail->second];
      tail->second = i;
      preds = 1;
    }
    const std::string* key = op.after.data();
    const int num_after = static_cast<int>(op.after.size());
    if (by_position) {
      // The generator's positions stand for the keys only where each names its key.
      const int* dep = after_op + after_begin[i];
      if (after_begin[i + 1] - after_begin[i] != num_after) return Outcome::kPositionsStale;
      for (const std::string* end = key + num_after; key != end; ++key, ++dep) {
        if (*dep < 0 || *dep >= n || !SameText(op_at[*dep].key, *key)) {
          return Outcome::kPositionsStale;
        }
        ++succ_count[*dep];
      }
    } else {
      resolved.begin.push_back(static_cast<int>(resolved.op.size()));
      for (const std::string& dep : op.after) {
        const int pred =
            key_index.Find(HashOf(dep), [&](int j) { return SameText(ops[j].key, dep); });
        if (pred < 0) ThrowInput("{}: after: unknown key {}", at(), dep);
        resolved.op.push_back(pred);
        ++succ_count[pred];
      }
    }
    pending[i] = preds + num_after;
    if (cls == OpClass::kCompute) {
      // As SliceWorkOf(schedule, op) has it, with the group resolved here once.
      int tp;
      if constexpr (kIds) {
        if (op.group_id >= num_groups) return Outcome::kIdsMissing;
        tp = WorkTpOf(schedule, op.kind, op.zero, op.group_id >= 0, op.group_id);
      } else {
        tp = WorkTpOf(schedule, op, op.group.empty() ? -1 : group_of(op.group));
      }
      work_tp[i] = tp;
      work_at[i] = works.Intern(op, tp);
      continue;
    }
    if (cls == OpClass::kPointToPoint) {
      if (op.kind == OpKind::kSend && op.peer >= 0 && op.peer < devices) {
        if constexpr (kIds) {
          send_ops.emplace_back(SendIdHash(device, op.peer, op.tensor_id), i);
        } else {
          if (op.tensor.empty()) UnnamedTensor(at());
          send_ops.emplace_back(SendHash(device, op.peer, op.tensor), i);
        }
        if (device != last_send.first || op.peer != last_send.second) {
          ListSend(device, op.peer, &sent_to[device], &g.comm_keys.sends);
        }
        last_send = {device, op.peer};
      } else if (op.kind == OpKind::kRecv && op.peer >= 0 && op.peer < devices) {
        if constexpr (kIds) {
          recv_ops.emplace_back(SendIdHash(op.peer, device, op.tensor_id), i);
        } else {
          if (op.tensor.empty()) UnnamedTensor(at());
          recv_ops.emplace_back(SendHash(op.peer, device, op.tensor), i);
        }
      }
      continue;
    }
    if (cls == OpClass::kCollective) {
      int k;
      if constexpr (kIds) {
        k = op.group_id;
        if (k < 0 || k >= num_groups) return Outcome::kIdsMissing;
      } else {
        k = group_of(op.group);
        if (k < 0) ThrowInput("{}: group {} is not declared", at(), op.group);
      }
      std::vector<int>& issued_on = issued[k];
      if (issued_on.empty()) issued_on.assign(devices, 0);
      const int nth = issued_on[device]++;
      std::vector<int>& instances = instance_of[k];
      if (nth == static_cast<int>(instances.size())) {
        instances.push_back(static_cast<int>(g.instances.size()));
        ReplayGraph::Instance instance;
        instance.group = k;
        instance.kind = op.kind;
        instance.bytes = op.bytes;
        instance.expected = static_cast<int>(schedule.groups[k].ranks.size());
        instance.root_gpu = op.kind == OpKind::kBroadcast && op.peer >= 0 && op.peer < devices
                                ? placement[op.peer]
                                : -1;
        g.instances.push_back(instance);
      }
      const int at_instance = instances[nth];
      instance_at[i] = at_instance;
      // ExclusiveLinks::AddMemberOp's watch (the first member seen, its ops on one stream).
      ReplayGraph::Member& member = g.group_member[k];
      int stream;
      if constexpr (kIds) {
        stream = op.stream_id;
      } else {
        stream = stream_at[i];
      }
      if (member.ops == 0) member = ReplayGraph::Member{device, stream, 0, true};
      if (member.device == device) {
        ++member.ops;
        if (member.stream != stream) member.one_stream = false;
      }
      ++g.instances[at_instance].members;
      // Compared field by field (a std::tuple compare and copy cost twice as much).
      const int plan_kind = static_cast<int>(op.kind);
      const int plan_root =
          op.kind == OpKind::kBroadcast && op.peer >= 0 && op.peer < devices ? op.peer : -1;
      auto& [last_k, last_kind, last_bytes, last_root] = last_plan;
      if (k != last_k || plan_kind != last_kind || op.bytes != last_bytes ||
          plan_root != last_root) {
        g.comm_keys.plans.emplace_back(k, plan_kind, op.bytes, plan_root);
        last_plan = {k, plan_kind, op.bytes, plan_root};
      }
    }
  }
  // SENDs by (source, destination, tensor), sized for the SENDs alone: a table for every op
  // would be several times larger, and nearly every probe a cache miss.
  // (Tensors compared by name, or with kIds by id.)
  auto same_tensor = [&](const Op& a, const Op& b) {
    if constexpr (kIds) {
      return a.tensor_id == b.tensor_id;
    } else {
      return SameText(a.tensor, b.tensor);
    }
  };
  FlatIndex sends(send_ops.size());
  for (const auto& [hash, i] : send_ops) {
    const Op& op = ops[i];
    sends.Emplace(hash, i, [&](int j) {
      return ops[j].device == op.device && ops[j].peer == op.peer && same_tensor(ops[j], op);
    });
  }
  for (const auto& [hash, i] : recv_ops) {
    const Op& op = ops[i];
    const int send = sends.Find(hash, [&](int j) {
      return ops[j].device == op.peer && ops[j].peer == op.device && same_tensor(ops[j], op);
    });
    if (send >= 0) {
      g.partner[i] = send;
      g.partner[send] = i;
      // Consecutive RECVs mostly repeat their pair; SortUnique drops the other repeats.
      const std::pair<int, int> pair{op.peer, op.device};
      if (g.paired_sends.empty() || g.paired_sends.back() != pair) g.paired_sends.push_back(pair);
    }
  }
  SortUnique(&g.paired_sends);
  g.has_ops.assign(devices, 0);
  for (int d = 0; d < devices; ++d) g.has_ops[d] = !stream_tail[d].empty();
  if (!by_position) resolved.begin.push_back(static_cast<int>(resolved.op.size()));
  // CSR successor lists: each op's successors in the order of the ops they precede, a stream
  // successor before the `after` deps of the same op.
  // (Raw pointers again: a store through an int* would reload each vector's start.)
  int* const begin = g.succ_begin.data();
  for (int i = 2; i <= n + 1; ++i) begin[i] += begin[i - 1];
  g.succ.resize(begin[n + 1]);
  int* const succ = g.succ.data();
  int* const cursor = begin + 1;
  const int* const dep_begin = after.begin.data();
  const int* const dep_op = after.op.data();
  for (int i = 0; i < n; ++i) {
    if (pred_at[i] >= 0) succ[cursor[pred_at[i]]++] = i;
    for (int k = dep_begin[i]; k < dep_begin[i + 1]; ++k) succ[cursor[dep_op[k]]++] = i;
  }
  g.succ_begin.pop_back();
  g.works = works.Works();
  SortUnique(&g.comm_keys.plans);
  SortUnique(&g.comm_keys.sends);
  return Outcome::kBuilt;
}

}  // namespace

ReplayGraph BuildReplayGraph(const Schedule& schedule, const std::vector<int>& placement) {
  // The generator's `after` positions when they fit the ops' lists (checked against the keys
  // while building), else the keys resolved through an index.
  const AfterOps& after = schedule.after_ops;
  const size_t n = schedule.ops.size();
  const bool fits = !after.Empty() && after.begin.size() == n + 1 && after.begin[0] == 0 &&
                    static_cast<size_t>(after.begin[n]) == after.op.size();
  // The ops' integer names when every op has them, else the strings. Each failure turns one
  // of the two off, so this builds at most three times (once for a generated schedule).
  bool by_position = fits;
  bool ids = true;
  ReplayGraph graph;
  for (;;) {
    const Outcome outcome = ids ? Build<true>(schedule, placement, by_position, &graph)
                                : Build<false>(schedule, placement, by_position, &graph);
    if (outcome == Outcome::kBuilt) return graph;
    if (outcome == Outcome::kPositionsStale) by_position = false;
    if (outcome == Outcome::kIdsMissing) ids = false;
  }
}

}  // namespace terasim

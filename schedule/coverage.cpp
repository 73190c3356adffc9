#include "schedule/coverage.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

namespace terasim {
namespace {

// CheckRecompute without its test for a RECOMPUTE op (CheckCoverage knows).
void CheckRecomputeOrder(const CompactSchedule& s, std::vector<Diagnostic>& out);

// Coverage classes: what a micro-batch must compute exactly once.
enum class Work { kForward, kBackward, kWeight };

std::string_view WorkName(Work work) {
  switch (work) {
    case Work::kForward:
      return "forward";
    case Work::kBackward:
      return "backward";
    case Work::kWeight:
      return "weight-gradient";
  }
  return "?";
}

// Layer parts are numbered as units: unit 2l is layer l's attention block, 2l+1 its MLP block.
// A whole-layer op over [l0, l1) covers units [2 l0, 2 l1).
std::pair<int, int> Units(const CompactOp& op) {
  switch (op.part) {
    case LayerPart::kAttention:
      return {2 * op.layers.begin, 2 * op.layers.begin + 1};
    case LayerPart::kMlp:
      return {2 * op.layers.begin + 1, 2 * op.layers.begin + 2};
    case LayerPart::kWhole:
      break;
  }
  return {2 * op.layers.begin, 2 * op.layers.end};
}

// "layer 2", "layers 2-4" or "layer 2 mlp" for the units [u0, u1).
std::string DescribeUnits(int u0, int u1) {
  if (u0 % 2 == 1 || u1 - u0 == 1) {
    return fmt::format("layer {} {}", u0 / 2, u0 % 2 == 1 ? "mlp" : "attn");
  }
  const int l0 = u0 / 2, l1 = u1 / 2;
  return l1 - l0 == 1 ? fmt::format("layer {}", l0) : fmt::format("layers {}-{}", l0, l1);
}

struct Piece {
  int microbatch;
  int tp_rank;
  Work work;
  int u0, u1;
  int t0, t1;
  int op;
};

struct MicrobatchInfo {
  int first_op = -1;  // lowest position of an op of the micro-batch
  int rows = 0;
  int rows_op = -1;  // the op that set `rows`
  int tp_ranks = 1;  // the largest group size of its layer compute ops
  bool split_backward = false;
};

struct Segment {
  int index;  // into the breakpoints
  int t0, t1;
  int op;
};

class CoverageChecker {
 public:
  CoverageChecker(const CompactSchedule& s, std::vector<Diagnostic>& out) : s_(s), out_(out) {}

  // Checks the pieces of one (micro-batch, tp rank, work) against the full grid; reports the
  // first gap or overlap. `fallback_op` carries the message when no piece exists at all.
  void CheckOne(std::span<const Piece> pieces, int microbatch, int tp_rank, bool show_tp, Work work,
                int fallback_op) {
    const int total_units = 2 * s_.layers;
    Breakpoints(pieces, total_units);
    const int segment_count = static_cast<int>(breakpoints_.size()) - 1;
    // Segments ordered by (index, t0, t1, op): placed by index (a counting sort), then each
    // index's run sorted, which it mostly is already (pieces come in token order).
    bucket_start_.assign(static_cast<size_t>(segment_count) + 1, 0);
    for (const Piece& p : pieces) {
      const int s0 = Breakpoint(p.u0), s1 = Breakpoint(p.u1);
      for (int seg = s0; seg < s1; ++seg) ++bucket_start_[seg + 1];
    }
    for (int seg = 0; seg < segment_count; ++seg) bucket_start_[seg + 1] += bucket_start_[seg];
    segments_.resize(bucket_start_.back());
    bucket_fill_.assign(bucket_start_.begin(), bucket_start_.end() - 1);
    for (const Piece& p : pieces) {
      const int s0 = Breakpoint(p.u0), s1 = Breakpoint(p.u1);
      for (int seg = s0; seg < s1; ++seg) segments_[bucket_fill_[seg]++] = {seg, p.t0, p.t1, p.op};
    }
    auto before = [](const Segment& a, const Segment& b) {
      return std::tie(a.t0, a.t1, a.op) < std::tie(b.t0, b.t1, b.op);
    };
    for (int seg = 0; seg < segment_count; ++seg) {
      const auto first = segments_.begin() + bucket_start_[seg];
      const auto last = segments_.begin() + bucket_start_[seg + 1];
      if (!std::is_sorted(first, last, before)) std::sort(first, last, before);
    }
    // Formatted only for a message.
    auto who = [&] {
      return show_tp ? fmt::format("micro-batch {} (tp rank {})", microbatch, tp_rank)
                     : fmt::format("micro-batch {}", microbatch);
    };
    if (!pieces.empty()) fallback_op = pieces.front().op;
    size_t next = 0;
    for (int seg = 0; seg < segment_count; ++seg) {
      auto where = [&] { return DescribeUnits(breakpoints_[seg], breakpoints_[seg + 1]); };
      int cursor = 0;
      int last = -1;  // the op that covers up to `cursor`
      for (; next < segments_.size() && segments_[next].index == seg; ++next) {
        const Segment& p = segments_[next];
        if (p.t0 > cursor) {
          Report(last >= 0 ? last : p.op, fmt::format("{}: {} tokens {}-{} {} not covered", who(),
                                                      where(), cursor, p.t0, WorkName(work)));
          return;
        }
        if (p.t0 < cursor) {
          Report(p.op, fmt::format("{}: {} tokens {}-{} {} covered twice ({}, {})", who(), where(),
                                   p.t0, std::min(p.t1, cursor), WorkName(work),
                                   s_.Key(s_.ops[last]), s_.Key(s_.ops[p.op])));
          return;
        }
        cursor = p.t1;
        last = p.op;
      }
      if (cursor < s_.sequence) {
        Report(last >= 0 ? last : fallback_op,
               fmt::format("{}: {} tokens {}-{} {} not covered", who(), where(), cursor,
                           s_.sequence, WorkName(work)));
        return;
      }
    }
  }

  void Report(int op, std::string message) {
    out_.push_back(OpDiagnostic(s_, op, std::move(message)));
  }

 private:
  // The distinct units where a piece or the grid starts or ends, in order, and each one's
  // position among them: by a mark per unit when the units span a small range (as they do:
  // 0 to twice the layers), else by a sort.
  void Breakpoints(std::span<const Piece> pieces, int total_units) {
    int lo = 0, hi = total_units;
    for (const Piece& p : pieces) {
      lo = std::min({lo, p.u0, p.u1});
      hi = std::max({hi, p.u0, p.u1});
    }
    breakpoints_.clear();
    unit_lo_ = lo;
    const int64_t span = int64_t{hi} - lo + 1;
    if (span > 4 * static_cast<int64_t>(pieces.size()) + 4096) {
      unit_index_.clear();
      breakpoints_.assign({0, total_units});
      for (const Piece& p : pieces) {
        breakpoints_.push_back(p.u0);
        breakpoints_.push_back(p.u1);
      }
      std::sort(breakpoints_.begin(), breakpoints_.end());
      breakpoints_.erase(std::unique(breakpoints_.begin(), breakpoints_.end()), breakpoints_.end());
      return;
    }
    unit_index_.assign(static_cast<size_t>(span), -1);
    unit_index_[0 - lo] = 0;
    unit_index_[total_units - lo] = 0;
    for (const Piece& p : pieces) {
      unit_index_[p.u0 - lo] = 0;
      unit_index_[p.u1 - lo] = 0;
    }
    for (int64_t u = 0; u < span; ++u) {
      if (unit_index_[u] < 0) continue;
      unit_index_[u] = static_cast<int>(breakpoints_.size());
      breakpoints_.push_back(static_cast<int>(u + lo));
    }
  }
  int Breakpoint(int unit) const {
    if (!unit_index_.empty()) return unit_index_[unit - unit_lo_];
    return static_cast<int>(std::lower_bound(breakpoints_.begin(), breakpoints_.end(), unit) -
                            breakpoints_.begin());
  }

  const CompactSchedule& s_;
  std::vector<Diagnostic>& out_;
  std::vector<int> breakpoints_;  // scratch, reused across calls
  std::vector<int> unit_index_;   // unit - unit_lo_ -> its breakpoint (-1 none); empty: sorted
  int unit_lo_ = 0;
  std::vector<Segment> segments_;
  std::vector<size_t> bucket_start_;  // segment index -> its first place in segments_
  std::vector<size_t> bucket_fill_;
};

}  // namespace

void CheckCoverage(const CompactSchedule& s, const ScheduleIndex& ix,
                   std::vector<Diagnostic>& out) {
  const int n = static_cast<int>(s.ops.size());
  // The micro-batches in flat arrays (a map look-up per op was a third of this pass): `ids`
  // ascending, `infos` beside them.
  std::vector<int> ids;
  int largest = -1;
  for (const CompactOp& op : s.ops) {
    if (op.microbatch >= 0 && (ids.empty() || ids.back() != op.microbatch)) {
      ids.push_back(op.microbatch);
      largest = std::max(largest, op.microbatch);
    }
  }
  if (largest < (1 << 20)) {  // distinct by a flag per id rather than a sort
    std::vector<char> present(static_cast<size_t>(largest) + 1, 0);
    for (const int id : ids) present[id] = 1;
    ids.clear();
    for (int id = 0; id <= largest; ++id) {
      if (present[id]) ids.push_back(id);
    }
  } else {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
  std::vector<MicrobatchInfo> infos(ids.size());
  // The place of a micro-batch id in `ids`, the previous one's kept (ops come in runs of one).
  int last_id = -1;
  size_t last_place = 0;
  auto place_of = [&](int microbatch) {
    if (microbatch != last_id) {
      last_id = microbatch;
      last_place =
          static_cast<size_t>(std::lower_bound(ids.begin(), ids.end(), microbatch) - ids.begin());
    }
    return last_place;
  };
  auto info_of = [&](int microbatch) -> MicrobatchInfo& { return infos[place_of(microbatch)]; };
  std::vector<int> layer_compute;  // the layer compute ops, in op order
  bool recompute = false;          // some op is a RECOMPUTE
  for (int i = 0; i < n; ++i) {
    const CompactOp& op = s.ops[i];
    if (IsLayerCompute(op.kind)) layer_compute.push_back(i);
    recompute = recompute || op.kind == OpKind::kRecompute;
    if (op.microbatch < 0) continue;
    MicrobatchInfo& mb = info_of(op.microbatch);
    if (mb.first_op < 0) mb.first_op = i;
    if (op.rows > 0) {
      if (mb.rows_op < 0) {
        mb.rows = op.rows;
        mb.rows_op = i;
      } else if (op.rows != mb.rows) {
        const CompactOp& first = s.ops[mb.rows_op];
        out.push_back(OpDiagnostic(
            s, op,
            fmt::format("micro-batch {}: rows {} differ from rows {} of {} ({})", op.microbatch,
                        op.rows, mb.rows, s.Key(first),
                        first.line > 0 ? fmt::format("line {}", first.line) : "generated")));
      }
    }
    if (IsLayerCompute(op.kind)) {
      if (ix.group_of[i] >= 0) {
        mb.tp_ranks =
            std::max(mb.tp_ranks, static_cast<int>(s.groups[ix.group_of[i]].ranks.size()));
      }
      if (op.kind == OpKind::kBwdInput || op.kind == OpKind::kBwdWeight) mb.split_backward = true;
    }
  }
  if (s.batch > 0) {
    int64_t sequences = 0;
    for (const MicrobatchInfo& mb : infos) sequences += mb.rows;
    if (sequences != s.batch) {
      out.push_back({0, "",
                     fmt::format("the rows of all micro-batches add up to {}, but the header "
                                 "says batch {}",
                                 sequences, s.batch)});
    }
  }

  // The pieces, sorted by (micro-batch, tp rank, work, op). Generated in op order, so a
  // counting sort over the (micro-batch, tp rank, work) buckets keeps op order within each: a
  // first walk counts each bucket, a second places each piece (a piece's tp rank is below its
  // micro-batch's tp_ranks). With more buckets than pieces (a few micro-batches on huge
  // groups), a stable comparison sort instead.
  auto for_each_piece = [&](auto&& visit) {
    for (const int i : layer_compute) {
      const CompactOp& op = s.ops[i];
      const auto units = Units(op);  // not bindings: clang before 16 cannot capture those
      auto add = [&](Work work) {
        visit(Piece{op.microbatch, ix.tp_rank[i], work, units.first, units.second, op.tokens.begin,
                    op.tokens.end, i});
      };
      if (op.kind == OpKind::kFwd) add(Work::kForward);
      if (IsBackwardCoverage(op.kind)) add(Work::kBackward);
      if ((op.kind == OpKind::kBwd && info_of(op.microbatch).split_backward) ||
          op.kind == OpKind::kBwdWeight) {
        add(Work::kWeight);
      }
    }
  };
  std::vector<size_t> bucket_start(ids.size() + 1, 0);
  for (size_t k = 0; k < ids.size(); ++k) {
    bucket_start[k + 1] = bucket_start[k] + 3 * static_cast<size_t>(infos[k].tp_ranks);
  }
  auto bucket = [&](const Piece& p) {
    const size_t mb = place_of(p.microbatch);
    return bucket_start[mb] + 3 * static_cast<size_t>(p.tp_rank) + static_cast<size_t>(p.work);
  };
  std::vector<Piece> pieces;
  if (bucket_start.back() <= 4 * layer_compute.size() + 1024) {
    std::vector<size_t> next(bucket_start.back() + 1, 0);
    for_each_piece([&](const Piece& p) { ++next[bucket(p) + 1]; });
    for (size_t b = 1; b < next.size(); ++b) next[b] += next[b - 1];
    pieces.resize(next.back());
    for_each_piece([&](const Piece& p) { pieces[next[bucket(p)]++] = p; });
  } else {
    for_each_piece([&](const Piece& p) { pieces.push_back(p); });
    std::stable_sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) {
      return std::tie(a.microbatch, a.tp_rank, a.work) < std::tie(b.microbatch, b.tp_rank, b.work);
    });
  }

  CoverageChecker checker(s, out);
  size_t next = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    const int id = ids[k];
    const MicrobatchInfo& mb = infos[k];
    for (int tp = 0; tp < mb.tp_ranks; ++tp) {
      for (Work work : {Work::kForward, Work::kBackward, Work::kWeight}) {
        if (work == Work::kWeight && !mb.split_backward) continue;
        const size_t begin = next;
        while (next < pieces.size() && pieces[next].microbatch == id &&
               pieces[next].tp_rank == tp && pieces[next].work == work) {
          ++next;
        }
        checker.CheckOne(std::span<const Piece>(pieces.data() + begin, next - begin), id, tp,
                         mb.tp_ranks > 1, work, mb.first_op);
      }
    }
  }
  // Without a RECOMPUTE op nothing can be reported; skip the set of every forward.
  if (recompute) CheckRecomputeOrder(s, out);
}

void CheckRecompute(const CompactSchedule& s, std::vector<Diagnostic>& out) {
  if (std::any_of(s.ops.begin(), s.ops.end(),
                  [](const CompactOp& op) { return op.kind == OpKind::kRecompute; })) {
    CheckRecomputeOrder(s, out);
  }
}

namespace {

void CheckRecomputeOrder(const CompactSchedule& s, std::vector<Diagnostic>& out) {
  // (device, micro-batch, t0, layer, part) of what each device has run so far.
  using Unit = std::tuple<int, int, int, int, int>;
  std::set<Unit> forwards;
  std::map<Unit, int> pending;  // RECOMPUTE ops waiting for their backward
  for (int i = 0; i < static_cast<int>(s.ops.size()); ++i) {
    const CompactOp& op = s.ops[i];
    if (op.kind != OpKind::kFwd && op.kind != OpKind::kRecompute && !IsBackwardCoverage(op.kind)) {
      continue;
    }
    const Unit unit{op.device, op.microbatch, op.tokens.begin, op.layers.begin,
                    static_cast<int>(op.part)};
    if (op.kind == OpKind::kFwd) {
      forwards.insert(unit);
    } else if (op.kind == OpKind::kRecompute) {
      if (!forwards.count(unit)) {
        out.push_back(OpDiagnostic(
            s, op,
            fmt::format("micro-batch {}: RECOMPUTE of layer {} before its forward on dev {}",
                        op.microbatch, op.layers.begin, op.device)));
      }
      pending[unit] = i;
    } else {
      // A backward over [l0, l1) consumes the recomputation of any layer it covers.
      for (int l = op.layers.begin; l < op.layers.end; ++l) {
        pending.erase({op.device, op.microbatch, op.tokens.begin, l, static_cast<int>(op.part)});
      }
    }
  }
  for (const auto& [unit, i] : pending) {
    const CompactOp& op = s.ops[i];
    out.push_back(OpDiagnostic(
        s, op,
        fmt::format("micro-batch {}: RECOMPUTE of layer {} has no backward after it on dev {}",
                    op.microbatch, op.layers.begin, op.device)));
  }
}

}  // namespace

void CheckSliceOrder(const CompactSchedule& s, std::vector<Diagnostic>& out) {
  struct Lane {
    int device, stage, microbatch;
    bool forward;
    bool operator==(const Lane&) const = default;
  };
  struct LaneHash {
    size_t operator()(const Lane& l) const {
      uint64_t h = static_cast<uint32_t>(l.device);
      h = h * 0x100000001b3ULL ^ static_cast<uint32_t>(l.stage);
      h = h * 0x100000001b3ULL ^ static_cast<uint32_t>(l.microbatch);
      return std::hash<uint64_t>()(h * 2 + (l.forward ? 1 : 0));
    }
  };
  struct LaneState {
    int last_op;
    int last_begin;  // its tokens.begin
    bool reported;
  };
  std::unordered_map<Lane, LaneState, LaneHash> lanes;
  // The lane of the previous op (slices of one lane come in runs): its state, which a map's
  // element keeps at one address.
  Lane last_lane{};
  LaneState* last_state = nullptr;
  for (int i = 0; i < static_cast<int>(s.ops.size()); ++i) {
    const CompactOp& op = s.ops[i];
    const bool forward = op.kind == OpKind::kFwd;
    if (!forward && !IsBackwardCoverage(op.kind)) continue;
    const Lane key{op.device, op.stage, op.microbatch, forward};
    LaneState* state = last_state;
    if (state == nullptr || !(key == last_lane)) {
      auto [it, inserted] = lanes.try_emplace(key, LaneState{i, op.tokens.begin, false});
      last_lane = key;
      last_state = &it->second;
      if (inserted) continue;
      state = &it->second;
    }
    LaneState& lane = *state;
    const bool wrong =
        forward ? op.tokens.begin < lane.last_begin : op.tokens.begin > lane.last_begin;
    if (wrong && !lane.reported) {
      lane.reported = true;
      const CompactOp& last = s.ops[lane.last_op];
      out.push_back(OpDiagnostic(
          s, op,
          fmt::format("micro-batch {}: {} slice {}-{} issued after slice {}-{} ({}) on dev {} "
                      "stage {}; {} slices must run in {} token order",
                      op.microbatch, forward ? "forward" : "backward", op.tokens.begin,
                      op.tokens.end, last.tokens.begin, last.tokens.end, s.Key(last), op.device,
                      op.stage, forward ? "forward" : "backward",
                      forward ? "ascending" : "descending")));
    }
    lane.last_op = i;
    lane.last_begin = op.tokens.begin;
  }
}

}  // namespace terasim

#include "schedule/slicing_candidates.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <limits>
#include <utility>

#include "models/errors.h"

#if defined(__x86_64__) && defined(__linux__)
#define TERASIM_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TERASIM_AVX2_CLONES
#endif

namespace terasim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// With at least kSampleFrom unit positions, only the rows every kSampleTokens tokens (at
// least every unit) are evaluated before the bounds have pruned the edges (below that,
// every row: the search is cheap). Costs grow little over that much context. Where they
// grow faster (a kSampleTokens-token slice of the largest micro-batch at mid-sequence costs
// more than kSteepGrowth more after kSampleTokens more context), bounds from such rows
// prune little, and the rows every kSteepSampleTokens tokens are evaluated instead. Either
// way the bounds are valid; this only trades cost evaluations against pruning.
constexpr int kSampleTokens = 64;
constexpr int kSteepSampleTokens = 16;
constexpr double kSteepGrowth = 0.0045;
// After the first pruning, the surviving edges of coarsely sampled rows are bounded again
// from the rows every kRefineTokens tokens (at least every unit) before exact costs.
constexpr int kRefineTokens = 8;
constexpr int kSampleFrom = 64;
// An interval of t narrower than this fraction of its top is not split further.
constexpr double kLeafWidth = 0.002;
// At most this many level DP passes per branch and bound; the intervals left are taken
// whole (coarser bounds, never wrong).
constexpr int kMaxPasses = 96;

// One size's edges during the search: costs are lower bounds until `exact` says otherwise.
// Two forms. Listed: the edges one by one (edges, exact, row_begin, keep). Sampled (the
// first branch and bound, before any pruning): row i's edges are the whole-unit slices
// k = 1..row_len[i], costing block_cost[i / stride][k - 1] (the block's sampled row; past
// its end, its last entry), and, when ragged_cost[i] > 0, the ragged slice to the end; the
// edges kept are collected in `kept` as Id(i, k).
struct Work {
  SizeCandidates edges;
  std::vector<char> exact;
  std::vector<uint32_t> row_begin;  // edges of row i: [row_begin[i], row_begin[i + 1])
  std::vector<char> keep;           // set by the branch and bound
  std::vector<uint32_t> parent;     // the last edge (in units) of edges.prefix's best path

  bool sampled = false;
  int stride = 1;
  std::vector<std::vector<double>> block_cost;  // exact in row block * stride
  std::vector<uint32_t> row_len;
  std::vector<double> ragged_cost;  // by row; 0: no ragged slice
  std::vector<uint64_t> kept;
  bool keep_all = false;
  uint32_t max_len = 0;          // the longest row_len
  std::vector<uint32_t> within;  // SolveLevel's scratch

  // The slice lengths (in units) of edges.prefix's best path at `level`, last to first, as
  // the last SolveLevel left it: the same path in both forms (of the edges into a position
  // that reach its best value, the one from the lowest row).
  std::vector<int> PathUnits(int positions, double level) const {
    std::vector<int> units;
    for (int pos = positions; pos > 0;) {
      int step = 0;
      if (!sampled) {
        step = static_cast<int>(parent[pos]);
      } else {
        const bool ragged_end = pos == positions;
        for (int i = ragged_end ? 0 : std::max(0, pos - static_cast<int>(max_len)); i < pos; ++i) {
          const double x = SampledCost(i, pos - i);
          if (x >= 0 && x <= level && edges.prefix[i] + x == edges.prefix[pos]) {
            step = pos - i;
            break;
          }
        }
      }
      TERASIM_CHECK(step > 0, "no best path into unit {}", pos);
      units.push_back(step);
      pos -= step;
    }
    return units;
  }

  // The cost of sampled edge (i, i + k); -1 when there is none.
  double SampledCost(int i, int k) const {
    if (static_cast<uint32_t>(k) <= row_len[i]) {
      const std::vector<double>& costs = block_cost[i / stride];
      return costs.empty() ? 0 : costs[std::min<size_t>(k, costs.size()) - 1];
    }
    if (ragged_cost[i] > 0 && i + k == static_cast<int>(row_len.size())) return ragged_cost[i];
    return -1;
  }

  static uint64_t Id(uint32_t from, uint32_t units) {
    return (static_cast<uint64_t>(from) << 32) | units;
  }

  // Calls fn(cost, units, id) for row i's edges costing at most `level`, in order, until fn
  // returns false. Ids are edge indices (listed) or Id(i, k) (sampled).
  template <typename Fn>
  void ForRow(int i, double level, const Fn& fn) const {
    if (!sampled) {
      for (uint32_t e = row_begin[i]; e < row_begin[i + 1] && edges.cost[e] <= level; ++e) {
        if (!fn(edges.cost[e], edges.units[e], uint64_t{e})) return;
      }
      return;
    }
    const std::vector<double>& costs = block_cost[i / stride];
    const uint32_t len = row_len[i];
    const uint32_t listed = std::min<uint32_t>(len, static_cast<uint32_t>(costs.size()));
    uint32_t k = 1;
    for (; k <= listed; ++k) {
      const double x = costs[k - 1];
      if (x > level) return;
      if (!fn(x, k, Id(i, k))) return;
    }
    const double tail = costs.empty() ? 0 : costs.back();
    for (; k <= len; ++k) {
      if (tail > level) return;
      if (!fn(tail, k, Id(i, k))) return;
    }
    const double r = ragged_cost[i];
    if (r > 0 && r <= level) {
      const uint32_t units = static_cast<uint32_t>(row_len.size()) - i;
      fn(r, units, Id(i, units));
    }
  }

  void Keep(uint64_t id) {
    if (sampled) {
      kept.push_back(id);
    } else {
      keep[id] = 1;
    }
  }

  double MaxCost() const {
    double top = 0;
    for (double x : edges.cost) top = std::max(top, x);
    for (const auto& costs : block_cost) {
      if (!costs.empty()) top = std::max(top, costs.back());
    }
    for (double x : ragged_cost) top = std::max(top, x);
    return top;
  }

  void IndexRows(int positions) {
    row_begin.assign(positions + 2, 0);
    for (uint32_t from : edges.from) ++row_begin[from + 1];
    for (int i = 0; i <= positions; ++i) row_begin[i + 1] += row_begin[i];
  }

  // Keeps the edges with keep[e] set (all of them when keep is empty). A sampled Work
  // becomes a listed one holding its kept edges (every edge with keep_all).
  void Compact() {
    if (sampled) {
      ListKept();
      return;
    }
    size_t kept_edges = 0;
    for (size_t e = 0; e < edges.cost.size(); ++e) {
      if (!keep.empty() && !keep[e]) continue;
      edges.cost[kept_edges] = edges.cost[e];
      edges.from[kept_edges] = edges.from[e];
      edges.units[kept_edges] = edges.units[e];
      exact[kept_edges] = exact[e];
      ++kept_edges;
    }
    edges.cost.resize(kept_edges);
    edges.from.resize(kept_edges);
    edges.units.resize(kept_edges);
    exact.resize(kept_edges);
    keep.clear();
  }

 private:
  void ListKept() {
    const int positions = static_cast<int>(row_len.size());
    if (keep_all) {
      kept.clear();
      for (int i = 0; i < positions; ++i) {
        ForRow(i, kInf, [&](double, uint32_t, uint64_t id) {
          kept.push_back(id);
          return true;
        });
      }
    }
    if (!std::is_sorted(kept.begin(), kept.end())) std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    edges.cost.clear();
    edges.from.clear();
    edges.units.clear();
    exact.clear();
    for (uint64_t id : kept) {
      const uint32_t from = static_cast<uint32_t>(id >> 32), units = static_cast<uint32_t>(id);
      const bool ragged = ragged_cost[from] > 0 && from + units == row_len.size();
      const std::vector<double>& costs = block_cost[from / stride];
      const bool first_row = from % stride == 0;
      double x = ragged          ? ragged_cost[from]
                 : costs.empty() ? 0
                                 : costs[std::min<size_t>(units, costs.size()) - 1];
      edges.cost.push_back(x);
      edges.from.push_back(from);
      edges.units.push_back(units);
      exact.push_back(ragged || (first_row && units <= costs.size()));
    }
    sampled = false;
    keep_all = false;
    kept = {};
    block_cost = {};
    row_len = {};
    ragged_cost = {};
    keep.clear();
    IndexRows(positions);
  }
};

// Runs fn(s) for s = 0..n-1 on up to two threads; rethrows a worker's error.
template <typename Fn>
void ForEachSize(size_t n, const Fn& fn) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t s = next++; s < n; s = next++) fn(s);
  };
  std::future<void> helper;
  if (n > 1) helper = std::async(std::launch::async, worker);
  worker();
  if (helper.valid()) helper.get();
}

// Fills prefix (and suffix when asked) of w->edges over the edges costing at most `level`.
// Rows are in order (a topological order of the DAG) and costs within a row do not decrease,
// so each row stops at its first edge over the level.
// SolveLevel of a sampled Work (prefix already reset). Row i relaxes its first m whole-unit
// edges, m from the block's count of costs within the level (costs do not decrease along a
// row): plain loops over contiguous costs, with no parent (Work::PathUnits recovers it).
// Most of the search's time is in these loops: on x86-64 Linux an AVX2 copy is chosen at
// load time where the CPU has it (4 doubles per instruction; adds and minima are exact, so
// the results are the same bits).
TERASIM_AVX2_CLONES void SolveSampledLevel(int positions, double level, bool with_suffix, Work* w) {
  SizeCandidates& c = w->edges;
  // within[b]: how many whole-unit edges of block b's rows (at most) cost <= level.
  std::vector<uint32_t>& within = w->within;
  within.resize(w->block_cost.size());
  for (size_t b = 0; b < w->block_cost.size(); ++b) {
    const std::vector<double>& costs = w->block_cost[b];
    const size_t n = std::upper_bound(costs.begin(), costs.end(), level) - costs.begin();
    within[b] = n == costs.size() ? std::numeric_limits<uint32_t>::max() : n;
  }
  double* prefix = c.prefix.data();
  // Row i's edges from its k-th on, and its ragged one (inlined: part of the AVX2 copy).
  auto relax = [&](int i, uint32_t from_k) __attribute__((always_inline)) {
    const double here = prefix[i];
    const std::vector<double>& costs = w->block_cost[i / w->stride];
    const uint32_t m = std::min(w->row_len[i], within[i / w->stride]);
    const uint32_t listed = std::min<uint32_t>(m, static_cast<uint32_t>(costs.size()));
    double* out = prefix + i + 1;
    const double* x = costs.data();
    for (uint32_t k = from_k; k < listed; ++k) out[k] = std::min(out[k], here + x[k]);
    const double tail = here + (costs.empty() ? 0 : costs.back());
    for (uint32_t k = std::max(listed, from_k); k < m; ++k) out[k] = std::min(out[k], tail);
    const double r = w->ragged_cost[i];
    if (r > 0 && r <= level) prefix[positions] = std::min(prefix[positions], here + r);
  };
  for (int i = 0; i < positions; ++i) {
    const double here = prefix[i];
    if (!(here < kInf)) continue;
    const int block = i / w->stride;
    const std::vector<double>& costs = w->block_cost[block];
    const uint32_t listed = std::min<uint32_t>(std::min(w->row_len[i], within[block]),
                                               static_cast<uint32_t>(costs.size()));
    if (i + 1 < positions && (i + 1) / w->stride == block && listed > 0) {
      // Rows i and i + 1 share the block's costs: once row i's first edge has made
      // prefix[i + 1] final, one pass relaxes both rows' listed edges into the same
      // positions (half the loads and stores; minima of the same values, so the same bits).
      const double* x = costs.data();
      double* out = prefix + i + 1;
      out[0] = std::min(out[0], here + x[0]);
      const double next = out[0];
      const uint32_t listed_next = std::min<uint32_t>(std::min(w->row_len[i + 1], within[block]),
                                                      static_cast<uint32_t>(costs.size()));
      const uint32_t both = std::min(listed, listed_next + 1);
      for (uint32_t k = 1; k < both; ++k) {
        out[k] = std::min(out[k], std::min(here + x[k], next + x[k - 1]));
      }
      relax(i, std::max<uint32_t>(both, 1));
      relax(i + 1, both - 1);
      ++i;
      continue;
    }
    relax(i, 0);
  }
  if (!with_suffix) return;
  c.suffix.assign(positions + 1, kInf);
  double* suffix = c.suffix.data();
  suffix[positions] = 0;
  for (int i = positions - 1; i >= 0; --i) {
    const std::vector<double>& costs = w->block_cost[i / w->stride];
    const uint32_t m = std::min(w->row_len[i], within[i / w->stride]);
    const uint32_t listed = std::min<uint32_t>(m, static_cast<uint32_t>(costs.size()));
    const double* after = suffix + i + 1;
    const double* x = costs.data();
    // Minima in four independent lanes (vectorizable; the minimum of the same values, so
    // the same bits). Past the listed costs, tail + min(after) = min(tail + after): rounding
    // keeps the order.
    double edge[4] = {kInf, kInf, kInf, kInf}, later[4] = {kInf, kInf, kInf, kInf};
    uint32_t k = 0;
    for (; k + 4 <= listed; k += 4) {
      for (int j = 0; j < 4; ++j) edge[j] = std::min(edge[j], x[k + j] + after[k + j]);
    }
    for (; k < listed; ++k) edge[0] = std::min(edge[0], x[k] + after[k]);
    for (; k + 4 <= m; k += 4) {
      for (int j = 0; j < 4; ++j) later[j] = std::min(later[j], after[k + j]);
    }
    for (; k < m; ++k) later[0] = std::min(later[0], after[k]);
    const double tail = costs.empty() ? 0 : costs.back();
    double best = std::min(std::min(edge[0], edge[1]), std::min(edge[2], edge[3]));
    best =
        std::min(best, tail + std::min(std::min(later[0], later[1]), std::min(later[2], later[3])));
    const double r = w->ragged_cost[i];
    if (r > 0 && r <= level) best = std::min(best, r + suffix[positions]);
    suffix[i] = best;
  }
}

void SolveLevel(int positions, double level, bool with_suffix, Work* w) {
  SizeCandidates& c = w->edges;
  c.prefix.assign(positions + 1, kInf);
  c.prefix[0] = 0;
  if (w->sampled) {
    SolveSampledLevel(positions, level, with_suffix, w);
    return;
  }
  w->parent.assign(positions + 1, 0);
  for (int i = 0; i < positions; ++i) {
    const double here = c.prefix[i];
    if (!(here < kInf)) continue;
    w->ForRow(i, level, [&](double x, uint32_t units, uint64_t) {
      const uint32_t to = i + units;
      if (here + x < c.prefix[to]) {
        c.prefix[to] = here + x;
        w->parent[to] = units;
      }
      return true;
    });
  }
  if (!with_suffix) return;
  c.suffix.assign(positions + 1, kInf);
  c.suffix[positions] = 0;
  for (int i = positions - 1; i >= 0; --i) {
    double best = kInf;
    w->ForRow(i, level, [&](double x, uint32_t units, uint64_t) {
      best = std::min(best, x + c.suffix[i + units]);
      return true;
    });
    c.suffix[i] = best;
  }
}

// The cost of a unit, checked.
double CheckedCost(const SlicingProblem& p, int rows, int tokens, int context) {
  const double c = (*p.cost)(rows, tokens, context);
  if (!(c > 0)) ThrowInput("planner: slice cost must be > 0 (got {})", c);
  return c;
}

double Limit(const Incumbent& incumbent) { return incumbent.latency * (1 + kSlack); }

// The plan of the level DPs just solved (each size's best path, combined as BatchSum does),
// costed exactly: it replaces the incumbent when faster.
void TryPlan(const SlicingProblem& p, const std::vector<Work>& work, double level,
             const std::vector<double>& totals, Incumbent* incumbent) {
  if (!p.improve_incumbent) return;
  std::vector<int> chosen;
  if (!(BatchSum(p, totals, &chosen) < kInf)) return;
  std::vector<MicrobatchPlan> plan;
  double sum = 0, max = 0;
  double size_sum = 0;  // of the last micro-batch costed (chosen repeats sizes in a row)
  for (size_t i = 0; i < chosen.size(); ++i) {
    const int s = chosen[i];
    if (i > 0 && chosen[i - 1] == s) {
      plan.push_back(plan.back());
      sum += size_sum;
      continue;
    }
    MicrobatchPlan mb{p.sizes[s], {}};
    const std::vector<int> units = work[s].PathUnits(p.positions, level);
    size_sum = 0;
    for (int unit = 0, k = static_cast<int>(units.size()) - 1; k >= 0; unit += units[k--]) {
      const int context = p.TokenAt(unit);
      mb.slices.push_back(p.TokenAt(unit + units[k]) - context);
      const double c = CheckedCost(p, mb.rows, mb.slices.back(), context);
      size_sum += c;
      max = std::max(max, c);
    }
    sum += size_sum;
    plan.push_back(std::move(mb));
  }
  const double latency = sum + (p.request->stages - 1) * max;
  if (latency < incumbent->latency) {
    incumbent->microbatches = std::move(plan);
    incumbent->latency = latency;
  }
}

// For each size index s, a lower bound of the sum of the batch's other micro-batches in a
// plan that holds one of size s, given lower bounds totals[] of each size's micro-batch.
std::vector<double> RestBounds(const SlicingProblem& p, const std::vector<double>& totals) {
  const SlicingRequest& req = *p.request;
  std::vector<double> rest(p.sizes.size());
  if (req.shared_slicing) {
    // Every micro-batch has the same size and slicing.
    for (size_t s = 0; s < p.sizes.size(); ++s) {
      rest[s] = (req.batch / p.sizes[s] - 1) * totals[s];
    }
    return rest;
  }
  std::vector<double> f;
  KnapsackTable(req.batch, p.sizes, totals, &f, nullptr);
  for (size_t s = 0; s < p.sizes.size(); ++s) rest[s] = f[req.batch - p.sizes[s]];
  return rest;
}

// The cheapest per-token rate of a slice costing at most t, over slices without context
// (a slice with context costs at least the same slice without: its rate is no lower, and
// it costs no less, so it is among these when it costs at most t).
class RateCurve {
 public:
  RateCurve() = default;
  // points: (cost, rate) of each slice without context.
  explicit RateCurve(std::vector<std::pair<double, double>> points) {
    std::sort(points.begin(), points.end());
    for (const auto& [cost, rate] : points) {
      cost_.push_back(cost);
      rate_.push_back(rate_.empty() ? rate : std::min(rate_.back(), rate));
    }
  }
  // kInf when no slice costs at most t.
  double Rate(double t) const {
    const size_t n = std::upper_bound(cost_.begin(), cost_.end(), t) - cost_.begin();
    return n == 0 ? kInf : rate_[n - 1];
  }
  double Cheapest() const { return cost_.empty() ? kInf : cost_.front(); }

 private:
  std::vector<double> cost_;  // ascending
  std::vector<double> rate_;  // the cheapest rate among cost_[0..i]
};

// For each size, a cost above which no slice of that size is in a plan within `limit` (0:
// none is). A plan whose largest unit costs t in [t_j, t_j+1] takes at least
//     (K - 1) t_j + b L rate_b(t_j+1) + rest_b(t_j+1)
// (every slice of it costs at most t_j+1, so runs at no better than that rate, and so do
// the other micro-batches); a slice of cost x is only in plans with t >= x. The levels t_j
// are a geometric grid from the cheapest slice to limit / K (where K t reaches the limit).
std::vector<double> CostCaps(const SlicingProblem& p, const std::vector<RateCurve>& curves,
                             double limit) {
  const SlicingRequest& req = *p.request;
  const size_t n = p.sizes.size();
  std::vector<double> cap(n, kInf);
  if (!(limit < kInf)) return cap;
  double t = kInf;
  for (const RateCurve& c : curves) t = std::min(t, c.Cheapest());
  const double top = limit / req.stages;
  if (!(t < top)) return std::vector<double>(n, 0);
  std::fill(cap.begin(), cap.end(), 0);
  constexpr double kStep = 1.0 + 1.0 / 256;
  std::vector<double> totals(n);
  while (t < top) {
    const double next = std::min(t * kStep, top);
    for (size_t s = 0; s < n; ++s) {
      totals[s] = curves[s].Rate(next) * p.sizes[s] * req.sequence;
    }
    const std::vector<double> rest = RestBounds(p, totals);
    for (size_t s = 0; s < n; ++s) {
      if ((req.stages - 1) * t + totals[s] + rest[s] < limit) cap[s] = next;
    }
    t = next;
  }
  return cap;
}

// Step 1: every edge that passes the cheap bounds, with lower-bound costs from sampled rows.
// A plan holding edge (b, i, k) of cost c has latency at least
//     (K - 1) c + prefix_b(i) + c + rate_b * b * (tokens after the slice) + rest_b,
// where rate_b is the cheapest per-token rate of a slice without context, rest_b the other
// micro-batches at their rates, and prefix_b(i) the cheapest way to unit i over the edges
// kept so far (rows are generated in order, so it is final when row i starts). As c >=
// rate_b * b * (its tokens), each row stops once (K - 1) c + prefix_b(i) + rate_b * b *
// (tokens from i) + rest_b, or K c, reaches the limit.
std::vector<Work> GenerateEdges(const SlicingProblem& p, double limit) {
  const SlicingRequest& req = *p.request;
  const int positions = p.positions;
  const int g = req.granularity;
  const double k_minus_1 = req.stages - 1;
  const size_t n = p.sizes.size();
  auto checked = [&](int rows, int tokens, int context) {
    return CheckedCost(p, rows, tokens, context);
  };
  // Rates, from the slices without context (row 0 of the edges: kept for reuse). Slice
  // lengths are whole units or reach the (ragged) end of the sequence. A plan within the
  // limit has no unit costing limit / K or more (K times its largest unit bounds it), so
  // row 0 stops at its first such slice (longer ones cost no less): the rates are those of
  // the slices a plan within the limit may hold.
  std::vector<double> rate(n, kInf);
  std::vector<std::vector<double>> row0(n);
  std::vector<RateCurve> curves(n);
  ForEachSize(n, [&](size_t s) {
    const double b = p.sizes[s];
    std::vector<std::pair<double, double>> points;  // (cost, per-token rate)
    bool whole = true;                              // row 0 still below the limit
    for (int u = 1; u <= positions; ++u) {
      if (whole) {
        row0[s].push_back(checked(p.sizes[s], p.TokenAt(u), 0));
        points.emplace_back(row0[s].back(), row0[s].back() / (b * p.TokenAt(u)));
        whole = req.stages * row0[s].back() < limit;
      }
      if (req.sequence % g != 0 && u > 1) {
        const int to_end = req.sequence - p.TokenAt(u - 1);  // a last slice from unit u - 1
        const double x = checked(p.sizes[s], to_end, 0);
        points.emplace_back(x, x / (b * to_end));
      } else if (!whole) {
        break;
      }
    }
    curves[s] = RateCurve(std::move(points));
    rate[s] = curves[s].Rate(kInf);
  });
  std::vector<double> rate_totals(n);
  for (size_t s = 0; s < n; ++s) rate_totals[s] = rate[s] * p.sizes[s] * req.sequence;
  const std::vector<double> rest_by_rate = RestBounds(p, rate_totals);
  const std::vector<double> cap = CostCaps(p, curves, limit);
  int sample_tokens = kSampleTokens;
  if (req.sequence >= 4 * kSampleTokens) {
    const int b = p.sizes.back(), mid = req.sequence / 2;
    const double here = checked(b, kSampleTokens, mid);
    const double later = checked(b, kSampleTokens, mid + kSampleTokens);
    if (later > here * (1 + kSteepGrowth)) sample_tokens = kSteepSampleTokens;
  }
  const int stride = positions >= kSampleFrom ? std::max(1, sample_tokens / g) : 1;

  std::vector<Work> work(n);
  ForEachSize(n, [&](size_t s) {
    Work& w = work[s];
    SizeCandidates& c = w.edges;
    const int rows = p.sizes[s];
    const double per_token = rate[s] * rows;
    const double rest = rest_by_rate[s];
    w.sampled = true;
    w.stride = stride;
    w.block_cost.resize((positions + stride - 1) / stride);
    w.row_len.assign(positions, 0);
    w.ragged_cost.assign(positions, 0);
    c.prefix.assign(positions + 1, kInf);
    c.prefix[0] = 0;
    if (!(rest < kInf) || !(cap[s] > 0)) return;
    // The lowest row floor any row can have (every prefix costs at least its tokens' rate).
    const double global_floor = per_token * req.sequence + rest;
    int sampled_row = -1;
    for (int i = 0; i < positions; ++i) {
      const double here = c.prefix[i];
      if (!(here < kInf)) continue;
      const double row_floor = here + per_token * (req.sequence - p.TokenAt(i)) + rest;
      if (row_floor >= limit) continue;
      const int block = i - i % stride;
      std::vector<double>& sampled = w.block_cost[block / stride];
      if (sampled_row != block) {
        // Sample the block's first row (whole-unit slices) as far as any row of the block
        // may need.
        const double floor = stride == 1 ? row_floor : global_floor;
        sampled_row = block;
        for (int k = 1; block + k <= positions; ++k) {
          const int tokens = p.TokenAt(block + k) - p.TokenAt(block);
          if (tokens != k * g) break;  // a ragged last slice: evaluated where it is used
          const double x = block == 0 ? row0[s][k - 1] : checked(rows, tokens, p.TokenAt(block));
          sampled.push_back(x);
          if (k_minus_1 * x + floor >= limit || req.stages * x >= limit || x > cap[s]) break;
        }
      }
      auto fails = [&](double x) {
        return k_minus_1 * x + row_floor >= limit || req.stages * x >= limit || x > cap[s];
      };
      // Whole-unit slices; less context (and, past the sampled lengths, a shorter slice)
      // costs no more than the sampled row's.
      // fails() rises with x, and x with k: the row is the whole-unit slices before the
      // first that fails (found by bisection over the sampled lengths).
      const bool ragged = req.sequence % g != 0;
      const uint32_t whole = positions - i - (ragged ? 1 : 0);
      const uint32_t listed = std::min<uint32_t>(whole, static_cast<uint32_t>(sampled.size()));
      const uint32_t pass = std::partition_point(sampled.begin(), sampled.begin() + listed,
                                                 [&](double x) { return !fails(x); }) -
                            sampled.begin();
      const double tail = sampled.empty() ? 0 : sampled.back();
      const uint32_t len = pass < listed || fails(tail) ? pass : whole;
      w.row_len[i] = len;
      w.max_len = std::max(w.max_len, len);
      double* out = c.prefix.data() + i + 1;
      for (uint32_t k = 0; k < std::min(len, listed); ++k) {
        out[k] = std::min(out[k], here + sampled[k]);
      }
      for (uint32_t k = listed; k < len; ++k) out[k] = std::min(out[k], here + tail);
      if (ragged && len == whole) {  // the ragged slice to the end
        const double x = checked(rows, req.sequence - p.TokenAt(i), p.TokenAt(i));
        if (!fails(x)) {
          w.ragged_cost[i] = x;
          c.prefix[positions] = std::min(c.prefix[positions], here + x);
        }
      }
    }
  });
  return work;
}

// The costs of a listed Work's inexact edges bounded from the rows every `refine` units:
// edge (i, k) takes the cost of k units after the context of row i - i % refine (exact when
// that is row i). Each (row, length) pair is evaluated once.
void RefineCosts(const SlicingProblem& p, int rows, int refine, Work* w) {
  SizeCandidates& c = w->edges;
  std::vector<double> memo;  // by length, for the current block
  std::vector<uint32_t> filled;
  int block = -1;
  for (size_t e = 0; e < c.cost.size(); ++e) {
    if (w->exact[e]) continue;
    const int from = static_cast<int>(c.from[e]);
    if (from - from % refine != block) {
      for (uint32_t k : filled) memo[k] = 0;
      filled.clear();
      block = from - from % refine;
    }
    const uint32_t k = c.units[e];
    if (memo.size() <= k) memo.resize(k + 1, 0);
    if (memo[k] == 0) {
      const int context = p.TokenAt(block);
      memo[k] = CheckedCost(p, rows, p.TokenAt(block + static_cast<int>(k)) - context, context);
      filled.push_back(k);
    }
    c.cost[e] = memo[k];
    w->exact[e] = from == block;
  }
}

// Step 2: branch and bound over t (see the header); marks in each Work::keep the edges that
// survive some interval.
void BranchAndBound(const SlicingProblem& p, Incumbent* incumbent, std::vector<Work>* work) {
  const SlicingRequest& req = *p.request;
  const double k_minus_1 = req.stages - 1;
  const size_t n = p.sizes.size();
  double top = 0;
  for (auto& w : *work) {
    w.keep.assign(w.edges.cost.size(), 0);
    w.kept.clear();
    top = std::max(top, w.MaxCost());
  }
  int passes = 0;
  std::vector<double> totals(n);
  // Sizes that no plan in an interval (nor in its sub-intervals) beating the incumbent can
  // use are "dead" there: their DPs are skipped and their totals taken as kInf (the plans
  // that can still win use none of them, so every bound stays valid for those plans).
  std::vector<char> dead(n, 0);
  auto sum_at = [&](double level) {
    ++passes;
    // Each size's level DP is independent of the others: two threads share them.
    ForEachSize(n, [&](size_t s) {
      if (dead[s]) {
        totals[s] = kInf;
        return;
      }
      SolveLevel(p.positions, level, false, &(*work)[s]);
      totals[s] = (*work)[s].edges.prefix[p.positions];
    });
    TryPlan(p, *work, level, totals, incumbent);
    return BatchSum(p, totals, nullptr);
  };
  // Marks dead the sizes whose micro-batch, at the totals just solved (at some hi), cannot
  // be in a plan with t >= lo that beats the incumbent: (K - 1) lo + total + rest >= limit.
  // Totals only grow as hi falls and lo only rises in sub-intervals: they stay dead there.
  auto mark_dead = [&](double lo) {
    const double lim = Limit(*incumbent);
    const std::vector<double> rest = RestBounds(p, totals);
    for (size_t s = 0; s < n; ++s) {
      if (!(k_minus_1 * lo + totals[s] + rest[s] < lim)) dead[s] = 1;
    }
  };
  const double sum_top = sum_at(top);
  double limit = Limit(*incumbent);
  if (!(limit < kInf)) {
    for (auto& w : *work) {
      w.keep.assign(w.edges.cost.size(), 1);
      w.keep_all = true;
    }
    return;
  }
  mark_dead(0);
  // An interval [lo, hi] of t where every plan takes at least (K - 1) lo + sum_hi, and the
  // sizes dead in it.
  struct Interval {
    double lo, hi, sum_hi;
    std::vector<char> dead;
  };
  auto leaf = [&](const Interval& iv) {
    ++passes;
    ForEachSize(n, [&](size_t s) {
      if (dead[s]) {
        totals[s] = kInf;
        return;
      }
      SolveLevel(p.positions, iv.hi, true, &(*work)[s]);
      totals[s] = (*work)[s].edges.prefix[p.positions];
    });
    TryPlan(p, *work, iv.hi, totals, incumbent);
    limit = Limit(*incumbent);
    const std::vector<double> rest = RestBounds(p, totals);
    ForEachSize(n, [&](size_t s) {
      Work& w = (*work)[s];
      const SizeCandidates& c = w.edges;
      const double base = k_minus_1 * iv.lo;
      if (!(base + totals[s] + rest[s] < limit)) return;
      const size_t kept_before = w.kept.size();
      for (int i = 0; i < p.positions; ++i) {
        // Every path through row i costs at least prefix(i) + suffix(i).
        const double row_floor = c.prefix[i] + c.suffix[i] + rest[s];
        if (!(base + row_floor < limit)) continue;
        w.ForRow(i, iv.hi, [&](double x, uint32_t units, uint64_t id) {
          if (k_minus_1 * x + row_floor >= limit) return false;  // rises with x
          const double bound =
              k_minus_1 * std::max(x, iv.lo) + c.prefix[i] + x + c.suffix[i + units] + rest[s];
          if (bound < limit) w.Keep(id);
          return true;
        });
      }
      // Ids come in order within a leaf: merge them with the earlier leaves' once.
      std::inplace_merge(w.kept.begin(), w.kept.begin() + kept_before, w.kept.end());
      w.kept.erase(std::unique(w.kept.begin(), w.kept.end()), w.kept.end());
    });
  };
  std::vector<Interval> stack;
  stack.push_back({0, top, sum_top, dead});
  while (!stack.empty()) {
    Interval iv = std::move(stack.back());
    stack.pop_back();
    dead = std::move(iv.dead);
    for (;;) {
      limit = Limit(*incumbent);
      if (!(k_minus_1 * iv.lo + iv.sum_hi < limit) || !(req.stages * iv.lo < limit)) break;
      if (req.stages > 1) {
        // Plans with t in [cap, hi] take at least (K - 1) cap + sum_hi = limit.
        const double cap = (limit - iv.sum_hi) / k_minus_1;
        if (cap < iv.hi * (1 - kLeafWidth) && passes < kMaxPasses) {
          iv.hi = cap;
          iv.sum_hi = sum_at(cap);
          mark_dead(iv.lo);
          continue;
        }
        iv.hi = std::min(iv.hi, cap);
      }
      if (req.stages == 1 || iv.hi - iv.lo <= kLeafWidth * iv.hi || passes >= kMaxPasses) {
        leaf(iv);
        break;
      }
      const double mid = 0.5 * (iv.lo + iv.hi);
      stack.push_back({mid, iv.hi, iv.sum_hi, dead});
      iv = {iv.lo, mid, sum_at(mid), {}};
      mark_dead(iv.lo);
    }
  }
}

}  // namespace

double BatchSum(const SlicingProblem& p, const std::vector<double>& totals,
                std::vector<int>* chosen) {
  const SlicingRequest& req = *p.request;
  const std::vector<int>& sizes = p.sizes;
  if (req.shared_slicing) {
    double best = kInf;
    for (size_t s = 0; s < sizes.size(); ++s) {
      const double v = (req.batch / sizes[s]) * totals[s];
      if (v < best) {
        best = v;
        if (chosen != nullptr) chosen->assign(req.batch / sizes[s], static_cast<int>(s));
      }
    }
    return best;
  }
  std::vector<double> f;
  std::vector<int> pick;
  KnapsackTable(req.batch, sizes, totals, &f, chosen != nullptr ? &pick : nullptr);
  if (chosen != nullptr && f[req.batch] < kInf) {
    chosen->clear();
    for (int r = req.batch; r > 0; r -= sizes[pick[r]]) chosen->push_back(pick[r]);
    // Larger micro-batches first, then by index: a canonical order.
    std::sort(chosen->begin(), chosen->end(),
              [&](int a, int b) { return sizes[a] != sizes[b] ? sizes[a] > sizes[b] : a < b; });
  }
  return f[req.batch];
}

void KnapsackTable(int batch, const std::vector<int>& sizes, const std::vector<double>& totals,
                   std::vector<double>* f, std::vector<int>* pick) {
  f->assign(batch + 1, kInf);
  if (pick != nullptr) pick->assign(batch + 1, -1);
  (*f)[0] = 0;
  for (int r = 1; r <= batch; ++r) {
    double best = kInf;
    int best_s = -1;
    for (size_t s = 0; s < sizes.size() && sizes[s] <= r; ++s) {
      const double v = (*f)[r - sizes[s]] + totals[s];
      if (v < best) {
        best = v;
        best_s = static_cast<int>(s);
      }
    }
    (*f)[r] = best;
    if (pick != nullptr) (*pick)[r] = best_s;
  }
}

Candidates FindCandidates(const SlicingProblem& p, Incumbent* incumbent) {
  std::vector<Work> work = GenerateEdges(p, Limit(*incumbent));
  BranchAndBound(p, incumbent, &work);
  for (auto& w : work) w.Compact();
  // Step 2b: when the rows were sampled coarsely, tighter bounds from the rows every
  // kRefineTokens tokens, evaluated only for the lengths that survived, then prune again.
  const int refine = std::max(1, kRefineTokens / p.request->granularity);
  if (!work.empty() && refine > 1 && work.front().stride > refine) {
    ForEachSize(work.size(), [&](size_t s) { RefineCosts(p, p.sizes[s], refine, &work[s]); });
    for (auto& w : work) w.IndexRows(p.positions);
    BranchAndBound(p, incumbent, &work);
    for (auto& w : work) w.Compact();
  }
  // Step 3: exact costs for the survivors, then the same pruning on them.
  ForEachSize(work.size(), [&](size_t s) {
    Work& w = work[s];
    SizeCandidates& c = w.edges;
    for (size_t e = 0; e < c.cost.size(); ++e) {
      if (w.exact[e]) continue;
      const int context = p.TokenAt(c.from[e]);
      c.cost[e] = CheckedCost(p, p.sizes[s], p.TokenAt(c.from[e] + c.units[e]) - context, context);
      w.exact[e] = 1;
    }
  });
  for (auto& w : work) w.IndexRows(p.positions);
  BranchAndBound(p, incumbent, &work);
  for (auto& w : work) {
    w.Compact();
    w.IndexRows(p.positions);
  }
  // The bounds the enumeration reuses: over every survivor (any level).
  Candidates out;
  std::vector<double> totals(work.size());
  ForEachSize(work.size(), [&](size_t s) {
    SolveLevel(p.positions, kInf, true, &work[s]);
    totals[s] = work[s].edges.prefix[p.positions];
  });
  out.sum_bound = BatchSum(p, totals, nullptr);
  const std::vector<double> rest = RestBounds(p, totals);
  for (size_t s = 0; s < work.size(); ++s) {
    work[s].edges.rest = rest[s];
    out.by_size.push_back(std::move(work[s].edges));
  }
  return out;
}

}  // namespace terasim

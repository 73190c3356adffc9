#include "schedule/slicing_planner.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/errors.h"
#include "schedule/slicing_candidates.h"

namespace terasim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// An edge to enable once the bound t_max reaches its cost: edge `edge` of size `size_index`.
struct Event {
  double cost;
  uint32_t size_index;
  uint32_t edge;
};

// The incremental prefix DP of one micro-batch size under a growing bound t_max: best_[i] is
// the cheapest sum of enabled slices from token 0 to unit i. Enabled edges are kept per
// source position in slots sized from the size's candidate edges (no allocation per edge).
class PrefixDp {
 public:
  PrefixDp(const SizeCandidates& edges, int positions)
      : suffix_(edges.suffix),
        best_(positions + 1, kInf),
        parent_(positions + 1, 0),
        slot_begin_(positions + 1, 0),
        slot_end_(positions + 1, 0),
        slot_units_(edges.cost.size()),
        slot_cost_(edges.cost.size()),
        queued_(positions + 1, 0) {
    best_[0] = 0;
    // Row i's slots start after every earlier row's edges (edges are in row order).
    for (size_t e = 0; e < edges.from.size(); ++e) ++slot_begin_[edges.from[e]];
    uint32_t start = 0;
    for (auto& begin : slot_begin_) start += std::exchange(begin, start);
    slot_end_ = slot_begin_;
  }

  // Enables the edge from -> from + units of cost `cost`. Improvements are pushed only from
  // positions that can still finish below `cutoff` (best + suffix bound < cutoff): any other
  // position lies on no plan that can beat the incumbent, now or at a larger t_max (the
  // cutoff only falls as t_max grows). Returns true when best_ at the end improved.
  bool Enable(uint32_t from, uint32_t units, double cost, double cutoff) {
    const uint32_t slot = slot_end_[from]++;
    slot_units_[slot] = units;
    slot_cost_[slot] = cost;
    const double before = best_.back();
    const uint32_t to = from + units;
    const double value = best_[from] + cost;
    if (value < best_[to]) {
      best_[to] = value;
      parent_[to] = units;
      if (to + 1 < best_.size() && value + suffix_[to] < cutoff) Propagate(to, cutoff);
    }
    return best_.back() < before;
  }

  double Total() const { return best_.back(); }

  // Slice lengths in units along the parent chain, first to last.
  std::vector<int> Units() const {
    std::vector<int> units;
    for (size_t pos = best_.size() - 1; pos > 0; pos -= parent_[pos]) {
      units.push_back(static_cast<int>(parent_[pos]));
    }
    std::reverse(units.begin(), units.end());
    return units;
  }

 private:
  // Pushes an improvement at `start` forward through the enabled edges, expanding positions
  // in increasing order (a DAG in token order), each after every improvement reaching it.
  void Propagate(uint32_t start, double cutoff) {
    const uint32_t last = static_cast<uint32_t>(best_.size() - 1);
    heap_.clear();
    heap_.push_back(start);
    queued_[start] = 1;
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      const uint32_t node = heap_.back();
      heap_.pop_back();
      queued_[node] = 0;
      const double here = best_[node];
      if (!(here + suffix_[node] < cutoff)) continue;
      for (uint32_t slot = slot_begin_[node]; slot < slot_end_[node]; ++slot) {
        const uint32_t to = node + slot_units_[slot];
        const double value = here + slot_cost_[slot];
        if (value < best_[to]) {
          best_[to] = value;
          parent_[to] = slot_units_[slot];
          if (to != last && !queued_[to]) {
            queued_[to] = 1;
            heap_.push_back(to);
            std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
          }
        }
      }
    }
  }

  const std::vector<double>& suffix_;
  std::vector<double> best_;
  std::vector<uint32_t> parent_;
  std::vector<uint32_t> slot_begin_, slot_end_;  // enabled edges of row i: [begin, end)
  std::vector<uint32_t> slot_units_;
  std::vector<double> slot_cost_;
  std::vector<uint32_t> heap_;  // Propagate's min-heap of positions to expand
  std::vector<char> queued_;
};

// Sorts events by cost, ascending, keeping the order of equal costs (a stable LSD radix sort
// on the bits of the cost, which order like the values since every cost is > 0; digits that
// every key shares are skipped).
void SortByCost(std::vector<Event>* events) {
  if (events->size() < (size_t{1} << 16)) {  // too few to pay for the histograms
    std::stable_sort(events->begin(), events->end(),
                     [](const Event& a, const Event& b) { return a.cost < b.cost; });
    return;
  }
  constexpr int kDigitBits = 16;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  std::vector<Event> buffer(events->size());
  std::vector<uint32_t> count(kBuckets);
  for (int shift = 0; shift < 64; shift += kDigitBits) {
    auto digit = [&](const Event& e) {
      return static_cast<size_t>((std::bit_cast<uint64_t>(e.cost) >> shift) & (kBuckets - 1));
    };
    std::fill(count.begin(), count.end(), 0);
    for (const Event& e : *events) ++count[digit(e)];
    if (!events->empty() && count[digit(events->front())] == events->size()) continue;
    uint32_t start = 0;
    for (auto& c : count) start += std::exchange(c, start);
    for (const Event& e : *events) buffer[count[digit(e)]++] = e;
    events->swap(buffer);
  }
}

}  // namespace

std::vector<MicrobatchSlicing> FoldPlan(const std::vector<MicrobatchPlan>& microbatches) {
  std::vector<MicrobatchSlicing> groups;
  for (const auto& mb : microbatches) {
    if (!groups.empty() && groups.back().rows == mb.rows && groups.back().slices == mb.slices) {
      ++groups.back().count;
    } else {
      groups.push_back({mb.rows, mb.slices, 1});
    }
  }
  return groups;
}

std::vector<int> UniformSlices(int sequence, int n) {
  if (n < 1 || n > sequence) ThrowInput("--slices {}: must be between 1 and {}", n, sequence);
  std::vector<int> slices(n, sequence / n);
  for (int i = 0; i < sequence % n; ++i) ++slices[i];
  return slices;
}

double PlanLatency(const std::vector<MicrobatchPlan>& microbatches, int stages,
                   const SliceCostFn& cost) {
  double sum = 0, max = 0;
  for (const auto& mb : microbatches) {
    int context = 0;
    for (int len : mb.slices) {
      double c = cost(mb.rows, len, context);
      sum += c;
      max = std::max(max, c);
      context += len;
    }
  }
  return sum + (stages - 1) * max;
}

SlicingPlan PlanSlicing(const SlicingRequest& req, const SliceCostFn& cost) {
  if (req.sequence < 1) ThrowInput("planner: sequence must be >= 1");
  if (req.stages < 1) ThrowInput("planner: stages must be >= 1");
  if (req.batch < 1) ThrowInput("planner: batch must be >= 1");
  if (req.granularity < 1) ThrowInput("--granularity {}: must be >= 1", req.granularity);
  SlicingProblem problem;
  problem.request = &req;
  problem.cost = &cost;
  std::vector<int>& sizes = problem.sizes;
  sizes = req.microbatch_sizes;
  if (sizes.empty()) {
    sizes.resize(req.batch);
    std::iota(sizes.begin(), sizes.end(), 1);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  for (int b : sizes) {
    if (b < 1 || b > req.batch) {
      ThrowInput("planner: micro-batch size {} out of range 1..{}", b, req.batch);
    }
  }
  if (req.shared_slicing) {
    std::erase_if(sizes, [&](int b) { return req.batch % b != 0; });
    if (sizes.empty()) ThrowInput("planner: no micro-batch size divides the batch {}", req.batch);
  } else if (sizes.front() != 1) {
    // The rows must add up to the batch: some sum of the sizes (with repeats) must reach it.
    std::vector<char> reachable(req.batch + 1, 0);
    reachable[0] = 1;
    for (int r = 1; r <= req.batch; ++r) {
      for (int b : sizes) {
        if (b > r) break;
        if (reachable[r - b]) {
          reachable[r] = 1;
          break;
        }
      }
    }
    if (!reachable[req.batch]) {
      ThrowInput("planner: micro-batches of sizes {} cannot make up the batch {}",
                 fmt::join(sizes, ", "), req.batch);
    }
  }
  const int g = req.granularity;
  const int positions = (req.sequence + g - 1) / g;  // U: unit positions 1..U
  problem.positions = positions;
  auto token_at = [&](int unit) { return problem.TokenAt(unit); };
  const double k_minus_1 = req.stages - 1;

  // The incumbent: a feasible plan that every candidate edge must be able to beat. A coarser
  // plan is a feasible fine plan: for long sequences, plan at 8x the granularity first
  // (cheap; close to the optimum). Otherwise: uniform slicings with one micro-batch size
  // dividing the batch.
  Incumbent incumbent;
  if (positions >= 256) {
    SlicingRequest coarse = req;
    coarse.granularity = req.granularity * 8;
    incumbent.microbatches = PlanSlicing(coarse, cost).microbatches;
  } else {
    double best = kInf;
    for (int b : sizes) {
      if (req.batch % b != 0) continue;
      for (int n = 1; n <= positions; ++n) {
        // n slices of whole units, as equal as possible; batch / b identical micro-batches.
        MicrobatchPlan mb{b, {}};
        double sum = 0, max = 0;
        for (int i = 0, prev = 0; i < n; ++i) {
          int unit = static_cast<int>((static_cast<int64_t>(positions) * (i + 1)) / n);
          mb.slices.push_back(token_at(unit) - token_at(prev));
          double c = cost(b, mb.slices.back(), token_at(prev));
          sum += c;
          max = std::max(max, c);
          prev = unit;
        }
        const double latency = (req.batch / b) * sum + k_minus_1 * max;
        if (latency < best) {
          best = latency;
          incumbent.microbatches.assign(req.batch / b, mb);
        }
      }
    }
  }
  incumbent.latency =
      incumbent.microbatches.empty() ? kInf : PlanLatency(incumbent.microbatches, req.stages, cost);

  // Only the edges some plan beating the incumbent may use (schedule/slicing_candidates.h);
  // the search may also find a better incumbent.
  Candidates candidates = FindCandidates(problem, &incumbent);
  const std::vector<SizeCandidates>& edges = candidates.by_size;
  // The candidate bounds, ascending (ties by size, then row order: the events are built in
  // that order and the sort is stable).
  std::vector<Event> events;
  for (size_t s = 0; s < sizes.size(); ++s) {
    for (size_t e = 0; e < edges[s].cost.size(); ++e) {
      events.push_back({edges[s].cost[e], static_cast<uint32_t>(s), static_cast<uint32_t>(e)});
    }
  }
  SortByCost(&events);

  // Enumerate t_max over the edge costs in ascending order. A plan whose largest unit costs t
  // takes at least sum_bound + (K - 1) t, and K t (its sum holds that unit).
  auto latency_bound = [&](double t) {
    return std::max(candidates.sum_bound + k_minus_1 * t, req.stages * t);
  };
  std::vector<PrefixDp> dps;
  dps.reserve(sizes.size());
  for (size_t s = 0; s < sizes.size(); ++s) dps.emplace_back(edges[s], positions);
  std::vector<double> totals(sizes.size(), kInf);
  double per_row = kInf;  // the cheapest total per row over the sizes
  double best_latency = incumbent.latency;
  SlicingPlan plan;
  for (const Event& e : events) {
    const double beat = best_latency * (1 + kSlack);
    if (latency_bound(e.cost) >= beat) break;
    ++plan.bounds_tried;
    const size_t s = e.size_index;
    const SizeCandidates& se = edges[s];
    const uint32_t from = se.from[e.edge], units = se.units[e.edge];
    // The part of the latency the size-s micro-batch may take to still beat the best plan.
    const double cutoff = beat - se.rest - k_minus_1 * e.cost;
    if (!(se.prefix[from] + e.cost + se.suffix[from + units] < cutoff)) continue;
    if (!dps[s].Enable(from, units, e.cost, cutoff)) continue;
    totals[s] = dps[s].Total();
    per_row = std::min(per_row, totals[s] / sizes[s]);
    // The knapsack is at least the batch at the cheapest per-row total (its fractional
    // relaxation); skip solving it when even that cannot beat the best plan.
    if (per_row * req.batch + k_minus_1 * e.cost >= best_latency) continue;
    const double sum = BatchSum(problem, totals, nullptr);
    if (!(sum + k_minus_1 * e.cost < best_latency)) continue;
    std::vector<int> chosen;
    BatchSum(problem, totals, &chosen);
    plan.microbatches.clear();
    for (int c : chosen) {
      MicrobatchPlan mb{sizes[c], {}};
      int unit = 0;
      for (int u : dps[c].Units()) {
        mb.slices.push_back(token_at(unit + u) - token_at(unit));
        unit += u;
      }
      plan.microbatches.push_back(std::move(mb));
    }
    best_latency = sum + k_minus_1 * e.cost;
  }
  if (plan.microbatches.empty()) plan.microbatches = std::move(incumbent.microbatches);
  TERASIM_CHECK(!plan.microbatches.empty(), "no feasible slicing for batch {} with {} sizes",
                req.batch, sizes.size());
  // Report the plan's own figures (its largest unit may cost less than the bound).
  plan.sum = 0;
  plan.max = 0;
  for (const auto& mb : plan.microbatches) {
    int context = 0;
    for (int len : mb.slices) {
      double c = cost(mb.rows, len, context);
      plan.sum += c;
      plan.max = std::max(plan.max, c);
      context += len;
    }
  }
  plan.latency = plan.sum + k_minus_1 * plan.max;
  return plan;
}

}  // namespace terasim

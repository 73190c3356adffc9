#include "schedule/slicing_planner.h"

#include <algorithm>
#include <cstdint>
#include <future>
#include <limits>
#include <numeric>
#include <queue>

#include "models/errors.h"

namespace terasim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// An edge of one size's prefix DP: from unit position `from` spanning `units` units.
struct Event {
  double cost;
  uint32_t size_index;
  uint32_t from;
  uint32_t units;
};

// The incremental prefix DP of one micro-batch size under a growing bound.
class PrefixDp {
 public:
  explicit PrefixDp(int positions)
      : best_(positions + 1, kInf), parent_(positions + 1, 0), out_(positions + 1) {
    best_[0] = 0;
  }

  // Enables the edge from -> from + units; returns true when best_[last] improved.
  bool Enable(uint32_t from, uint32_t units, double cost, const std::vector<double>& costs,
              const std::vector<size_t>& row_offset) {
    out_[from].push_back(units);
    const size_t last = best_.size() - 1;
    const double before = best_[last];
    if (best_[from] + cost < best_[from + units]) {
      best_[from + units] = best_[from] + cost;
      parent_[from + units] = units;
      Propagate(from + units, costs, row_offset);
    }
    return best_[last] < before;
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
  // Pushes an improvement at `start` forward through the enabled edges. Nodes are settled in
  // increasing position, so each is expanded after every improvement from earlier nodes.
  void Propagate(uint32_t start, const std::vector<double>& costs,
                 const std::vector<size_t>& row_offset) {
    std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> queue;
    std::vector<uint32_t> queued;
    queue.push(start);
    uint32_t last_popped = UINT32_MAX;
    while (!queue.empty()) {
      uint32_t node = queue.top();
      queue.pop();
      if (node == last_popped) continue;  // duplicates pop consecutively
      last_popped = node;
      for (uint32_t units : out_[node]) {
        double c = costs[row_offset[node] + units - 1];
        if (best_[node] + c < best_[node + units]) {
          best_[node + units] = best_[node] + c;
          parent_[node + units] = units;
          queue.push(node + units);
        }
      }
    }
  }

  std::vector<double> best_;
  std::vector<uint32_t> parent_;
  std::vector<std::vector<uint32_t>> out_;
};

// Minimum total of sizes summing exactly to `batch`, each size b costing totals[b]; returns
// the multiset of size indices (empty and kInf when impossible).
double Knapsack(int batch, const std::vector<int>& sizes, const std::vector<double>& totals,
                std::vector<int>* chosen) {
  std::vector<double> f(batch + 1, kInf);
  std::vector<int> pick(batch + 1, -1);
  f[0] = 0;
  for (int n = 1; n <= batch; ++n) {
    for (size_t s = 0; s < sizes.size(); ++s) {
      if (sizes[s] <= n && f[n - sizes[s]] + totals[s] < f[n]) {
        f[n] = f[n - sizes[s]] + totals[s];
        pick[n] = static_cast<int>(s);
      }
    }
  }
  if (chosen != nullptr && f[batch] < kInf) {
    chosen->clear();
    for (int n = batch; n > 0; n -= sizes[pick[n]]) chosen->push_back(pick[n]);
    // Larger micro-batches first, then by index: a canonical order.
    std::sort(chosen->begin(), chosen->end(),
              [&](int a, int b) { return sizes[a] != sizes[b] ? sizes[a] > sizes[b] : a < b; });
  }
  return f[batch];
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
  std::vector<int> sizes = req.microbatch_sizes;
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
  }

  const int g = req.granularity;
  const int positions = (req.sequence + g - 1) / g;  // U: unit positions 1..U
  auto token_at = [&](int unit) { return std::min(unit * g, req.sequence); };
  const double k_minus_1 = req.stages - 1;

  // The objective of the current DP totals: knapsack (or shared slicing) + nothing else.
  auto objective = [&](const std::vector<double>& totals, std::vector<int>* chosen) {
    if (!req.shared_slicing) return Knapsack(req.batch, sizes, totals, chosen);
    double best = kInf;
    for (size_t s = 0; s < sizes.size(); ++s) {
      double v = (req.batch / sizes[s]) * totals[s];
      if (v < best) {
        best = v;
        if (chosen != nullptr) chosen->assign(req.batch / sizes[s], static_cast<int>(s));
      }
    }
    return best;
  };

  // A first upper bound, which limits the edges worth generating. A coarser plan is a feasible
  // fine plan: for long sequences, plan at 8x the granularity first (cheap; close to the
  // optimum). Otherwise: uniform slicings with one micro-batch size dividing the batch.
  double best_latency = kInf;
  if (positions >= 256) {
    SlicingRequest coarse = req;
    coarse.granularity = req.granularity * 8;
    best_latency = PlanSlicing(coarse, cost).latency;
  } else {
    for (int b : sizes) {
      if (req.batch % b != 0) continue;
      for (int n = 1; n <= positions; ++n) {
        // n slices of whole units, as equal as possible; batch / b identical micro-batches.
        double sum = 0, max = 0;
        for (int i = 0, prev = 0; i < n; ++i) {
          int unit = static_cast<int>((static_cast<int64_t>(positions) * (i + 1)) / n);
          double c = cost(b, token_at(unit) - token_at(prev), token_at(prev));
          sum += c;
          max = std::max(max, c);
          prev = unit;
        }
        best_latency = std::min(best_latency, (req.batch / b) * sum + k_minus_1 * max);
      }
    }
  }
  // A lower bound of any plan's sum: every token of the batch costs at least the cheapest
  // per-token rate of a slice without context (costs are non-decreasing in the context).
  double min_rate = kInf;
  for (int b : sizes) {
    for (int u = 1; u <= positions; ++u) {
      min_rate =
          std::min(min_rate, cost(b, token_at(u), 0) / (static_cast<double>(b) * token_at(u)));
    }
  }
  const double sum_bound = min_rate * req.batch * req.sequence;
  // A plan whose largest unit costs t takes at least sum_bound + (K - 1) t, and K t (its sum
  // holds that unit).
  auto latency_bound = [&](double t) {
    return std::max(sum_bound + k_minus_1 * t, req.stages * t);
  };
  double edge_limit = best_latency / req.stages;
  if (req.stages > 1) edge_limit = std::min(edge_limit, (best_latency - sum_bound) / k_minus_1);

  // Every edge worth enabling, with its cost. Costs are non-decreasing in the slice length
  // (a precondition), so each row stops at the first edge over the limit; only the edges
  // kept are stored (row i of size s starts at row_offset[s][i] in costs[s]).
  std::vector<std::vector<double>> costs(sizes.size());
  std::vector<std::vector<size_t>> row_offset(sizes.size(), std::vector<size_t>(positions + 1));
  // Sizes are independent: generate them on up to two threads (this is the costly part: one
  // cost evaluation per edge), then merge in size order.
  std::vector<std::vector<Event>> size_events(sizes.size());
  auto generate = [&](size_t s) {
    for (int i = 0; i < positions; ++i) {
      row_offset[s][i] = costs[s].size();
      for (int k = 1; i + k <= positions; ++k) {
        double c = cost(sizes[s], token_at(i + k) - token_at(i), token_at(i));
        if (!(c > 0)) ThrowInput("planner: slice cost must be > 0 (got {})", c);
        if (c > edge_limit) break;
        costs[s].push_back(c);
        size_events[s].push_back(
            {c, static_cast<uint32_t>(s), static_cast<uint32_t>(i), static_cast<uint32_t>(k)});
      }
    }
    row_offset[s][positions] = costs[s].size();
  };
  const size_t workers = sizes.size() > 1 ? 2 : 1;
  std::vector<std::future<void>> tasks;
  for (size_t w = 1; w < workers; ++w) {
    tasks.push_back(std::async(std::launch::async, [&, w] {
      for (size_t s = w; s < sizes.size(); s += workers) generate(s);
    }));
  }
  for (size_t s = 0; s < sizes.size(); s += workers) generate(s);
  for (auto& t : tasks) t.get();  // rethrows a worker's error
  std::vector<Event> events;
  for (auto& e : size_events) {
    events.insert(events.end(), e.begin(), e.end());
    std::vector<Event>().swap(e);
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.cost != b.cost) return a.cost < b.cost;
    if (a.size_index != b.size_index) return a.size_index < b.size_index;
    if (a.from != b.from) return a.from < b.from;
    return a.units < b.units;
  });

  std::vector<PrefixDp> dps(sizes.size(), PrefixDp(positions));
  std::vector<double> totals(sizes.size(), kInf);
  SlicingPlan plan;
  plan.latency = kInf;
  for (const Event& e : events) {
    if (plan.latency < kInf && latency_bound(e.cost) >= plan.latency * (1 + 1e-12)) break;
    ++plan.bounds_tried;
    if (!dps[e.size_index].Enable(e.from, e.units, e.cost, costs[e.size_index],
                                  row_offset[e.size_index])) {
      continue;
    }
    totals[e.size_index] = dps[e.size_index].Total();
    // The knapsack is at least the batch at the cheapest per-row total (its fractional
    // relaxation); skip solving it when even that cannot beat the best plan.
    if (plan.latency < kInf) {
      double per_row = kInf;
      for (size_t s = 0; s < sizes.size(); ++s) per_row = std::min(per_row, totals[s] / sizes[s]);
      if (per_row * req.batch + k_minus_1 * e.cost >= plan.latency) continue;
    }
    double sum = objective(totals, nullptr);
    if (sum == kInf) continue;
    double latency = sum + k_minus_1 * e.cost;
    if (latency < plan.latency) {
      std::vector<int> chosen;
      objective(totals, &chosen);
      plan.microbatches.clear();
      for (int s : chosen) {
        MicrobatchPlan mb{sizes[s], {}};
        int unit = 0;
        for (int u : dps[s].Units()) {
          mb.slices.push_back(token_at(unit + u) - token_at(unit));
          unit += u;
        }
        plan.microbatches.push_back(std::move(mb));
      }
      plan.latency = latency;
    }
  }
  TERASIM_CHECK(plan.latency < kInf, "no feasible slicing for batch {} with {} sizes", req.batch,
                sizes.size());
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

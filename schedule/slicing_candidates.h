// The candidate slices of the TeraPipe slicing planner (schedule/slicing_planner.h): for each
// micro-batch size, the edges (unit position i -> i + k, a slice of k units after i) that some
// plan beating a known incumbent may use, each with its exact cost, plus the bounds that the
// planner's enumeration reuses. Internal to the planner.
//
// Every bound rests on the same facts: costs are > 0 and non-decreasing in the slice length
// and in the context (preconditions of the planner), and a plan whose largest unit costs t
// has latency sum + (K - 1) t >= S(t) + (K - 1) t, where S(t) is the cheapest sum of any plan
// whose units all cost at most t (non-increasing in t).
//
//  1. Lower-bound costs. Only the rows every 64 tokens are evaluated (every 16 where costs
//     grow steeply with the context; every row of short problems); a row in between takes
//     the costs of the sampled row before it, which bound its own from below (less context). These
//     rows are kept implicit (one cost list per sampled row, one length per row: no per-edge
//     arrays) until the first pruning. Each size's slices are also capped: a plan whose units all
//     cost at most t runs every token at no better than the cheapest rate of a context-free slice
//     costing at most t, which bounds its sum at each t on a fine geometric grid; a slice costing
//     more than every t that can still beat the incumbent is dropped.
//  2. Branch and bound over t. For an interval [lo, hi] of t, any plan takes at least
//     (K - 1) lo + S(hi); intervals that cannot beat the incumbent are dropped, the others
//     split until narrow. In a surviving interval, an edge of cost c can only be in a plan
//     taking at least (K - 1) max(c, lo) + prefix(i) + c + suffix(i + k) + rest, where prefix
//     and suffix are the cheapest ways to and from the edge and rest the cheapest other
//     micro-batches, all at level hi. Edges failing this in every interval are dropped. A
//     micro-batch size whose cheapest micro-batch plus rest already fails in an interval is
//     dead there and in its sub-intervals: its DP is skipped and no bound counts it.
//  3. The survivors are bounded again from the rows every 8 tokens (only the lengths that
//     survived are evaluated) and pruned again; the survivors of that (few) are evaluated
//     exactly and pruned once more with exact costs.
// The cheapest plan at each level the search solves is a real plan: costed exactly, it
// replaces the incumbent when faster, which tightens every later bound.
//
// Thread safety: FindCandidates calls the cost callback from up to two threads at once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "schedule/slicing_planner.h"

namespace terasim {

// Relative slack on every "cannot beat the incumbent" test, so that rounding in a bound's
// different summation order never cuts off a plan that ties or beats it.
constexpr double kSlack = 1e-12;

// What the candidate search needs to know about one planner call.
struct SlicingProblem {
  const SlicingRequest* request = nullptr;
  std::vector<int> sizes;  // micro-batch sizes, ascending, each <= batch
  int positions = 0;       // U: unit positions 1..U
  const SliceCostFn* cost = nullptr;
  // false: never replace the incumbent (tests of the bounds alone).
  bool improve_incumbent = true;

  // The token offset of unit position `unit` (the last may be a partial unit).
  int TokenAt(int unit) const { return std::min(unit * request->granularity, request->sequence); }
};

// The candidate edges of one micro-batch size, in row order (by from, then units), and the
// bounds that selected them.
struct SizeCandidates {
  std::vector<double> cost;  // exact unit costs
  std::vector<uint32_t> from;
  std::vector<uint32_t> units;
  // prefix[i]: the cheapest sum of slices from token 0 to unit i over these edges (kInf when
  // unreachable); suffix[i]: from unit i to the end.
  std::vector<double> prefix;
  std::vector<double> suffix;
  // A lower bound of the sum of the batch's other micro-batches in a plan that holds one of
  // this size.
  double rest = 0;
};

// The best plan known so far (no micro-batches and kInf latency when none).
struct Incumbent {
  std::vector<MicrobatchPlan> microbatches;
  double latency = 0;
};

struct Candidates {
  std::vector<SizeCandidates> by_size;  // parallel to SlicingProblem::sizes
  double sum_bound = 0;                 // a lower bound of any candidate plan's sum
};

// The edges some plan faster than the incumbent may use (every such plan uses only these),
// with exact costs. The plans that the search's level DPs pass through are costed exactly
// and replace the incumbent when faster (so the bounds tighten as it goes). Throws
// InputError when the cost callback returns a cost <= 0.
Candidates FindCandidates(const SlicingProblem& problem, Incumbent* incumbent);

// The cheapest sum of micro-batches covering the batch when one of size index s costs
// totals[s] (with shared slicing: batch / b copies of one size b); fills `chosen` (when not
// null) with the size indices used, larger sizes first. kInf when no combination covers it.
double BatchSum(const SlicingProblem& problem, const std::vector<double>& totals,
                std::vector<int>* chosen);

// f[n]: the minimum total of sizes summing exactly to n (each size index s costing
// totals[s]), n = 0..batch (kInf when impossible); pick[n] (when not null) the size index
// chosen last.
void KnapsackTable(int batch, const std::vector<int>& sizes, const std::vector<double>& totals,
                   std::vector<double>* f, std::vector<int>* pick);

}  // namespace terasim

// The TeraPipe slicing planner (DESIGN.md section 3): how to cut each sequence of a batch into
// token slices, and the batch into micro-batches, so that a K-stage pipeline finishes first.
//
// A unit of work (a micro-batch of `rows` sequences, a slice of `tokens` tokens after `context`
// tokens) costs t(rows, tokens, context) on every stage. With identical stages the pipeline
// latency of units t_1..t_n is
//
//     T = sum_i t_i + (K - 1) * max_j t_j.
//
// The planner enumerates the bound t_max over every candidate unit cost in ascending order
// and keeps, for each micro-batch size b, the prefix DP
//     S_b(i) = min_k S_b(i - k) + t(b, k, i - k)   over slices with t(b, k, i - k) <= t_max
// up to date incrementally: raising t_max only enables edges, so each newly enabled edge is
// relaxed and improvements are pushed forward through the enabled edges (a DAG in token
// order). The batch joins in as a knapsack over micro-batch sizes, re-solved only when some
// S_b(L) changed. Enumeration stops once (K - 1) * t_max plus the cheapest possible sum
// cannot beat the best found. The candidates are first cut down to the edges that some plan
// beating an incumbent (the plan at 8x the granularity, or uniform slicings) may use, by
// bounds that never drop such an edge (schedule/slicing_candidates.h). The result is exact
// at the requested granularity.
//
// Thread safety: PlanSlicing is a pure function of its arguments. It calls the cost callback
// from up to two threads at once, so the callback must be thread-safe (a pure function).
#pragma once

#include <functional>
#include <vector>

#include "schedule/slicing_spec.h"

namespace terasim {

// Per-stage time of one unit, in ns (any consistent unit works); must be > 0. The planner
// assumes it is non-decreasing in the tokens and in the context (its bounds rely on it).
using SliceCostFn = std::function<double(int rows, int tokens, int context)>;

struct SlicingRequest {
  int sequence = 0;     // L: tokens per sequence
  int stages = 1;       // K: pipeline stages
  int batch = 1;        // sequences to schedule (one data-parallel replica's share)
  int granularity = 1;  // slice lengths are multiples of this (the last may be shorter)
  // Micro-batch sizes the plan may use (each must divide nothing in particular; every size
  // must be >= 1 and <= batch). Empty: every size 1..batch.
  std::vector<int> microbatch_sizes;
  // true: one token slicing and one micro-batch size shared by every micro-batch (the size
  // must divide the batch).
  bool shared_slicing = false;
};

struct MicrobatchPlan {
  int rows = 0;
  std::vector<int> slices;  // token slice lengths, first to last; they sum to the sequence
  bool operator==(const MicrobatchPlan&) const = default;
};

struct SlicingPlan {
  std::vector<MicrobatchPlan> microbatches;  // in order; rows sum to the batch
  double latency = 0;                        // T = sum + (K - 1) * max
  double sum = 0;                            // sum of every unit's cost
  double max = 0;                            // the largest unit cost
  long long bounds_tried = 0;                // t_max values enumerated (for benchmarks)
};

// The optimal plan. Throws InputError when the request is inconsistent (sequence < 1,
// stages < 1, batch < 1, granularity < 1, a micro-batch size out of range, or shared slicing
// with no size dividing the batch).
SlicingPlan PlanSlicing(const SlicingRequest& request, const SliceCostFn& cost);

// The latency T = sum + (K - 1) * max of a given plan under `cost` (for checks and reports).
double PlanLatency(const std::vector<MicrobatchPlan>& microbatches, int stages,
                   const SliceCostFn& cost);

// The plan's micro-batches with consecutive equal ones folded into slicing-spec groups
// ("ROWS:[...]xCOUNT"), as the generators take them.
std::vector<MicrobatchSlicing> FoldPlan(const std::vector<MicrobatchPlan>& microbatches);

// N slices as equal as possible (the first L mod N one token longer).
std::vector<int> UniformSlices(int sequence, int n);

}  // namespace terasim

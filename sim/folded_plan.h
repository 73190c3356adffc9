// FoldedPlan: a collective plan (sim/collective_plan.h) as a folded replay runs it
// (sim/symmetry_fold.h), and the plan matching that a fold is checked by. A symmetry maps a
// group's plan onto its image group's plan run by run (rings equal up to rotation, chains
// equal); the folded plan simulates one run per orbit of a phase's runs under the elements
// that map the group onto itself, and one flow per orbit of a closed ring's transfers.
//
// GPU maps are vectors m with m[g] the image of GPU g. Plain values and pure functions.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "models/units.h"
#include "sim/collective_plan.h"

namespace terasim {

// A transfer as the folded replay runs it: the representative links, each repeated by its
// multiplicity, and the latency of the real route.
struct FoldedFlow {
  std::vector<int> route;
  TimeNs latency_ns = 0;
};

// A collective plan as the folded replay runs it.
struct FoldedRun {
  int run = 0;  // index into the phase's runs
  // Closed ring: one flow per orbit of its transfers (every step moves them all). Chain: one
  // per edge e (gpus[e] -> gpus[e + 1]).
  std::vector<FoldedFlow> flows;
};
struct FoldedPlan {
  std::vector<std::vector<FoldedRun>> phases;  // the runs to simulate in each phase
  int stabilizer = 1;                          // elements of G that map the group onto itself
};

// For every run of each phase of `a` mapped by gpu_map, the index of an equal run of the same
// phase of `b` (a bijection), or an empty result when there is none.
std::vector<std::vector<int>> MatchPlans(const CollectivePlan& a, const CollectivePlan& b,
                                         const std::vector<int>& gpu_map);

// Calls visit(from GPU, to GPU) for every edge of every run of `plan` (a closed ring's p edges,
// a chain's p - 1), phase by phase, run by run.
void ForEachTransfer(const CollectivePlan& plan, const std::function<void(int, int)>& visit);

// The folded plan of `plan` (the plan of group `group_name`) under the GPU maps `gpus` of the
// fold's group G, of which `stabilizer` map the group onto itself: a run that an element of the
// stabilizer maps onto an earlier run of its phase is not simulated; `folded_flow(a, b)` is the
// folded transfer GPU a -> b. Returns "" or why not (a transfer of the plan is an image of
// another simulated run's, or a chain repeats one); `out` is complete only on "".
std::string FoldCollectivePlan(const CollectivePlan& plan,
                               const std::vector<const std::vector<int>*>& gpus,
                               const std::vector<const std::vector<int>*>& stabilizer,
                               const std::function<FoldedFlow(int, int)>& folded_flow,
                               const std::string& group_name, FoldedPlan* out);

}  // namespace terasim

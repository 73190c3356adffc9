#include "sim/folded_plan.h"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace terasim {
namespace {

// Whether ring `b` is ring `a` up to rotation (closed) or equal (chain), with equal parameters.
bool SameRun(const RingRun& a, const RingRun& b) {
  if (a.closed != b.closed || a.steps != b.steps || a.chunks != b.chunks ||
      a.bytes_per_flow != b.bytes_per_flow || a.gpus.size() != b.gpus.size()) {
    return false;
  }
  if (a.gpus.empty()) return true;
  if (!a.closed) return a.gpus == b.gpus;
  auto start = std::find(b.gpus.begin(), b.gpus.end(), a.gpus[0]);
  if (start == b.gpus.end()) return false;
  const size_t offset = start - b.gpus.begin();
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    if (a.gpus[i] != b.gpus[(i + offset) % b.gpus.size()]) return false;
  }
  return true;
}

RingRun MapRun(const RingRun& run, const std::vector<int>& gpu_map) {
  RingRun mapped = run;
  for (int& g : mapped.gpus) g = gpu_map[g];
  return mapped;
}

}  // namespace

std::vector<std::vector<int>> MatchPlans(const CollectivePlan& a, const CollectivePlan& b,
                                         const std::vector<int>& gpu_map) {
  std::vector<std::vector<int>> match;
  if (a.phases.size() != b.phases.size()) return {};
  for (size_t ph = 0; ph < a.phases.size(); ++ph) {
    const auto& runs_a = a.phases[ph].runs;
    const auto& runs_b = b.phases[ph].runs;
    if (runs_a.size() != runs_b.size()) return {};
    std::vector<int> m(runs_a.size(), -1);
    std::vector<bool> used(runs_b.size(), false);
    for (size_t r = 0; r < runs_a.size(); ++r) {
      const RingRun mapped = MapRun(runs_a[r], gpu_map);
      for (size_t s = 0; s < runs_b.size() && m[r] < 0; ++s) {
        if (!used[s] && SameRun(mapped, runs_b[s])) {
          m[r] = static_cast<int>(s);
          used[s] = true;
        }
      }
      if (m[r] < 0) return {};
    }
    match.push_back(std::move(m));
  }
  return match;
}

void ForEachTransfer(const CollectivePlan& plan, const std::function<void(int, int)>& visit) {
  for (const CollectivePhase& phase : plan.phases) {
    for (const RingRun& run : phase.runs) {
      const int p = static_cast<int>(run.gpus.size());
      const int edges = run.closed ? p : p - 1;
      for (int e = 0; e < edges; ++e) visit(run.gpus[e], run.gpus[(e + 1) % p]);
    }
  }
}

std::string FoldCollectivePlan(const CollectivePlan& plan,
                               const std::vector<const std::vector<int>*>& gpus,
                               const std::vector<const std::vector<int>*>& stabilizer,
                               const std::function<FoldedFlow(int, int)>& folded_flow,
                               const std::string& group_name, FoldedPlan* out) {
  // A transfer's canonical image: the least of its images under G.
  auto canon = [&](int a, int b) {
    std::pair<int, int> best{a, b};
    for (const std::vector<int>* gpu : gpus) {
      best = std::min(best, std::make_pair((*gpu)[a], (*gpu)[b]));
    }
    return best;
  };
  out->stabilizer = static_cast<int>(stabilizer.size());
  for (const CollectivePhase& phase : plan.phases) {
    // Runs that an element of the stabilizer maps onto an earlier run are not simulated.
    std::vector<FoldedRun> runs;
    std::set<std::pair<int, int>> taken;  // canonical transfers of the simulated runs
    const int num_runs = static_cast<int>(phase.runs.size());
    std::vector<bool> image_of_earlier(num_runs, false);
    for (int r = 0; r < num_runs; ++r) {
      if (image_of_earlier[r]) continue;
      for (const std::vector<int>* gpu : stabilizer) {
        const RingRun mapped = MapRun(phase.runs[r], *gpu);
        for (int s = r + 1; s < num_runs; ++s) {
          if (SameRun(mapped, phase.runs[s])) image_of_earlier[s] = true;
        }
      }
      const RingRun& run = phase.runs[r];
      FoldedRun fr;
      fr.run = r;
      const int p = static_cast<int>(run.gpus.size());
      std::set<std::pair<int, int>> mine;
      for (int e = 0; e < (run.closed ? p : p - 1); ++e) {
        const int a = run.gpus[e];
        const int b = run.gpus[(e + 1) % p];
        const auto c = canon(a, b);
        if (taken.count(c)) return fmt::format("a transfer of group {}'s plan repeats", group_name);
        if (run.closed && !mine.insert(c).second) continue;  // an image of one simulated
        if (!run.closed && !mine.insert(c).second) {
          return fmt::format("a chain of group {} repeats a transfer", group_name);
        }
        fr.flows.push_back(folded_flow(a, b));
      }
      taken.insert(mine.begin(), mine.end());
      runs.push_back(std::move(fr));
    }
    out->phases.push_back(std::move(runs));
  }
  return "";
}

}  // namespace terasim

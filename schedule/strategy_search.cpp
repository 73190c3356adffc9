#include "schedule/strategy_search.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/memory_model.h"
#include "schedule/slicing_planner.h"
#include "schedule/stage_cost.h"

namespace terasim {
namespace {

std::vector<int> Divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

}  // namespace

std::string FamilyName(Family family) {
  switch (family) {
    case Family::kGpipe:
      return "gpipe";
    case Family::kOneFOneB:
      return "1f1b";
    case Family::kInterleaved:
      return "interleaved";
    case Family::kMegatron:
      return "megatron";
    case Family::kTeraPipe:
      return "terapipe";
  }
  return "?";
}

std::vector<Family> AllFamilies() {
  return {Family::kGpipe, Family::kOneFOneB, Family::kInterleaved, Family::kMegatron,
          Family::kTeraPipe};
}

Family ParseFamily(const std::string& text, const std::string& flag) {
  for (Family f : AllFamilies()) {
    if (FamilyName(f) == text) return f;
  }
  ThrowInput("{}: '{}' must be one of gpipe, 1f1b, interleaved, megatron, terapipe", flag, text);
}

std::string DegreesText(const GenerateOptions& o) {
  return fmt::format("{}x{}x{}", o.dp, o.pp, o.tp);
}

StrategySearch::StrategySearch(const ModelCard& model, const Cluster& cluster,
                               const DeviceSpec& device, const ComputeCostModel& compute)
    : model_(model), cluster_(cluster), device_(device), compute_(compute) {}

bool StrategySearch::Estimate(Candidate& c, const SearchRequest& request) const {
  const GenerateOptions& o = c.options;
  StageCost stage(model_, compute_, cluster_, {o.pp, o.tp, o.boundary});
  const int L = model_.sequence;
  if (c.family == Family::kTeraPipe) {
    const int replica_batch = request.batch / o.dp;
    SlicingRequest req{L, o.pp, replica_batch, request.granularity, {}, false};
    SlicingPlan plan = PlanSlicing(req, stage.AsSliceCost());
    c.options.slicing = FoldPlan(plan.microbatches);
    c.slicing = FormatSlicingSpec(c.options.slicing);
    c.units = 0;
    for (const auto& mb : plan.microbatches) c.units += static_cast<int>(mb.slices.size());
    c.estimate_s = plan.latency / 1e9;
    SliceCostFn compute_only = [&](int rows, int tokens, int context) {
      return stage.ComputeNs(rows, tokens, context);
    };
    c.bound_s = PlanLatency(plan.microbatches, o.pp, compute_only) / 1e9;
    return true;
  }
  const int m = o.microbatches, p = o.pp, v = o.virtual_stages;
  const double unit_compute = stage.ComputeNs(o.microbatch_size, L, 0);
  const double unit_total = stage.UnitNs(o.microbatch_size, L, 0);
  c.units = m;
  // Pipeline of m micro-batches over p stages: (m + p - 1) unit times; interleaving runs
  // m v chunks of 1/v of a unit with a fill of p - 1 chunks.
  const double steps = v == 1 ? (m + p - 1) : (static_cast<double>(m) * v + p - 1) / v;
  c.bound_s = steps * unit_compute / 1e9;
  c.estimate_s = steps * unit_total / 1e9;
  return true;
}

std::vector<Candidate> StrategySearch::Enumerate(Family family,
                                                 const SearchRequest& request) const {
  if (request.batch < 1) ThrowInput("--batch {}: must be >= 1", request.batch);
  const int gpus = cluster_.NumGpus();
  const int per_node = cluster_.GpusPerNode();
  std::vector<int> tps;
  for (int t = 1; t <= per_node; t *= 2) {
    if (model_.heads % t != 0) continue;
    if (family == Family::kMegatron && t != per_node) continue;
    tps.push_back(t);
  }
  std::vector<Candidate> out;
  for (int t : tps) {
    for (int d : Divisors(request.batch)) {
      if (gpus % (d * t) != 0) continue;
      const int p = gpus / (d * t);
      if (p > model_.layers) continue;
      GenerateOptions base;
      base.model = model_;
      base.dp = d;
      base.pp = p;
      base.tp = t;
      base.boundary = t > 1 ? Boundary::kBroadcast : Boundary::kPointToPoint;
      const int replica = request.batch / d;
      if (family == Family::kTeraPipe) {
        Candidate c;
        c.family = family;
        c.options = base;
        c.options.strategy = Strategy::kTeraPipe;
        c.options.order = SliceOrder::kFlush;
        if (Estimate(c, request)) out.push_back(std::move(c));
        continue;
      }
      for (int b : Divisors(replica)) {
        if (request.microbatch_size > 0 && b != request.microbatch_size) continue;
        const int m = replica / b;
        std::vector<int> vs = {1};
        if (family == Family::kInterleaved) {
          vs.clear();
          // Megatron's groups of P micro-batches, or one group of fewer than P
          // (schedule/pipeline_order.h); chunks need P >= 2. M = 1 (b = the replica's rows)
          // always qualifies, so only P rules a (D, P, T) out.
          if (p < 2 || (m > p && m % p != 0)) continue;
          for (int v = 2; v * p <= model_.layers; ++v) vs.push_back(v);
        }
        for (int v : vs) {
          Candidate c;
          c.family = family;
          c.options = base;
          c.options.microbatches = m;
          c.options.microbatch_size = b;
          c.options.virtual_stages = v;
          c.options.strategy = family == Family::kGpipe         ? Strategy::kGpipe
                               : family == Family::kInterleaved ? Strategy::kInterleaved
                                                                : Strategy::kOneFOneB;
          if (Estimate(c, request)) out.push_back(std::move(c));
        }
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.estimate_s < b.estimate_s;
  });
  return out;
}

std::vector<FamilyResult> StrategySearch::Run(const SearchRequest& request,
                                              const EvaluateFn& evaluate) const {
  std::vector<FamilyResult> results;
  for (Family family : request.families) {
    FamilyResult result;
    result.family = family;
    std::vector<Candidate> candidates = Enumerate(family, request);
    int evaluations = 0;
    int over_memory = 0;
    for (Candidate& c : candidates) {
      if (evaluations >= request.max_evaluations_per_family) break;
      Evaluation e;
      e.candidate = c;
      if (result.found && c.bound_s >= result.best.iteration_s) {
        break;  // ascending estimates: nothing later can beat the best on compute alone
      }
      // The training state alone (16 bytes per parameter of the largest stage's shard) is a
      // quick test that spares generating schedules that cannot fit.
      const int layers_per_device = (model_.layers + c.options.pp - 1) / c.options.pp;
      const Bytes state = TrainingState(static_cast<int64_t>(layers_per_device) *
                                        (LayerShardParams(model_, c.options.tp, Block::kAttention) +
                                         LayerShardParams(model_, c.options.tp, Block::kMlp)))
                              .Total();
      if (state > device_.CapacityBytes()) {
        e.note = fmt::format("does not fit: training state {} exceeds capacity {}",
                             FormatGiB(state), FormatGiB(device_.CapacityBytes()));
        ++over_memory;
        result.tried.push_back(std::move(e));
        continue;
      }
      if (request.progress) {
        request.progress(fmt::format("{} {}: generating and checking memory", FamilyName(family),
                                     DegreesText(c.options)));
      }
      Schedule schedule;
      try {
        schedule = Generate(c.options);
      } catch (const InputError& error) {
        e.note = fmt::format("cannot generate: {}", error.what());
        result.tried.push_back(std::move(e));
        continue;
      }
      e.memory = EstimateMemory(schedule, model_, device_);
      e.fits = e.memory.fits;
      if (!e.fits) {
        e.note = e.memory.reason;
        ++over_memory;
        result.tried.push_back(std::move(e));
        continue;
      }
      if (request.progress) {
        request.progress(fmt::format("{} {}: simulating ({} ops)", FamilyName(family),
                                     DegreesText(c.options), schedule.ops.size()));
      }
      e.iteration_s = evaluate(c, schedule);
      e.evaluated = true;
      ++evaluations;
      if (!result.found || e.iteration_s < result.best.iteration_s) {
        result.best = e;
        result.found = true;
      }
      result.tried.push_back(std::move(e));
    }
    if (!result.found) {
      if (candidates.empty()) {
        result.reason = family == Family::kInterleaved
                            ? fmt::format(
                                  "no configuration: interleaving needs every GPU used with "
                                  "a pipeline degree P >= 2 and at least 2 P layers (batch {})",
                                  request.batch)
                            : "no configuration of the degrees uses every GPU";
      } else {
        result.reason =
            fmt::format("none of {} configurations fits in memory ({})", candidates.size(),
                        result.tried.empty() ? "" : result.tried.front().note);
      }
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace terasim

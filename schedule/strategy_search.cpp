#include "schedule/strategy_search.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/layer_flops.h"
#include "models/memory_model.h"
#include "schedule/pipeline_order.h"
#include "schedule/slicing_planner.h"
#include "schedule/stage_cost.h"

namespace terasim {
namespace {

// Ascending. Pairs d <= sqrt(n) with n / d, counting in 64 bits: a loop `d <= n` over int
// never ends for n = INT_MAX (d overflows, then divides by zero).
std::vector<int> Divisors(int n) {
  std::vector<int> low, high;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    low.push_back(static_cast<int>(d));
    if (d * d != n) high.push_back(static_cast<int>(n / d));
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// Pipeline rank 0's order under the strategy of `o` (the zero-bubble V families).
std::vector<PipelineStep> FirstRankOrder(const GenerateOptions& o) {
  switch (o.strategy) {
    case Strategy::kZbV:
      return ZbvOrder(o.pp, 0, o.microbatches);
    case Strategy::kDualPipeV:
      return DualPipeVOrder(o.pp, 0, o.microbatches);
    default:
      return InterleavedZeroBubbleOrder(o.pp, o.virtual_stages, 0, o.microbatches);
  }
}

// Micro-batches of activations the first stage holds at its peak, in units of one
// micro-batch's activations of the stage's layers (all its chunks together).
double InFlightMicrobatches(const GenerateOptions& o) {
  const int m = o.microbatches, p = o.pp, v = o.virtual_stages;
  switch (o.strategy) {
    case Strategy::kGpipe:
    case Strategy::kLoopedBfs:
    case Strategy::kTeraPipe:
    case Strategy::kImported:
      return m;
    case Strategy::kOneFOneB:
    case Strategy::kZbH1:
      return std::min(m, p);
    case Strategy::kZbH2:
      return std::min(m, 2 * p - 1);
    case Strategy::kInterleaved:
      if (m < p) return m;
      // (P V + P - 1) chunks of 1 / V of the stage's layers, at most all M V chunks.
      return std::min(static_cast<double>(m), p * InterleavedInFlightFactor(p, v));
    case Strategy::kInterleavedZb:
    case Strategy::kZbV:
    case Strategy::kDualPipeV:
      // Counted on the first rank's own order (chunks of 1 / V of its layers).
      return static_cast<double>(PeakChunksInFlight(FirstRankOrder(o))) / v;
  }
  return m;
}

}  // namespace

std::string RecipeText(const GenerateOptions& o) {
  std::vector<std::string> parts;
  if (o.sequence_parallel) parts.push_back("sp");
  if (o.recompute != Recompute::kNone) {
    parts.push_back(fmt::format("{} recompute", RecomputeName(o.recompute)));
  }
  if (o.zero > 0) parts.push_back(fmt::format("ZeRO-{}", o.zero));
  if (parts.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out;
}

AnalyticMemoryResult AnalyticMemory(const GenerateOptions& o) {
  const ModelCard& model = o.model;
  const int stages = o.pp * o.virtual_stages;
  const int layers = (model.layers + stages - 1) / stages * o.virtual_stages;  // per device
  const int64_t shard = LayerShardParams(model, o.tp, Block::kWhole);
  const TrainingStateBytes state =
      TrainingState(layers * shard, o.dp > 1 ? o.zero : 0, std::max(1, o.dp));
  const ActivationPolicy policy{o.recompute, o.sequence_parallel && o.tp > 1};
  const Bytes per_layer = LayerActivationBytes(model, o.microbatch_size, model.sequence, 0, o.tp,
                                               Block::kWhole, policy);
  Bytes activations =
      static_cast<Bytes>(InFlightMicrobatches(o) * layers * static_cast<double>(per_layer));
  if (o.recompute == Recompute::kFull) {
    activations += LayerRecomputeBytes(model, o.microbatch_size, model.sequence, 0, o.tp,
                                       Block::kWhole, policy.sequence_parallel);
  }
  const Bytes gathered = o.dp > 1 && o.zero == 3 ? 2 * ZeroGatheredBytes(shard) : 0;
  const Bytes boundary = 2 * BoundaryTensorBytes(model, o.microbatch_size, model.sequence);
  AnalyticMemoryResult r;
  r.peak = state.Total() + activations + gathered + boundary;
  const std::pair<const char*, Bytes> terms[] = {
      {"activations", activations},      {"optimizer state", state.optimizer_state},
      {"weights", state.weights},        {"gradients", state.gradients},
      {"gathered parameters", gathered}, {"boundary buffers", boundary}};
  for (const auto& [name, bytes] : terms) {
    if (bytes > r.largest_bytes) {
      r.largest_term = name;
      r.largest_bytes = bytes;
    }
  }
  return r;
}

std::string FamilyName(Family family) {
  switch (family) {
    case Family::kGpipe:
      return "gpipe";
    case Family::kOneFOneB:
      return "1f1b";
    case Family::kInterleaved:
      return "interleaved";
    case Family::kZeroBubble:
      return "zero-bubble";
    case Family::kMegatron:
      return "megatron";
    case Family::kTeraPipe:
      return "terapipe";
    case Family::kInterleavedZb:
      return "interleaved-zb";
    case Family::kZbV:
      return "zb-v";
    case Family::kDualPipeV:
      return "dualpipe-v";
  }
  return "?";
}

std::vector<Family> AllFamilies() {
  return {Family::kGpipe,         Family::kOneFOneB, Family::kInterleaved,
          Family::kZeroBubble,    Family::kMegatron, Family::kTeraPipe,
          Family::kInterleavedZb, Family::kZbV,      Family::kDualPipeV};
}

Family ParseFamily(const std::string& text, const std::string& flag) {
  for (Family f : AllFamilies()) {
    if (FamilyName(f) == text) return f;
  }
  ThrowInput(
      "{}: '{}' must be one of gpipe, 1f1b, interleaved, zero-bubble, megatron, terapipe, "
      "interleaved-zb, zb-v, dualpipe-v",
      flag, text);
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
  // Recomputation per unit: the forward is about a third of forward + backward; selective
  // recomputes the attention core's share of it.
  double recompute_ns = 0;
  if (o.recompute != Recompute::kNone) {
    const double forward_ns = unit_compute / 3;
    if (o.recompute == Recompute::kFull) {
      recompute_ns = forward_ns;
    } else {
      SliceWork work;
      work.rows = o.microbatch_size;
      work.tokens = L;
      work.tp = o.tp;
      const ForwardFlops flops = LayerForwardFlops(model_, work);
      recompute_ns = forward_ns * static_cast<double>(flops.attention) /
                     static_cast<double>(std::max<Flops>(1, flops.Total()));
    }
  }
  c.units = m;
  // Pipeline of m micro-batches over p stages: (m + p - 1) unit times; interleaving runs
  // m v chunks of 1/v of a unit with a fill of p - 1 chunks; zero bubble fills all but a
  // third of each of the p - 1 fill steps (ZB-H1 with F = B = W).
  double steps = v == 1 ? (m + p - 1) : (static_cast<double>(m) * v + p - 1) / v;
  if (o.strategy == Strategy::kZbH1 || o.strategy == Strategy::kZbH2) {
    steps = m + (p - 1) / 3.0;
  }
  // Zero bubble over V chunks (interleaved zero bubble, ZB-V and DualPipeV, V = 2 for the
  // last two): the last rank's wait for P - 1 chunk forwards, a third of a chunk's unit each
  // (tests/sim/zbv_dualpipe_sim_test.cpp); with F = B = W nothing else idles.
  if (o.strategy == Strategy::kInterleavedZb || o.strategy == Strategy::kZbV ||
      o.strategy == Strategy::kDualPipeV) {
    steps = m + (p - 1) / (3.0 * v);
  }
  c.bound_s = steps * (unit_compute + recompute_ns) / 1e9;
  c.estimate_s = steps * (unit_total + recompute_ns) / 1e9;
  if (o.zero == 3 && o.dp > 1) {
    // Per micro-batch: the stage's parameters all-gathered forward and backward and its
    // gradients reduce-scattered, (D - 1) / D of the bytes each over the dp route.
    const double bytes = 2.0 * stage.LayersPerStage() * v *
                         static_cast<double>(LayerShardParams(model_, o.tp, Block::kWhole));
    const double bw = cluster_.RouteBottleneckBytesPerS(0, o.pp * o.tp);
    c.estimate_s += m * 3.0 * (o.dp - 1) / o.dp * bytes / bw;
  }
  return true;
}

void StrategySearch::ChooseRecipe(Candidate& c, const std::vector<GenerateOptions>& variants,
                                  const SearchRequest& request) const {
  struct Scored {
    Candidate candidate;
    AnalyticMemoryResult memory;
  };
  std::vector<Scored> scored;
  for (const GenerateOptions& o : variants) {
    Scored v{c, AnalyticMemory(o)};
    v.candidate.options = o;
    if (!Estimate(v.candidate, request)) continue;
    scored.push_back(std::move(v));
  }
  if (scored.empty()) return;
  std::stable_sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
    return a.candidate.estimate_s < b.candidate.estimate_s;
  });
  const Bytes capacity = device_.CapacityBytes();
  int chosen = -1;
  for (int i = 0; i < static_cast<int>(scored.size()); ++i) {
    if (scored[i].memory.peak > capacity) continue;
    if (chosen < 0) {
      chosen = i;
    } else if (scored[chosen].candidate.fallbacks.size() < 2) {
      scored[chosen].candidate.fallbacks.push_back(scored[i].candidate.options);
    }
  }
  if (chosen < 0) {
    // Nothing fits: keep the variant with the smallest peak, to say why.
    chosen = 0;
    for (int i = 1; i < static_cast<int>(scored.size()); ++i) {
      if (scored[i].memory.peak < scored[chosen].memory.peak) chosen = i;
    }
  }
  const Scored& best = scored[chosen];
  c = best.candidate;
  c.analytic_peak = best.memory.peak;
  c.analytic_fits = best.memory.peak <= capacity;
  if (!c.analytic_fits) {
    c.analytic_reason = fmt::format(
        "does not fit: first stage peak {} (analytic, {}) > capacity {}; largest term: {} {}",
        FormatGiB(best.memory.peak), RecipeText(c.options), FormatGiB(capacity),
        best.memory.largest_term, FormatGiB(best.memory.largest_bytes));
  }
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
        // (strategy, V) pairs of the family.
        std::vector<std::pair<Strategy, int>> shapes;
        switch (family) {
          case Family::kGpipe:
            shapes = {{Strategy::kGpipe, 1}};
            break;
          case Family::kOneFOneB:
            shapes = {{Strategy::kOneFOneB, 1}};
            break;
          case Family::kZeroBubble:
            shapes = {{Strategy::kZbH1, 1}, {Strategy::kZbH2, 1}};
            break;
          case Family::kInterleaved:
          case Family::kMegatron:
            // PyTorch's rounds, or one group of fewer than P (schedule/pipeline_order.h);
            // chunks need P >= 2. M = 1 (b = the replica's rows) always qualifies, so only P
            // rules a (D, P, T) out.
            if (p >= 2 && InterleavedSupports(p, m)) {
              for (int v = 2; v * p <= model_.layers; ++v) {
                shapes.push_back({Strategy::kInterleaved, v});
              }
            }
            // Megatron-LM without a pipeline to interleave runs 1F1B.
            if (family == Family::kMegatron && shapes.empty()) {
              shapes = {{Strategy::kOneFOneB, 1}};
            }
            break;
          case Family::kInterleavedZb:
            if (p >= 2 && InterleavedSupports(p, m)) {
              for (int v = 2; v * p <= model_.layers; ++v) {
                shapes.push_back({Strategy::kInterleavedZb, v});
              }
            }
            break;
          case Family::kZbV:
            if (2 * p <= model_.layers) shapes = {{Strategy::kZbV, 2}};
            break;
          case Family::kDualPipeV:
            if (2 * p <= model_.layers && DualPipeVSupports(p, m)) {
              shapes = {{Strategy::kDualPipeV, 2}};
            }
            break;
          case Family::kTeraPipe:
            break;
        }
        for (const auto& [strategy, v] : shapes) {
          Candidate c;
          c.family = family;
          c.options = base;
          c.options.microbatches = m;
          c.options.microbatch_size = b;
          c.options.virtual_stages = v;
          c.options.strategy = strategy;
          std::vector<GenerateOptions> variants;
          if (family == Family::kMegatron) {
            // Megatron-LM's recipe; full recomputation where selective does not fit.
            for (Recompute rc : {Recompute::kSelective, Recompute::kFull}) {
              GenerateOptions o = c.options;
              o.boundary = Boundary::kPointToPoint;
              o.sequence_parallel = t > 1;
              o.zero = d > 1 ? 1 : 0;
              o.recompute = rc;
              variants.push_back(o);
            }
          } else if (!request.recipes) {
            variants.push_back(c.options);
          } else {
            for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
              for (bool sp : {false, true}) {
                if (sp && t < 2) continue;
                for (int zero = 0; zero <= (d > 1 ? 3 : 0); ++zero) {
                  GenerateOptions o = c.options;
                  o.recompute = rc;
                  o.sequence_parallel = sp;
                  if (sp) o.boundary = Boundary::kPointToPoint;
                  o.zero = zero;
                  variants.push_back(o);
                }
              }
            }
          }
          ChooseRecipe(c, variants, request);
          out.push_back(std::move(c));
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
      if (!c.analytic_fits) {
        e.note = c.analytic_reason;
        ++over_memory;
        result.tried.push_back(std::move(e));
        continue;
      }
      if (family == Family::kTeraPipe) {
        // The training state alone (16 bytes per parameter of the largest stage's shard) is a
        // quick test that spares generating schedules that cannot fit.
        const int layers_per_device = (model_.layers + c.options.pp - 1) / c.options.pp;
        const Bytes state =
            TrainingState(static_cast<int64_t>(layers_per_device) *
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
      // The analytic check passed but the exact one did not: the next recipe variants.
      for (size_t f = 0; !e.fits && f < c.fallbacks.size(); ++f) {
        Candidate next = c;
        next.options = c.fallbacks[f];
        next.fallbacks.clear();
        if (!Estimate(next, request)) continue;
        Schedule other = Generate(next.options);
        MemoryEstimate memory = EstimateMemory(other, model_, device_);
        if (!memory.fits) continue;
        e.candidate = next;
        e.memory = std::move(memory);
        e.fits = true;
        schedule = std::move(other);
      }
      if (!e.fits) {
        e.note = e.memory.reason;
        ++over_memory;
        result.tried.push_back(std::move(e));
        continue;
      }
      if (request.progress) {
        request.progress(fmt::format("{} {} {}: simulating ({} ops)", FamilyName(family),
                                     DegreesText(e.candidate.options),
                                     RecipeText(e.candidate.options), schedule.ops.size()));
      }
      e.iteration_s = evaluate(e.candidate, schedule);
      e.evaluated = true;
      ++evaluations;
      if (!result.found || e.iteration_s < result.best.iteration_s) {
        result.best = e;
        result.found = true;
      }
      result.tried.push_back(std::move(e));
    }
    // The loop stops early only at the budget or at the bound.
    result.candidates = static_cast<int>(candidates.size());
    const int untried = result.candidates - static_cast<int>(result.tried.size());
    (evaluations >= request.max_evaluations_per_family ? result.pruned_by_budget
                                                       : result.pruned_by_bound) = untried;
    if (!result.found) {
      if (candidates.empty()) {
        if (family == Family::kInterleaved || family == Family::kInterleavedZb) {
          result.reason = fmt::format(
              "no configuration: interleaving needs every GPU used with a pipeline degree "
              "P >= 2 and at least 2 P layers (batch {})",
              request.batch);
        } else if (family == Family::kZbV || family == Family::kDualPipeV) {
          result.reason = fmt::format(
              "no configuration: the V needs every GPU used with at least 2 P layers{} (batch "
              "{})",
              family == Family::kDualPipeV ? " and M >= 2 P micro-batches" : "", request.batch);
        } else {
          result.reason = "no configuration of the degrees uses every GPU";
        }
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

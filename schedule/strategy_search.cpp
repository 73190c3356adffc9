#include "schedule/strategy_search.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <tuple>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/layer_flops.h"
#include "models/memory_model.h"
#include "schedule/parallel_tasks.h"
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

// Pipeline rank `rank`'s order under the strategy of `o` as Generate writes it (micro-batches
// of one slice); empty for the orders the bounds do not replay (terapipe, imported) and for
// shapes the order does not support.
std::vector<PipelineStep> RankOrder(const GenerateOptions& o, int rank) {
  const int p = o.pp, v = o.virtual_stages, m = o.microbatches;
  const std::vector<int> ones(m, 1);
  switch (o.strategy) {
    case Strategy::kGpipe:
      return FlushOrder(ones, o.backward_in_forward_order);
    case Strategy::kOneFOneB:
      return OneFOneBOrder(p, rank, ones);
    case Strategy::kZbH1:
    case Strategy::kZbH2:
      return ZeroBubbleOrder(o.strategy == Strategy::kZbH1 ? ZeroBubble::kH1 : ZeroBubble::kH2, p,
                             rank, m);
    case Strategy::kLoopedBfs:
      return LoopedBfsOrder(v, m);
    case Strategy::kInterleaved:
      if (!InterleavedSupports(p, m)) return {};
      return InterleavedOrder(p, v, rank, m);
    case Strategy::kInterleavedZb:
      if (!InterleavedSupports(p, m)) return {};
      return InterleavedZeroBubbleOrder(p, v, rank, m);
    case Strategy::kZbV:
      return v == 2 ? ZbvOrder(p, rank, m) : std::vector<PipelineStep>{};
    case Strategy::kDualPipeV:
      if (v != 2 || !DualPipeVSupports(p, m)) return {};
      return DualPipeVOrder(p, rank, m);
    case Strategy::kTeraPipe:
    case Strategy::kImported:
      break;
  }
  return {};
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
    case Strategy::kDualPipeV: {
      // Counted on the first rank's own order (chunks of 1 / V of its layers), once per shape:
      // every recipe variant of a configuration asks again (a pure function of the shape).
      thread_local std::map<std::tuple<Strategy, int, int, int>, int> peaks;
      const auto shape = std::make_tuple(o.strategy, p, v, m);
      auto at = peaks.find(shape);
      if (at == peaks.end()) at = peaks.emplace(shape, PeakChunksInFlight(FirstRankOrder(o))).first;
      return static_cast<double>(at->second) / v;
    }
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

AnalyticMemoryResult TeraPipeMemoryLowerBound(const GenerateOptions& o, int replica_rows) {
  const ModelCard& model = o.model;
  const int layers = StageLayers(model.layers, o.pp, 1).front().Length();
  int64_t params =
      static_cast<int64_t>(layers) * std::min(LayerShardParams(model, o.tp, Block::kWhole),
                                              LayerShardParams(model, o.tp, Block::kAttention) +
                                                  LayerShardParams(model, o.tp, Block::kMlp));
  if (model.embedding_in_stack) params += model.EmbeddingParams() / o.tp;
  if (model.lm_head_in_stack && !model.embedding_in_stack && layers == model.layers) {
    params += static_cast<int64_t>(model.vocab) * model.hidden / o.tp;
  }
  const TrainingStateBytes state = TrainingState(params, o.dp > 1 ? o.zero : 0, std::max(1, o.dp));
  const ActivationPolicy policy{o.recompute, o.sequence_parallel && o.tp > 1};
  // One layer's bytes for a unit: the smaller of the whole layer and its two blocks.
  const auto layer_bytes = [&](int rows, int64_t tokens, int64_t context, ActivationPolicy p) {
    const auto bytes = [&](Block block) {
      return LayerActivationBytes(model, rows, tokens, context, o.tp, block, p);
    };
    return std::min(bytes(Block::kWhole), bytes(Block::kAttention) + bytes(Block::kMlp));
  };
  Bytes activations = 0, kv_cache = 0;
  if (o.order == SliceOrder::kFlush && !o.slicing.empty()) {
    for (const MicrobatchSlices& mb : ReplicaMicrobatches(o)) {
      int64_t context = 0;
      for (int tokens : mb.slices) {
        activations += layers * layer_bytes(mb.rows, tokens, context, policy);
        if (tokens < model.sequence) {
          const auto kv = [&](Block block) {
            return LayerKvCacheBytes(model, mb.rows, tokens, o.tp, block);
          };
          kv_cache += layers * std::min(kv(Block::kWhole), kv(Block::kAttention) + kv(Block::kMlp));
        }
        context += tokens;
      }
    }
  } else if (o.order == SliceOrder::kFlush && replica_rows > 0) {
    // Any slicing of the replica's rows: every term but the attention core is linear in rows x
    // tokens, and a sequence's slices t_i after contexts c_i have sum t_i (c_i + t_i) =
    // (L^2 + sum t_i^2) / 2 >= L^2 / 2, half the core of the uncut sequence. Less 16 bytes of
    // integer rounding per unit (at most one unit per row and token).
    const int64_t L = model.sequence;
    const Bytes whole = layer_bytes(replica_rows, L, 0, policy);
    Bytes core = 0;
    if (policy.recompute == Recompute::kNone) {
      core = whole -
             layer_bytes(replica_rows, L, 0, {Recompute::kSelective, policy.sequence_parallel});
    }
    const Bytes rounding = 16 * static_cast<Bytes>(replica_rows) * L;
    activations = layers * std::max<Bytes>(0, whole - core / 2 - rounding);
  }
  AnalyticMemoryResult r;
  r.peak = state.Total() + activations + kv_cache;
  const std::pair<const char*, Bytes> terms[] = {{"activations", activations},
                                                 {"optimizer state", state.optimizer_state},
                                                 {"weights", state.weights},
                                                 {"gradients", state.gradients},
                                                 {"kv cache", kv_cache}};
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
  return Estimate(c, request, true);
}

bool StrategySearch::Estimate(Candidate& c, const SearchRequest& request, bool replay) const {
  const GenerateOptions& o = c.options;
  StageCost stage(model_, compute_, cluster_, {o.pp, o.tp, o.boundary});
  const int L = model_.sequence;
  if (c.family == Family::kTeraPipe) {
    const int replica_batch = request.batch / o.dp;
    // --microbatch-size: every micro-batch of that many sequences (Enumerate keeps only the
    // replicas it divides); otherwise the planner chooses the split.
    std::vector<int> sizes;
    if (request.microbatch_size > 0) sizes = {request.microbatch_size};
    SlicingRequest req{L, o.pp, replica_batch, request.granularity, sizes, false};
    SlicingPlan plan = PlanSlicing(req, stage.AsSliceCost());
    c.options.slicing = FoldPlan(plan.microbatches);
    c.slicing = FormatSlicingSpec(c.options.slicing);
    c.units = 0;
    for (const auto& mb : plan.microbatches) c.units += static_cast<int>(mb.slices.size());
    c.estimate_s = plan.latency / 1e9;
    SliceCostFn compute_only = [&](int rows, int tokens, int context) {
      return stage.ComputeNs(rows, tokens, context);
    };
    // Scaled by floor / ceil of the layers per stage: the planner costs every stage as the
    // largest, and a stage of one layer less computes at least that share of it.
    const double scale = static_cast<double>(model_.layers / o.pp) /
                         static_cast<double>((model_.layers + o.pp - 1) / o.pp);
    c.bound_s = scale * PlanLatency(plan.microbatches, o.pp, compute_only) / 1e9;
    // After the last backward: the first stage's data-parallel step and optimizer.
    c.bound_s += StepTailNs(o, request) / 1e9;
    c.ops_estimate = EstimateOps(o, c.units);
    return true;
  }
  const int m = o.microbatches, p = o.pp, v = o.virtual_stages;
  // A unit's compute and whole time, once per stage shape and micro-batch size: every recipe
  // variant and virtual-stage count of a configuration asks again.
  const auto unit_key = std::make_tuple(o.pp, o.tp, o.boundary, o.microbatch_size);
  auto unit_at = unit_ns_.find(unit_key);
  if (unit_at == unit_ns_.end()) {
    unit_at = unit_ns_
                  .emplace(unit_key, std::make_pair(stage.ComputeNs(o.microbatch_size, L, 0),
                                                    stage.UnitNs(o.microbatch_size, L, 0)))
                  .first;
  }
  const double unit_compute = unit_at->second.first;
  const double unit_total = unit_at->second.second;
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
  // The bound's units count the recomputation the backward ops run, not recompute_ns, an
  // estimate (a third of the unit, a share of it for selective) that can exceed it (measured:
  // gpt3-1b 2x1x8 on p3.16xlarge:2 with selective recomputation, 1.3846 s against a replay of
  // 1.3800 s): with T >= 2 the generator writes per layer part ops, so the stage's layers
  // times one layer's extra; with T = 1 (whole-stage ops) none here (PipelineTimesOf counts
  // each op's).
  double recompute_bound_ns = 0;
  if (o.recompute != Recompute::kNone && o.tp > 1) {
    GenerateOptions plain = o;
    plain.recompute = Recompute::kNone;
    recompute_bound_ns = stage.LayersPerStage() *
                         (PassNs(o, Pass::kBackward, 0, 1) - PassNs(plain, Pass::kBackward, 0, 1));
  }
  c.bound_s = LowerBoundNs(o, request, unit_compute, recompute_bound_ns, steps - m, replay) / 1e9;
  c.estimate_s = steps * (unit_total + recompute_ns) / 1e9;
  c.ops_estimate = EstimateOps(o, c.units);
  if (o.zero == 3 && o.dp > 1) {
    // Per micro-batch: the device's parameters all-gathered forward and backward and its
    // gradients reduce-scattered, (D - 1) / D of the bytes each over the dp route.
    // LayersPerStage() is already all of a device's layers, ceil(L / P), over its V chunks.
    const double bytes = 2.0 * stage.LayersPerStage() *
                         static_cast<double>(LayerShardParams(model_, o.tp, Block::kWhole));
    const double bw = cluster_.RouteBottleneckBytesPerS(0, o.pp * o.tp);
    c.estimate_s += m * 3.0 * (o.dp - 1) / o.dp * bytes / bw;
  }
  return true;
}

double StrategySearch::StepTailNs(const GenerateOptions& o, const SearchRequest& request) const {
  // The first rank's last chunk (its whole share with V = 1): floor(L / (P V)) layers at least.
  const int chunk_layers = std::max(1, model_.layers / (o.pp * o.virtual_stages));
  // The OPTIMIZER of that chunk runs on the compute stream after its dp collective (or after
  // its last backward with D = 1): its work is the chunk's tp shard, 1 / D of it with ZeRO
  // (sim/op_work.cpp's tp degree of an OPTIMIZER op).
  const int zero = o.dp > 1 ? o.zero : 0;
  // Remembered by what it depends on: every recipe variant of a configuration asks again.
  const bool bucketed = zero == 0 && ResolvedDpStep(o) == DpStep::kBucketed;
  const auto key = std::make_tuple(o.dp, o.pp, o.tp, o.virtual_stages, zero, bucketed,
                                   static_cast<bool>(request.collective_ns),
                                   static_cast<bool>(request.busiest_link_ns));
  const auto known = step_tail_ns_.find(key);
  if (known != step_tail_ns_.end()) return known->second;
  return step_tail_ns_[key] = StepTailUncachedNs(o, request, chunk_layers, zero, bucketed);
}

double StrategySearch::StepTailUncachedNs(const GenerateOptions& o, const SearchRequest& request,
                                          int chunk_layers, int zero, bool bucketed) const {
  SliceWork opt;
  opt.pass = Pass::kOptimizer;
  opt.layers = chunk_layers;
  opt.rows = 1;
  opt.tp = std::max(1, o.tp) * (zero > 0 ? o.dp : 1);
  double ns = static_cast<double>(compute_.Time(opt));
  if (o.dp < 2 || zero == 3 || !request.collective_ns) return ns;
  // The dp collective of the chunk's fp16 weight gradients over tp rank 0's dp group (ranks
  // d P T): it waits for the chunk's last backward and the OPTIMIZER waits for it (an
  // ALLREDUCE; ZeRO-1 and 2 a REDUCE_SCATTER before the OPTIMIZER and an ALLGATHER after it;
  // ZeRO-3's per-layer reduce-scatters are not counted). Per-stage and flattened steps do not
  // overlap the backward, so they add to the path in full; a bucketed one only its last
  // bucket, which holds one layer at least.
  std::vector<int> group;
  for (int d = 0; d < o.dp; ++d) group.push_back(d * o.pp * o.tp);
  const Bytes bytes =
      2 * static_cast<Bytes>(bucketed ? 1 : chunk_layers) * model_.ParamsPerLayer() / o.tp;
  // The first rank's T tp ranks end their last backward together (its last tp collective) and
  // then run the same step on their own dp groups (GPUs d P T + t), sharing the links between
  // nodes: after the backward the busiest link carries all T groups' bytes.
  const auto all_tp_ranks = [&](OpKind kind) {
    if (!request.busiest_link_ns) return 0.0;
    std::vector<CollectiveLoad> loads;
    for (int t = 0; t < o.tp; ++t) {
      CollectiveLoad load{kind, {}, bytes, 1};
      for (int g : group) load.gpus.push_back(g + t);
      loads.push_back(std::move(load));
    }
    return request.busiest_link_ns(loads);
  };
  if (zero == 0) {
    return ns + std::max(request.collective_ns(OpKind::kAllReduce, group, bytes),
                         all_tp_ranks(OpKind::kAllReduce));
  }
  // ZeRO-1 / 2: each tp rank's REDUCE_SCATTER, its OPTIMIZER, its ALLGATHER in series. The
  // last reduce-scatter to end ends after all of them moved their bytes; the first
  // all-gather starts after one reduce-scatter and the OPTIMIZER; and every byte of both moves
  // after the backward.
  const double rs = request.collective_ns(OpKind::kReduceScatter, group, bytes);
  const double ag = request.collective_ns(OpKind::kAllGather, group, bytes);
  const double rs_all = all_tp_ranks(OpKind::kReduceScatter);
  const double ag_all = all_tp_ranks(OpKind::kAllGather);
  double both_all = 0;
  if (request.busiest_link_ns) {
    std::vector<CollectiveLoad> loads;
    for (int t = 0; t < o.tp; ++t) {
      for (OpKind kind : {OpKind::kReduceScatter, OpKind::kAllGather}) {
        CollectiveLoad load{kind, {}, bytes, 1};
        for (int g : group) load.gpus.push_back(g + t);
        loads.push_back(std::move(load));
      }
    }
    both_all = request.busiest_link_ns(loads);
  }
  return std::max({ns + rs + ag, ns + rs_all + ag, ns + rs + ag_all, both_all});
}

double StrategySearch::LowerBoundNs(const GenerateOptions& o, const SearchRequest& request,
                                    double unit_compute_ns, double recompute_ns, double fill_steps,
                                    bool replay) const {
  const int L = model_.sequence;
  const int stages = o.pp * o.virtual_stages;
  // Blocking tp collectives: schedule/generator.cpp puts each layer part's tp collective on
  // the compute stream between the parts (ALLREDUCE, or ALLGATHER before and REDUCE_SCATTER
  // after with sequence parallelism), two parts forward and two backward per layer, so the
  // first rank's compute stream runs them in series with its compute, one unit after another.
  // Counted over floor(L / (P V)) layers per chunk (every stage has at least that many).
  double tp_ns = 0, part = 0;
  if (o.tp > 1 && request.collective_ns) {
    std::vector<int> group;
    for (int t = 0; t < o.tp; ++t) group.push_back(t);
    const Bytes bytes = static_cast<Bytes>(o.microbatch_size) * L * model_.hidden * 2;
    part = o.sequence_parallel ? request.collective_ns(OpKind::kAllGather, group, bytes) +
                                     request.collective_ns(OpKind::kReduceScatter, group, bytes)
                               : request.collective_ns(OpKind::kAllReduce, group, bytes);
    tp_ns = 4.0 * part * (model_.layers / stages) * o.virtual_stages;
  }
  const double unit = unit_compute_ns + recompute_ns + tp_ns;
  // On the other stages with sequence parallelism the replay runs a stage's forward faster
  // than compute + collectives (measured: gpt3-1b 1x8x2 on p3.16xlarge:2, stage 1 47 ms
  // against stage 0's 57 ms), so there only the compute is counted. Their recomputation is
  // left out: full recomputation's first RECOMPUTE op runs before the gradient arrives, so a
  // fill step can be shorter than a unit (measured: gpt3-175b gpipe 4x32x4 on
  // p4d.24xlarge:64, 23.303 s with it against a replay of 23.302 s).
  const double other_unit =
      o.sequence_parallel && o.tp > 1 ? unit_compute_ns : unit_compute_ns + tp_ns;
  // The fill steps run on the other stages, which may hold one layer less than the first:
  // scaled by floor / ceil of the layers per stage (compute grows with the layers).
  const double fill_scale = static_cast<double>(model_.layers / stages) /
                            static_cast<double>((model_.layers + stages - 1) / stages);
  double ns = o.microbatches * unit + fill_steps * other_unit * fill_scale;
  const bool split = o.strategy == Strategy::kZbH1 || o.strategy == Strategy::kZbH2 ||
                     o.strategy == Strategy::kInterleavedZb || o.strategy == Strategy::kZbV ||
                     o.strategy == Strategy::kDualPipeV;
  // The trip of one micro-batch's boundary tensor over the pipeline ranks of `path` (virtual
  // stages in order; consecutive stages on one rank hand over in memory), tp rank 0 of rank r
  // being GPU r T.
  double chain_ns = 0, first_trip = 0;
  static const std::vector<double> kNoHops;
  const std::vector<double>* hops = &kNoHops;       // per boundary vs -> vs + 1 (0: none)
  const std::vector<double>* back_hops = &kNoHops;  // and its gradient, vs + 1 -> vs
  if (o.pp > 1 && request.transfers_ns) {
    Bytes bytes = static_cast<Bytes>(o.microbatch_size) * L * model_.hidden * 2;
    if (o.sequence_parallel && o.tp > 1) bytes /= o.tp;
    const bool v_shape = o.strategy == Strategy::kZbV || o.strategy == Strategy::kDualPipeV;
    const int senders = o.boundary == Boundary::kBroadcast ? 1 : o.tp;
    // Remembered by what they depend on: every recipe variant of a configuration asks again.
    const auto key = std::make_tuple(o.pp, o.virtual_stages, v_shape, o.tp, bytes, senders);
    auto at = hop_ns_.find(key);
    if (at == hop_ns_.end()) {
      std::vector<int> ranks;  // the rank of each virtual stage
      for (int vs = 0; vs < stages; ++vs) {
        ranks.push_back(v_shape && vs >= o.pp ? 2 * o.pp - 1 - vs : vs % o.pp);
      }
      std::vector<double> forward(std::max(0, stages - 1), 0.0), backward(forward.size(), 0.0);
      // Point to point: every tp rank sends its tensor to its peer at once, and the next
      // stage's first tp collective needs every rank's (sharing the node's NICs); broadcast:
      // tp rank 0 to tp rank 0 (its broadcast inside the stage not counted). The gradient goes
      // back over the same pairs reversed. The same rank pair recurs once per chunk with
      // V > 1: costed once.
      std::map<std::pair<int, int>, std::pair<double, double>> pair_ns;
      for (int vs = 0; vs + 1 < stages; ++vs) {
        if (ranks[vs] == ranks[vs + 1]) continue;
        const auto pair = std::make_pair(ranks[vs], ranks[vs + 1]);
        auto known = pair_ns.find(pair);
        if (known == pair_ns.end()) {
          std::vector<std::pair<int, int>> there, back;
          for (int t = 0; t < senders; ++t) {
            there.emplace_back(ranks[vs] * o.tp + t, ranks[vs + 1] * o.tp + t);
            back.emplace_back(ranks[vs + 1] * o.tp + t, ranks[vs] * o.tp + t);
          }
          known = pair_ns
                      .emplace(pair, std::make_pair(request.transfers_ns(there, bytes),
                                                    request.transfers_ns(back, bytes)))
                      .first;
        }
        forward[vs] = known->second.first;
        backward[vs] = known->second.second;
      }
      at = hop_ns_.emplace(key, std::make_pair(std::move(forward), std::move(backward))).first;
    }
    hops = &at->second.first;
    back_hops = &at->second.second;
    for (int vs = 0; vs + 1 < stages; ++vs) {
      const double c = (*hops)[vs];
      if (c == 0) continue;  // the same rank (or nothing to cross)
      chain_ns += 2 * c;     // forward, and the gradient back
      if (vs + 1 < o.pp) first_trip += c;
    }
  }
  // One micro-batch's chain: its forward through every virtual stage then its backward back
  // (the input-gradient half with a split backward), each step waiting for the one before,
  // across every boundary twice. Its compute is at least P ranks of floor-sized stages; with
  // a split backward only the forward and input-gradient part, counted as half of the unit
  // (the weight-gradient part is at most the input-gradient part).
  chain_ns += o.pp * other_unit * fill_scale * (split ? 0.5 : 1.0);
  // Pipeline p2p: the last pipeline rank can start nothing before the first micro-batch has
  // crossed the P - 1 boundaries to it (each transfer waits for the forward before it), and
  // then runs all of its units. In GPipe, 1F1B and interleaved 1F1B its last op is a backward
  // of its first chunk (stage P - 1), whose gradient then crosses the P - 1 boundaries back to
  // the first rank, which ends with that micro-batch's backward: twice the boundaries. The
  // zero-bubble orders may end on a weight-gradient op instead: once.
  ns += (split ? 1 : 2) * first_trip;
  ns = std::max(ns, chain_ns);
  if (o.dp > 1 && o.zero == 3 && request.collective_ns) {
    // ZeRO-3 (schedule/generator.cpp): every unit all-gathers each layer's parameters for its
    // forward and again for its backward on the device's `zero` stream, and reduce-scatters
    // each layer's gradients on its `dp` stream; a stream runs its ops one after another, so
    // the iteration lasts at least either stream's sum (over floor(L / (P V)) layers a chunk).
    std::vector<int> group;
    for (int d = 0; d < o.dp; ++d) group.push_back(d * o.pp * o.tp);
    const Bytes layer_bytes = 2 * LayerShardParams(model_, o.tp, Block::kWhole);
    const double per_unit = static_cast<double>(model_.layers / stages) * o.virtual_stages *
                            std::max(1, o.microbatches);
    const double gathers =
        2 * per_unit * request.collective_ns(OpKind::kAllGather, group, layer_bytes);
    const double scatters =
        per_unit * request.collective_ns(OpKind::kReduceScatter, group, layer_bytes);
    ns = std::max({ns, gathers, scatters});
    if (request.busiest_link_ns) {
      // Every device of the first node runs as many of its own (its dp group: GPUs d P T + g
      // for its GPU g), all within the iteration: the node's links carry them all.
      std::vector<CollectiveLoad> loads;
      const int node_gpus = std::min(cluster_.GpusPerNode(), o.pp * o.tp);
      for (int g = 0; g < node_gpus; ++g) {
        CollectiveLoad gather{OpKind::kAllGather, {}, layer_bytes, 2 * per_unit};
        for (int d = 0; d < o.dp; ++d) gather.gpus.push_back(d * o.pp * o.tp + g);
        CollectiveLoad scatter = gather;
        scatter.kind = OpKind::kReduceScatter;
        scatter.count = per_unit;
        loads.push_back(std::move(gather));
        loads.push_back(std::move(scatter));
      }
      ns = std::max(ns, request.busiest_link_ns(loads));
    }
  }
  ns += StepTailNs(o, request);
  if (!replay) return std::max(ns, ChunkStepsNs(o, request, part, *hops, nullptr));
  // Every rank's order replayed at the steps' lower bounds, and what follows the first rank's
  // last step.
  const std::vector<double> no_hops(std::max(0, stages - 1), 0.0);
  const PipelineTimes& times = PipelineTimesOf(o, request, hops->empty() ? no_hops : *hops,
                                               back_hops->empty() ? no_hops : *back_hops);
  if (!times.rank_end.empty()) ns = std::max(ns, PipelineTailNs(o, request, times));
  return std::max(ns,
                  ChunkStepsNs(o, request, part, *hops, times.rank_end.empty() ? nullptr : &times));
}

double StrategySearch::TpPartNs(const GenerateOptions& o, const SearchRequest& request,
                                int rank) const {
  if (o.tp < 2 || !request.collective_ns) return 0;
  std::vector<int> group;
  for (int t = 0; t < o.tp; ++t) group.push_back(rank * o.tp + t);
  const Bytes bytes = static_cast<Bytes>(o.microbatch_size) * model_.sequence * model_.hidden * 2;
  return o.sequence_parallel ? request.collective_ns(OpKind::kAllGather, group, bytes) +
                                   request.collective_ns(OpKind::kReduceScatter, group, bytes)
                             : request.collective_ns(OpKind::kAllReduce, group, bytes);
}

double StrategySearch::PassNs(const GenerateOptions& o, Pass pass, double part_ns,
                              int layers) const {
  // Selective recomputation makes a backward (or its input part) recompute the attention core
  // first, as sim/op_work.cpp costs it; full recomputation runs the layer's forward again
  // before it (its RECOMPUTE ops, their tp collectives not counted).
  const auto compute = [&](Pass p) {
    // Remembered: every recipe variant of a configuration asks again.
    const bool selective =
        o.recompute == Recompute::kSelective && (p == Pass::kBackward || p == Pass::kBackwardInput);
    const auto key = std::make_tuple(p, o.microbatch_size, o.tp, selective, layers);
    const auto known = pass_compute_ns_.find(key);
    if (known != pass_compute_ns_.end()) return known->second;
    SliceWork work;
    work.pass = p;
    work.rows = o.microbatch_size;
    work.tokens = model_.sequence;
    work.tp = o.tp;
    work.recompute_attention = selective;
    if (o.tp == 1) {
      // One op per chunk, or one per layer (bucketed): the chunk's op costs no more.
      work.layers = layers;
      work.block = Block::kWhole;
      return pass_compute_ns_[key] = static_cast<double>(compute_.Time(work));
    }
    work.layers = 1;
    double ns = 0;
    for (Block block : {Block::kAttention, Block::kMlp}) {
      work.block = block;
      ns += static_cast<double>(compute_.Time(work));
    }
    return pass_compute_ns_[key] = layers * ns;
  };
  double ns = compute(pass) + (o.tp > 1 ? layers * 2 * part_ns : 0);
  if (o.recompute == Recompute::kFull &&
      (pass == Pass::kBackward || pass == Pass::kBackwardInput)) {
    ns += compute(Pass::kForward);
  }
  return ns;
}

const StrategySearch::PipelineTimes& StrategySearch::PipelineTimesOf(
    const GenerateOptions& o, const SearchRequest& request, const std::vector<double>& forward_hops,
    const std::vector<double>& backward_hops) const {
  const auto key = std::make_tuple(
      o.strategy, o.pp, o.virtual_stages, o.microbatches, o.microbatch_size, o.tp, o.recompute,
      o.sequence_parallel, o.boundary, o.backward_in_forward_order,
      static_cast<bool>(request.collective_ns), static_cast<bool>(request.transfers_ns));
  const auto known = pipeline_times_.find(key);
  if (known != pipeline_times_.end()) return known->second;
  PipelineTimes& out = pipeline_times_[key];
  const int p = o.pp, v = o.virtual_stages, m = o.microbatches, stages = p * v;
  std::vector<std::vector<PipelineStep>> orders(p);
  for (int r = 0; r < p; ++r) {
    orders[r] = RankOrder(o, r);
    if (orders[r].empty()) return out;
  }
  const bool v_shape = o.strategy == Strategy::kZbV || o.strategy == Strategy::kDualPipeV;
  const auto stage_of = [&](int rank, int chunk) {
    return v_shape && chunk == 1 ? 2 * p - 1 - rank : chunk * p + rank;
  };
  const auto rank_of = [&](int stage) {
    return v_shape && stage >= p ? 2 * p - 1 - stage : stage % p;
  };
  // Per rank and chunk: forward, whole backward, input-gradient and weight-gradient steps
  // (StageLayers: the first L mod (P V) stages hold one layer more).
  const std::vector<Range> layers = StageLayers(model_.layers, p, v);
  std::vector<std::vector<std::array<double, 4>>> step_ns(p);
  // Full recomputation's RECOMPUTE ops need no input gradient: with T >= 2 the generator
  // writes them per layer, each just before that layer's backward, so the top layer's may run
  // before the gradient arrives; with T = 1 (one op per chunk, or per layer where bucketed)
  // the chunk's whole recomputed forward may. Only the rest of a backward counts after the
  // arrival.
  std::vector<std::vector<double>> early_ns(p);
  for (int r = 0; r < p; ++r) {
    const double part = TpPartNs(o, request, r);
    for (int c = 0; c < v; ++c) {
      const int n = layers[stage_of(r, c)].Length();
      const double forward = PassNs(o, Pass::kForward, part, n);
      step_ns[r].push_back({forward, PassNs(o, Pass::kBackward, part, n),
                            PassNs(o, Pass::kBackwardInput, part, n),
                            PassNs(o, Pass::kBackwardWeight, 0, n)});
      early_ns[r].push_back(o.recompute != Recompute::kFull ? 0
                            : o.tp > 1                      ? PassNs(o, Pass::kForward, 0, 1)
                                                            : PassNs(o, Pass::kForward, 0, n));
    }
  }
  // The end of each (stage, micro-batch)'s forward and backward (its input part with a split
  // backward); -1 until replayed.
  std::vector<double> forward_end(static_cast<size_t>(stages) * m, -1.0);
  std::vector<double> backward_end(forward_end.size(), -1.0);
  std::vector<size_t> next(p, 0);
  std::vector<double> clock(p, 0.0);
  out.last_weight_start.assign(v, 0.0);
  out.last_weight_end.assign(v, 0.0);
  // The first rank's last weight-gradient step of each chunk, in order.
  std::vector<int> last_weight(v, -1);
  for (int i = 0; i < static_cast<int>(orders[0].size()); ++i) {
    const PipelineStep& step = orders[0][i];
    if (!step.forward && step.part != BackwardPart::kInput) last_weight[step.chunk] = i;
  }
  // Each rank runs its order as far as its inputs are known; a rank whose step waits is
  // resumed once the step it waits for has run.
  std::vector<int> ready;
  std::vector<char> queued(p, 1);
  for (int r = p - 1; r >= 0; --r) ready.push_back(r);
  while (!ready.empty()) {
    const int r = ready.back();
    ready.pop_back();
    queued[r] = 0;
    const std::vector<PipelineStep>& order = orders[r];
    while (next[r] < order.size()) {
      const PipelineStep& step = order[next[r]];
      const int vs = stage_of(r, step.chunk);
      const size_t at = static_cast<size_t>(vs) * m + step.microbatch;
      double start = clock[r];
      int wake = -1;
      double* end_slot;
      int kind;
      if (step.forward) {
        if (vs > 0) {
          const double input = forward_end[at - m];
          if (input < 0) break;
          start = std::max(start, input + forward_hops[vs - 1]);
        }
        if (vs + 1 < stages) wake = rank_of(vs + 1);
        end_slot = &forward_end[at];
        kind = 0;
      } else if (step.part != BackwardPart::kWeight) {
        const double input = vs + 1 < stages ? backward_end[at + m] : forward_end[at];
        if (input < 0) break;
        start = std::max(
            start, input + (vs + 1 < stages ? backward_hops[vs] : 0.0) - early_ns[r][step.chunk]);
        if (vs > 0) wake = rank_of(vs - 1);
        end_slot = &backward_end[at];
        kind = step.part == BackwardPart::kWhole ? 1 : 2;
      } else {
        if (backward_end[at] < 0) break;
        start = std::max(start, backward_end[at]);
        end_slot = nullptr;
        kind = 3;
      }
      const double end = start + step_ns[r][step.chunk][kind];
      if (end_slot != nullptr) *end_slot = end;
      clock[r] = end;
      if (r == 0 && last_weight[step.chunk] == static_cast<int>(next[r])) {
        out.last_weight_start[step.chunk] = start;
        out.last_weight_end[step.chunk] = end;
        out.finish_order.push_back(step.chunk);
      }
      ++next[r];
      if (wake >= 0 && wake != r && !queued[wake]) {
        queued[wake] = 1;
        ready.push_back(wake);
      }
    }
  }
  for (int r = 0; r < p; ++r) {
    if (next[r] < orders[r].size()) {  // a wait no step resolves: not replayed
      out = PipelineTimes{};
      return out;
    }
  }
  out.rank_end = clock;
  return out;
}

double StrategySearch::PipelineTailNs(const GenerateOptions& o, const SearchRequest& request,
                                      const PipelineTimes& times) const {
  const int zero = o.dp > 1 ? o.zero : 0;
  const std::vector<Range> layers = StageLayers(model_.layers, o.pp, o.virtual_stages);
  const bool v_shape = o.strategy == Strategy::kZbV || o.strategy == Strategy::kDualPipeV;
  const auto chunk_layers = [&](int chunk) {
    return layers[v_shape && chunk == 1 ? 2 * o.pp - 1 : chunk * o.pp].Length();
  };
  // Each chunk's OPTIMIZER: its tp shard, 1 / D of it with ZeRO (sim/op_work.cpp).
  const auto optimizer_ns = [&](int n) {
    SliceWork opt;
    opt.pass = Pass::kOptimizer;
    opt.layers = n;
    opt.rows = 1;
    opt.tp = std::max(1, o.tp) * (zero > 0 ? o.dp : 1);
    return static_cast<double>(compute_.Time(opt));
  };
  // The generator writes every chunk's OPTIMIZER on the compute stream after the rank's last
  // step, in the order the chunks' last weight-gradient steps ran (`finish_order`), each
  // after its chunk's dp reduction; so every rank's compute stream runs its V OPTIMIZERs
  // (each of at least floor(L / (P V)) layers) after its last step.
  const int floor_layers = std::max(1, model_.layers / (o.pp * o.virtual_stages));
  double ns = 0;
  for (double end : times.rank_end) {
    ns = std::max(ns, end + o.virtual_stages * optimizer_ns(floor_layers));
  }
  const std::vector<int>& order = times.finish_order;
  if (order.empty()) return ns;
  const int last = order.back();
  double before_last = 0;  // the OPTIMIZERs before the last chunk's
  for (size_t k = 0; k + 1 < order.size(); ++k) before_last += optimizer_ns(chunk_layers(order[k]));
  const double last_opt = optimizer_ns(chunk_layers(last));
  const double end = times.rank_end[0];
  if (!request.collective_ns || o.dp < 2 || zero == 3) return ns;
  // The generator's mode (Mode()): ZeRO-1 / 2 turn bucketed into per stage.
  DpStep mode = ResolvedDpStep(o);
  if (mode == DpStep::kBucketed && zero > 0) mode = DpStep::kPerStage;
  const OpKind reduction = zero > 0 ? OpKind::kReduceScatter : OpKind::kAllReduce;
  std::vector<int> tp_group;
  for (int t = 0; t < o.tp; ++t) tp_group.push_back(t);
  std::vector<int> dp_group;
  for (int d = 0; d < o.dp; ++d) dp_group.push_back(d * o.pp * o.tp);
  const auto gradient_bytes = [&](int n) {
    return 2 * static_cast<Bytes>(n) * model_.ParamsPerLayer() / o.tp;
  };
  // Sequence parallelism's tp sum of the last chunk's replicated gradients (ARSP, 6 vectors
  // of `hidden` a layer in fp16): on the compute stream after the last step, before the dp
  // reduction (bucketed: on the dp stream after its last bucket).
  const double arsp = o.sequence_parallel && o.tp > 1
                          ? request.collective_ns(OpKind::kAllReduce, tp_group,
                                                  2 * Bytes{6} * model_.hidden * chunk_layers(last))
                          : 0;
  // The T tp ranks' loads of `kind` of the chunks `chunks` on their dp groups.
  const auto loads_of = [&](OpKind kind, const std::vector<int>& chunks,
                            std::vector<CollectiveLoad>& loads) {
    for (int chunk : chunks) {
      for (int t = 0; t < o.tp; ++t) {
        CollectiveLoad load{kind, {}, gradient_bytes(chunk_layers(chunk)), 1};
        for (int g : dp_group) load.gpus.push_back(g + t);
        loads.push_back(std::move(load));
      }
    }
  };
  if (mode == DpStep::kFlattened) {
    // A barrier over the replica after every rank's last step, then each chunk's ALLREDUCE
    // (ZeRO-1 / 2: REDUCE_SCATTER) in series on the dp stream, the last chunk's OPTIMIZER
    // after the last of them (and its ALLGATHER after that).
    double all = 0;
    for (int chunk : order) {
      all += request.collective_ns(reduction, dp_group, gradient_bytes(chunk_layers(chunk)));
    }
    const double gather = zero > 0 ? request.collective_ns(OpKind::kAllGather, dp_group,
                                                           gradient_bytes(chunk_layers(last)))
                                   : 0;
    const double latest = *std::max_element(times.rank_end.begin(), times.rank_end.end());
    ns = std::max(ns, latest + all + last_opt + gather);
    if (request.busiest_link_ns) {
      // After the barrier every device of the replica runs its own: every pipeline rank's T
      // tp ranks, each chunk's layers over its dp group (GPUs d P T + r T + t), sharing the
      // links of the nodes they share.
      std::vector<CollectiveLoad> loads;
      for (int r = 0; r < o.pp; ++r) {
        for (int chunk = 0; chunk < o.virtual_stages; ++chunk) {
          const int stage = v_shape && chunk == 1 ? 2 * o.pp - 1 - r : chunk * o.pp + r;
          for (int t = 0; t < o.tp; ++t) {
            CollectiveLoad load{reduction, {}, gradient_bytes(layers[stage].Length()), 1};
            for (int g : dp_group) load.gpus.push_back(g + r * o.tp + t);
            loads.push_back(std::move(load));
          }
        }
      }
      ns = std::max(ns, latest + request.busiest_link_ns(loads) + last_opt + gather);
    }
    return ns;
  }
  if (mode == DpStep::kBucketed) {
    // The last chunk's last bucket (one layer at least) waits for its lowest layer's
    // backward, the end of the last step; then ARSP on the dp stream; then its OPTIMIZER.
    const double bucket = request.collective_ns(OpKind::kAllReduce, dp_group, gradient_bytes(1));
    return std::max(ns, end + std::max(before_last, bucket + arsp) + last_opt);
  }
  if (zero == 0) {
    // Per stage: each chunk's ALLREDUCE on the dp stream after its last step (and ARSP);
    // the last chunk's OPTIMIZER after it and after the other OPTIMIZERs.
    const double reduce =
        request.collective_ns(OpKind::kAllReduce, dp_group, gradient_bytes(chunk_layers(last)));
    ns = std::max(ns, end + arsp + std::max(before_last, reduce) + last_opt);
    if (request.busiest_link_ns) {
      std::vector<CollectiveLoad> loads;
      loads_of(OpKind::kAllReduce, {last}, loads);
      ns = std::max(ns, end + arsp + request.busiest_link_ns(loads) + last_opt);
    }
    return ns;
  }
  // ZeRO-1 / 2: each chunk's REDUCE_SCATTER on the dp stream after its last step (the last
  // chunk's after ARSP), then, after every chunk's OPTIMIZER, each chunk's ALLGATHER on the
  // dp stream in the same order: every ALLGATHER runs after the last REDUCE_SCATTER, in
  // series, and the last one after the last OPTIMIZER; after the last step the busiest link
  // carries the T tp ranks' last reduce-scatters and every all-gather.
  const double scatter =
      request.collective_ns(OpKind::kReduceScatter, dp_group, gradient_bytes(chunk_layers(last)));
  double gathers = 0;
  for (int chunk : order) {
    gathers +=
        request.collective_ns(OpKind::kAllGather, dp_group, gradient_bytes(chunk_layers(chunk)));
  }
  const double last_gather =
      request.collective_ns(OpKind::kAllGather, dp_group, gradient_bytes(chunk_layers(last)));
  ns = std::max({ns, end + arsp + scatter + gathers,
                 end + arsp + std::max(before_last, scatter) + last_opt + last_gather});
  if (request.busiest_link_ns) {
    std::vector<CollectiveLoad> loads;
    loads_of(OpKind::kReduceScatter, {last}, loads);
    loads_of(OpKind::kAllGather, order, loads);
    ns = std::max(ns, end + arsp + request.busiest_link_ns(loads));
  }
  return ns;
}

double StrategySearch::ChunkStepsNs(const GenerateOptions& o, const SearchRequest& request,
                                    double tp_part_ns, const std::vector<double>& hops,
                                    const PipelineTimes* times) const {
  const int zero = o.dp > 1 ? o.zero : 0;
  if (o.dp < 2 || zero == 3 || !request.busiest_link_ns) return 0;
  const int m = o.microbatches, v = o.virtual_stages, stages = o.pp * v;
  const bool split = o.strategy == Strategy::kZbH1 || o.strategy == Strategy::kZbH2 ||
                     o.strategy == Strategy::kInterleavedZb || o.strategy == Strategy::kZbV ||
                     o.strategy == Strategy::kDualPipeV;
  const bool v_shape = o.strategy == Strategy::kZbV || o.strategy == Strategy::kDualPipeV;
  // Per chunk of the first rank: the forward, whole-backward and input-gradient steps its order
  // runs before its last weight-gradient step and through it. With V = 1 every order runs the
  // stage's M forwards and M - 1 of its backwards (input parts with a split backward, the
  // weight parts counted as nothing) before its last backward (or weight-gradient step).
  ChunkStepCounts one;
  const ChunkStepCounts* counts = &one;
  if (v == 1) {
    one.before = {
        {split ? std::array<int, 4>{m, 0, m, m - 1} : std::array<int, 4>{m, m - 1, 0, 0}}};
    one.through = {{split ? std::array<int, 4>{m, 0, m, m} : std::array<int, 4>{m, m, 0, 0}}};
  } else {
    switch (o.strategy) {
      case Strategy::kInterleaved:
      case Strategy::kInterleavedZb:
      case Strategy::kZbV:
      case Strategy::kDualPipeV:
        break;
      default:
        return 0;
    }
    // The first rank's order, reduced per chunk (remembered per shape: every recipe variant of
    // a configuration asks again).
    const auto shape = std::make_tuple(o.strategy, o.pp, v, m);
    auto counted = chunk_steps_.find(shape);
    if (counted == chunk_steps_.end()) {
      const std::vector<PipelineStep> order = o.strategy == Strategy::kInterleaved
                                                  ? InterleavedOrder(o.pp, v, 0, m)
                                                  : FirstRankOrder(o);
      ChunkStepCounts c;
      c.before.assign(v, {});
      c.through.assign(v, {});
      // Each chunk's last weight-gradient step (a whole backward or its weight part), then the
      // per-chunk counts of the steps run before and through it, taken there only.
      std::vector<int> last(v, -1);
      for (int i = 0; i < static_cast<int>(order.size()); ++i) {
        const PipelineStep& step = order[i];
        if (!step.forward && step.part != BackwardPart::kInput) last[step.chunk] = i;
      }
      std::vector<std::vector<int>> taken_at(order.size());
      for (int chunk = 0; chunk < v; ++chunk) {
        if (last[chunk] >= 0) taken_at[last[chunk]].push_back(chunk);
      }
      // Per chunk: forwards, whole backwards, input-gradient and weight-gradient steps.
      std::vector<std::array<int, 4>> run(v, {0, 0, 0, 0});
      for (size_t i = 0; i < order.size(); ++i) {
        const PipelineStep& step = order[i];
        if (!taken_at[i].empty()) {
          for (int chunk : taken_at[i]) c.before[chunk] = run;
        }
        std::array<int, 4>& mine = run[step.chunk];
        if (step.forward) {
          ++mine[0];
        } else if (step.part == BackwardPart::kWhole) {
          ++mine[1];
        } else if (step.part == BackwardPart::kInput) {
          ++mine[2];
        } else {
          ++mine[3];
        }
        for (int chunk : taken_at[i]) c.through[chunk] = run;
      }
      counted = chunk_steps_.emplace(shape, std::move(c)).first;
    }
    counts = &counted->second;
  }
  // A chunk's passes on its layers, each layer's blocks with their blocking tp collectives (two
  // parts forward, two backward or input-gradient; the weight-gradient part has none,
  // schedule/generator.cpp).
  const int floor_layers = std::max(1, model_.layers / stages);
  const auto pass_ns = [&](Pass pass, double part_ns, int layers) {
    return PassNs(o, pass, part_ns, layers);
  };
  // The first rank's chunks: their virtual stages in order, and their layers (StageLayers: the
  // first L mod (P V) stages hold one layer more).
  const std::vector<Range> stage_layers = StageLayers(model_.layers, o.pp, v);
  std::vector<int> first_rank_stages;
  for (int vs = 0; vs < stages; ++vs) {
    const int rank = v_shape && vs >= o.pp ? 2 * o.pp - 1 - vs : vs % o.pp;
    if (rank == 0) first_rank_stages.push_back(vs);
  }
  // Per chunk of the first rank: forward, whole backward, input-gradient, weight-gradient.
  // Chunks hold floor(L / (P V)) or one layer more: each count costed once.
  std::map<int, std::array<double, 4>> by_layers;
  std::vector<std::array<double, 4>> pass;
  for (int vs : first_rank_stages) {
    const int layers = stage_layers[vs].Length();
    auto at = by_layers.find(layers);
    if (at == by_layers.end()) {
      at = by_layers
               .emplace(layers,
                        std::array<double, 4>{
                            pass_ns(Pass::kForward, tp_part_ns, layers),
                            pass_ns(Pass::kBackward, tp_part_ns, layers),
                            split ? pass_ns(Pass::kBackwardInput, tp_part_ns, layers) : 0,
                            split ? pass_ns(Pass::kBackwardWeight, 0, layers) : 0})
               .first;
    }
    pass.push_back(at->second);
  }
  // The chain of the micro-batch whose backward of a chunk ends last (as in LowerBoundNs): its
  // forward on the first stage comes after the first rank's M forwards of that stage at the
  // earliest (the rank runs them one after another), then it crosses the other S - 1 stages
  // forward and the stages after the chunk's backward (input parts with a split backward),
  // compute only on floor-sized stages, with the boundary transfers (`hops`, stage to stage).
  const double other_forward = pass_ns(Pass::kForward, 0, floor_layers);
  const double other_backward =
      pass_ns(split ? Pass::kBackwardInput : Pass::kBackward, 0, floor_layers);
  double forward_hops = 0;
  for (double h : hops) forward_hops += h;
  // Where each chunk's weight gradients are complete on the first rank, at the earliest: its
  // compute stream runs every step before in series, and the chain above reaches it. A
  // bucketed step may start a chunk's buckets during that backward: counted from its start.
  const bool bucketed = zero == 0 && ResolvedDpStep(o) == DpStep::kBucketed;
  const auto& steps = bucketed ? counts->before : counts->through;
  // Each of the first rank's chunks moves its own layers' gradients (StageLayers: the first
  // L mod (P V) stages hold one layer more): every tp rank's dp step of them (ALLREDUCE, or
  // REDUCE_SCATTER and ALLGATHER) over its dp group (GPUs d P T + t), costed once per layer
  // count on the busiest link.
  const auto chunk_step_ns = [&](int layers) {
    const auto key = std::make_tuple(o.dp, o.pp, o.tp, zero > 0, layers);
    auto at = chunk_step_ns_.find(key);
    if (at != chunk_step_ns_.end()) return at->second;
    const Bytes bytes = 2 * static_cast<Bytes>(layers) * model_.ParamsPerLayer() / o.tp;
    std::vector<CollectiveLoad> loads;
    for (int t = 0; t < o.tp; ++t) {
      std::vector<int> group;
      for (int d = 0; d < o.dp; ++d) group.push_back(d * o.pp * o.tp + t);
      if (zero == 0) {
        loads.push_back({OpKind::kAllReduce, group, bytes, 1});
      } else {
        loads.push_back({OpKind::kReduceScatter, group, bytes, 1});
        loads.push_back({OpKind::kAllGather, group, bytes, 1});
      }
    }
    return chunk_step_ns_[key] = request.busiest_link_ns(loads);
  };
  std::vector<std::pair<double, double>> done;  // (complete at the earliest, its dp step)
  for (size_t c = 0; c < steps.size() && c < first_rank_stages.size(); ++c) {
    if (steps[c].empty()) continue;  // a chunk without weight-gradient steps (none today)
    const int s = first_rank_stages[c];
    double back_hops = 0;
    for (int b = s; b < static_cast<int>(hops.size()); ++b) back_hops += hops[b];
    double chain = m * pass[0][0] + (stages - 1) * other_forward +
                   (stages - 1 - s) * other_backward + forward_hops + back_hops;
    if (!bucketed) chain += split ? pass[c][2] + pass[c][3] : pass[c][1];
    double series = 0;
    for (size_t k = 0; k < steps[c].size() && k < pass.size(); ++k) {
      for (int i = 0; i < 4; ++i) series += steps[c][k][i] * pass[k][i];
    }
    // The pipeline's replay at its steps' lower bounds reaches the chunk's last step no earlier.
    if (times != nullptr) {
      chain = std::max(chain, bucketed ? times->last_weight_start[c] : times->last_weight_end[c]);
    }
    done.emplace_back(std::max(chain, series), chunk_step_ns(stage_layers[s].Length()));
  }
  std::sort(done.begin(), done.end());
  // From the k-th chunk to complete on, every chunk completing then or later still moves its
  // dp step over the busiest link.
  double best = 0, rest = 0;
  for (size_t k = done.size(); k-- > 0;) {
    rest += done[k].second;
    best = std::max(best, done[k].first + rest);
  }
  return best;
}

int64_t EstimateOps(const GenerateOptions& o, int units) {
  const int stages = o.pp * o.virtual_stages;
  const int chunk_layers = (o.model.layers + stages - 1) / stages;
  const bool zero3 = o.dp > 1 && o.zero == 3;
  const bool split = o.strategy == Strategy::kZbH1 || o.strategy == Strategy::kZbH2 ||
                     o.strategy == Strategy::kInterleavedZb || o.strategy == Strategy::kZbV ||
                     o.strategy == Strategy::kDualPipeV;
  // Passes per unit and chunk: forward, backward (input and weight when split), recompute.
  const int passes = 2 + (split ? 1 : 0) + (o.recompute == Recompute::kFull ? 1 : 0);
  int64_t per_chunk = passes;  // one op per pass for the whole chunk
  if (o.tp > 1 || zero3) {
    // Per layer and part (2 parts with tp), each followed by its tp collective(s).
    const int parts = o.tp > 1 ? 2 : 1;
    const int collectives = o.tp > 1 ? (o.sequence_parallel ? 2 : 1) : 0;
    per_chunk = static_cast<int64_t>(chunk_layers) * passes * parts * (1 + collectives);
    if (zero3) per_chunk += 3LL * chunk_layers;  // all-gather forward, backward; reduce-scatter
  }
  per_chunk += 4;  // SEND / RECV of the activation and of its gradient
  const int64_t per_device =
      static_cast<int64_t>(std::max(1, units)) * o.virtual_stages * per_chunk +
      4LL * o.virtual_stages;
  return per_device * o.dp * o.pp * o.tp;
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
    // Without the pipeline's replay (PipelineTimesOf): only the chosen variant's bound is used.
    if (!Estimate(v.candidate, request, false)) continue;
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
  if (best.memory.peak <= capacity) Estimate(c, request, true);  // its bound in full
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
      base.dp_step = request.dp_step;
      base.dp_bucket_bytes = request.dp_bucket_bytes;
      const int replica = request.batch / d;
      if (family == Family::kTeraPipe) {
        if (request.microbatch_size > 0 && replica % request.microbatch_size != 0) continue;
        Candidate c;
        c.family = family;
        c.options = base;
        c.options.strategy = Strategy::kTeraPipe;
        c.options.order = SliceOrder::kFlush;
        // Memory first, as for the other families: the training state alone (16 bytes per
        // parameter of the largest stage's shard), then the first stage's peak with every
        // unit's activations held (TeraPipeMemoryLowerBound): for any slicing before the
        // planner runs, then for the planner's. What cannot fit is neither planned further nor
        // generated (nor its fold probed).
        const Bytes capacity = device_.CapacityBytes();
        const int layers_per_device = (model_.layers + p - 1) / p;
        const Bytes state = TrainingState(static_cast<int64_t>(layers_per_device) *
                                          (LayerShardParams(model_, t, Block::kAttention) +
                                           LayerShardParams(model_, t, Block::kMlp)))
                                .Total();
        AnalyticMemoryResult bound = TeraPipeMemoryLowerBound(c.options, replica);
        if (state <= capacity && bound.peak <= capacity) {
          if (!Estimate(c, request)) continue;
          bound = TeraPipeMemoryLowerBound(c.options, replica);
        }
        c.analytic_peak = bound.peak;
        c.analytic_fits = state <= capacity && bound.peak <= capacity;
        if (state > capacity) {
          c.analytic_reason = fmt::format("does not fit: training state {} exceeds capacity {}",
                                          FormatGiB(state), FormatGiB(capacity));
        } else if (!c.analytic_fits) {
          c.analytic_reason = fmt::format(
              "does not fit: first stage peak at least {} (analytic, the replica's activations "
              "held in flush order{}) > capacity {}; largest term: {} {}",
              FormatGiB(bound.peak), c.slicing.empty() ? ", any slicing" : "", FormatGiB(capacity),
              bound.largest_term, FormatGiB(bound.largest_bytes));
        }
        out.push_back(std::move(c));
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
  return Run(request, [&evaluate](const Candidate& c, const Schedule& schedule,
                                  const MemoryEstimate&) { return evaluate(c, schedule); });
}

std::vector<FamilyResult> StrategySearch::Run(const SearchRequest& request,
                                              const EvaluateWithMemoryFn& evaluate) const {
  const size_t count = request.families.size();
  const int workers = TaskWorkers(request.jobs, count);
  if (workers == 1) {
    std::vector<FamilyResult> results;
    for (Family family : request.families) {
      results.push_back(SearchFamily(family, SortedCandidates(family, request), request, evaluate));
    }
    return results;
  }
  // Several families at once, each on one thread with its own copy of this search's memos (pure
  // functions of their keys, so every copy answers as this one would); progress lines whole.
  std::mutex progress_mutex;
  SearchRequest shared = request;
  if (request.progress) {
    shared.progress = [&request, &progress_mutex](const std::string& line) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      request.progress(line);
    };
  }
  std::vector<StrategySearch> locals;
  locals.reserve(workers);
  for (int w = 0; w < workers; ++w) locals.push_back(*this);
  std::vector<size_t> order(count);
  for (size_t i = 0; i < count; ++i) order[i] = i;
  std::vector<std::vector<Candidate>> candidates(count);
  RunTasks(workers, order, [&](int worker, size_t i) {
    candidates[i] = locals[worker].SortedCandidates(request.families[i], shared);
  });
  // The families of the most work first (the ops of the candidates they may simulate), so that
  // the last to finish is a small one.
  std::vector<int64_t> work(count, 0);
  for (size_t i = 0; i < count; ++i) {
    int budget = request.max_evaluations_per_family;
    for (const Candidate& c : candidates[i]) {
      if (budget <= 0) break;
      if (!c.analytic_fits) continue;
      work[i] += c.ops_estimate;
      --budget;
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&work](size_t a, size_t b) { return work[a] > work[b]; });
  std::vector<FamilyResult> results(count);
  RunTasks(workers, order, [&](int worker, size_t i) {
    results[i] = locals[worker].SearchFamily(request.families[i], std::move(candidates[i]), shared,
                                             evaluate);
  });
  return results;
}

std::vector<Candidate> StrategySearch::SortedCandidates(Family family,
                                                        const SearchRequest& request) const {
  std::vector<Candidate> candidates = Enumerate(family, request);
  // Ascending lower bound (ties: ascending estimate, Enumerate's order): once a bound reaches
  // the best time simulated, no later candidate can beat it.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.bound_s < b.bound_s; });
  return candidates;
}

FamilyResult StrategySearch::SearchFamily(Family family, std::vector<Candidate> candidates,
                                          const SearchRequest& request,
                                          const EvaluateWithMemoryFn& evaluate) const {
  FamilyResult result;
  result.family = family;
  int evaluations = 0;
  int over_memory = 0;
  bool stopped_by_bound = false;
  // Memory first: what does not fit analytically is never generated, bound or not.
  for (const Candidate& c : candidates) {
    if (c.analytic_fits) continue;
    Evaluation e;
    e.candidate = c;
    e.note = c.analytic_reason;
    ++over_memory;
    result.tried.push_back(std::move(e));
  }
  for (Candidate& c : candidates) {
    if (!c.analytic_fits) continue;
    if (evaluations >= request.max_evaluations_per_family) break;
    Evaluation e;
    e.candidate = c;
    if (result.found && c.bound_s >= result.best.iteration_s) {
      stopped_by_bound = true;
      break;
    }
    const bool folded = request.fold && c.ops_estimate > request.folded_above_ops;
    // The whole schedule, or for a large candidate the representatives' ops only.
    const auto what_to_generate = [&request, folded](const GenerateOptions& options) {
      return folded ? request.fold(options) : FoldedGeneration{options, 1};
    };
    const FoldedGeneration plan = what_to_generate(c.options);
    const int64_t generated_ops = c.ops_estimate / std::max(1, plan.budget_order);
    if (request.max_ops > 0 && generated_ops > request.max_ops) {
      // Too big to generate within the budget; counted, not tried.
      ++result.pruned_by_ops;
      continue;
    }
    if (request.progress) {
      request.progress(fmt::format("{} {}: generating and checking memory", FamilyName(family),
                                   DegreesText(c.options)));
    }
    Schedule schedule;
    try {
      schedule = Generate(plan.options);
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
      Schedule other = Generate(what_to_generate(next.options).options);
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
      // The micro-batch families' M x b (and V): which of a (D, P, T)'s candidates it is.
      const GenerateOptions& o = e.candidate.options;
      const std::string units =
          family == Family::kTeraPipe
              ? ""
              : fmt::format(" {} x {}{}", o.microbatches, o.microbatch_size,
                            o.virtual_stages > 1 ? fmt::format(" v{}", o.virtual_stages) : "");
      request.progress(fmt::format("{} {}{} {}: simulating ({} ops, lower bound {:.3f} s)",
                                   FamilyName(family), DegreesText(o), units, RecipeText(o),
                                   schedule.ops.size(), e.candidate.bound_s));
    }
    e.iteration_s = evaluate(e.candidate, schedule, e.memory);
    e.evaluated = true;
    if (request.progress) {
      request.progress(fmt::format("{} {}: {:.3f} s", FamilyName(family),
                                   DegreesText(e.candidate.options), e.iteration_s));
    }
    ++evaluations;
    if (!result.found || e.iteration_s < result.best.iteration_s) {
      result.best = e;
      result.found = true;
    }
    result.tried.push_back(std::move(e));
  }
  // The loop stops early only at the budget or at the bound.
  result.candidates = static_cast<int>(candidates.size());
  const int untried =
      result.candidates - static_cast<int>(result.tried.size()) - result.pruned_by_ops;
  (stopped_by_bound ? result.pruned_by_bound : result.pruned_by_budget) = untried;
  if (!result.found) {
    // The rejection quoted: the candidate that came closest to fitting (the smallest peak,
    // exact where it was generated, else analytic), not merely the first tried.
    std::string closest;
    Bytes closest_peak = 0;
    for (const Evaluation& e : result.tried) {
      const Bytes peak = e.memory.devices.empty() ? e.candidate.analytic_peak : e.memory.peak_bytes;
      if (e.note.empty() || peak <= 0) continue;
      if (closest.empty() || peak < closest_peak) {
        closest = e.note;
        closest_peak = peak;
      }
    }
    if (closest.empty() && !result.tried.empty()) closest = result.tried.front().note;
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
    } else if (result.pruned_by_ops > 0) {
      result.reason = fmt::format(
          "{} of {} configurations exceed the op budget ({} ops), the others do not fit in "
          "memory{}",
          result.pruned_by_ops, candidates.size(), request.max_ops,
          closest.empty() ? "" : " (" + closest + ")");
    } else {
      result.reason =
          fmt::format("none of {} configurations fits in memory ({})", candidates.size(), closest);
    }
  }
  return result;
}

}  // namespace terasim

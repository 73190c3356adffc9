#include "models/operator_cost.h"

#include <algorithm>
#include <cmath>

#include "models/errors.h"
#include "models/layer_flops.h"

namespace terasim {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The shortest slice of k that split-K gives one thread block.
constexpr int64_t kMinSplitK = 256;

}  // namespace

OperatorCostModel::OperatorCostModel(ModelCard model, DeviceSpec device, bool sequence_parallel,
                                     bool kv_cache, bool synchronized)
    : model_(std::move(model)), device_(std::move(device)) {
  if (!device_.operator_model) {
    ThrowInput("{}: no operator_model: the operator cost model needs its parameters",
               device_.origin.empty() ? device_.name : device_.origin);
  }
  params_ = *device_.operator_model;
  if (synchronized) params_.host_runs_ahead = false;  // no host lead at a synchronized start
  options_.fused = params_.fused;
  options_.sequence_parallel = sequence_parallel;
  options_.kv_cache = kv_cache;
  options_.weight_gradient_passes = device_.compute.weight_gradient_passes;
  options_.tp_collectives = params_.collective_host_ns > 0;
}

std::string OperatorCostModel::Name() const {
  return "operator " + device_.name + " " + model_.name;
}

OperatorCostModel::GemmTiming OperatorCostModel::GemmOnTile(const LayerOperator& op,
                                                            OperatorModelParams::Tile tile) const {
  GemmTiming g;
  g.tile = tile;
  const int64_t tiles = op.batch * CeilDiv(op.m, tile.m) * CeilDiv(op.n, tile.n);
  // Fewer tiles than SMs: the library splits k over the idle SMs (split-K), in slices of at
  // least kMinSplitK.
  const int64_t split = std::max<int64_t>(1, std::min(device_.sm_count / tiles, op.k / kMinSplitK));
  g.waves = CeilDiv(tiles * split, device_.sm_count);
  double sm_rate = device_.PeakFlops() / device_.sm_count * params_.gemm_efficiency;
  if (params_.l2_bw_bytes_per_s > 0) {
    // The tiles running at once share the L2 bandwidth; each step of k loads m + n fp16
    // values for 2 m n FLOPs.
    const int64_t active = std::min<int64_t>(tiles * split, device_.sm_count);
    // A partial tile loads only the rows and columns inside the matrix (its out-of-bounds
    // loads are predicated off; its MMAs still run on the full tile): per tile, on average,
    // m / ceil(m / tm) rows and n / ceil(n / tn) columns.
    const double rows = static_cast<double>(op.m) / static_cast<double>(CeilDiv(op.m, tile.m));
    const double cols = static_cast<double>(op.n) / static_cast<double>(CeilDiv(op.n, tile.n));
    const double intensity = static_cast<double>(tile.m) * tile.n / (rows + cols);
    sm_rate =
        std::min(sm_rate, params_.l2_bw_bytes_per_s / static_cast<double>(active) * intensity);
  }
  // The prologue and epilogue at most double a tile: a shallower tile's fixed cost is its
  // memory traffic, which the memory roofline already counts.
  const int64_t depth = CeilDiv(op.k, split);
  const double tile_steps =
      static_cast<double>(depth + std::min<int64_t>(depth, params_.tile_k_overhead));
  g.compute_s = static_cast<double>(g.waves) * 2.0 * tile.m * tile.n * tile_steps / sm_rate;
  return g;
}

OperatorTiming OperatorCostModel::Cost(const LayerOperator& op, TimeNs host_ns) const {
  OperatorTiming t;
  t.op = op;
  if (op.kind == OperatorKind::kCollective) {
    // The host's call only: the collective's own time is the network model's.
    t.overhead_s = NsToSeconds(params_.collective_host_ns);
    t.bound = "host";
    return t;
  }
  const bool gemm = op.kind == OperatorKind::kGemm && op.flops > 0;
  const double efficiency = gemm        ? params_.gemm_memory_efficiency
                            : op.layout ? params_.layout_memory_efficiency
                                        : params_.memory_efficiency;
  t.memory_s = static_cast<double>(op.bytes) / (device_.memory_bw_bytes_per_s * efficiency);
  if (gemm) {
    // The library runs each shape on the tile that finishes it first.
    GemmTiming best = GemmOnTile(op, {params_.tile_m, params_.tile_n});
    for (const OperatorModelParams::Tile& tile : params_.tiles) {
      const GemmTiming g = GemmOnTile(op, tile);
      if (g.compute_s < best.compute_s) best = g;
    }
    t.compute_s = best.compute_s;
    t.waves = best.waves;
    t.tile_m = best.tile.m;
    t.tile_n = best.tile.n;
  }
  t.gpu_s = std::max(t.compute_s, t.memory_s) + NsToSeconds(params_.kernel_gpu_ns) * op.kernels;
  t.overhead_s = NsToSeconds(host_ns) * op.kernels;
  if (t.overhead_s > t.gpu_s) {
    t.bound = "launch";
  } else {
    t.bound = t.compute_s > t.memory_s ? "compute" : "memory";
  }
  return t;
}

std::vector<OperatorTiming> OperatorCostModel::Breakdown(const SliceWork& work,
                                                         OperatorPass pass) const {
  const bool backward =
      pass == OperatorPass::kBackwardInput || pass == OperatorPass::kBackwardWeight;
  const TimeNs host_ns =
      backward ? params_.backward_kernel_overhead_ns : params_.kernel_overhead_ns;
  std::vector<OperatorTiming> out;
  for (const LayerOperator& op : LayerOperators(model_, work, pass, options_)) {
    out.push_back(Cost(op, host_ns));
  }
  return out;
}

double OperatorCostModel::QueueSeconds(const SliceWork& work,
                                       const std::vector<OperatorPass>& passes, int layers) const {
  std::vector<OperatorTiming> ops;
  for (OperatorPass pass : passes) {
    std::vector<OperatorTiming> part = Breakdown(work, pass);
    ops.insert(ops.end(), part.begin(), part.end());
  }
  return Queue(ops, layers);
}

double OperatorCostModel::WholeBackwardSeconds(const SliceWork& work, int layers) const {
  std::vector<OperatorTiming> ops;
  for (const LayerOperator& op : LayerBackwardOperators(model_, work, options_)) {
    ops.push_back(Cost(op, params_.backward_kernel_overhead_ns));
  }
  return Queue(ops, layers);
}

double OperatorCostModel::Queue(const std::vector<OperatorTiming>& ops, int layers) const {
  if (params_.host_runs_ahead) {
    // In a run of such ops the host issues each one while the GPU still works on earlier ones:
    // an op takes the longer of its GPU work and its host work (the period of the run).
    double host_s = 0;
    double gpu_s = 0;
    for (const OperatorTiming& t : ops) {
      host_s += t.overhead_s;
      gpu_s += t.gpu_s;
    }
    return layers * std::max(gpu_s, host_s);
  }
  double host = 0;
  double gpu_end = 0;
  for (int layer = 0; layer < layers; ++layer) {
    for (const OperatorTiming& t : ops) {
      host += t.overhead_s;
      gpu_end = std::max(host, gpu_end) + t.gpu_s;  // the GPU starts at 0 at the earliest
    }
  }
  return gpu_end;
}

TimeNs OperatorCostModel::Time(const SliceWork& work) const {
  TERASIM_CHECK(
      work.layers >= 1 && work.rows >= 1 && work.tokens >= 0 && work.context >= 0 && work.tp >= 1,
      "bad SliceWork: layers {} rows {} tokens {} context {} tp {}", work.layers, work.rows,
      work.tokens, work.context, work.tp);
  double seconds = 0;
  switch (work.pass) {
    case Pass::kForward:
      seconds = QueueSeconds(work, {OperatorPass::kForward}, work.layers);
      break;
    case Pass::kBackward:
      seconds = WholeBackwardSeconds(work, work.layers);
      break;
    case Pass::kBackwardInput:
      seconds = QueueSeconds(work, {OperatorPass::kBackwardInput}, work.layers);
      break;
    case Pass::kBackwardWeight:
      seconds = QueueSeconds(work, {OperatorPass::kBackwardWeight}, work.layers);
      break;
    case Pass::kOptimizer:
      seconds = NsToSeconds(params_.kernel_overhead_ns) +
                work.layers * static_cast<double>(LayerBytes(model_, work)) /
                    (device_.memory_bw_bytes_per_s * params_.memory_efficiency);
      break;
  }
  return std::max<TimeNs>(1, std::llround(seconds * 1e9));
}

}  // namespace terasim

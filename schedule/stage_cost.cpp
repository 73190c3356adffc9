#include "schedule/stage_cost.h"

#include <algorithm>

#include "models/collective_cost.h"
#include "models/errors.h"

namespace terasim {
namespace {

// Alpha-beta view of a ring over `gpus`: the slowest hop's latency, and the sum over the
// cluster's rings of each ring's narrowest hop (NCCL splits the data over its rings).
void RingParameters(const Cluster& cluster, const std::vector<int>& gpus, double* alpha_ns,
                    double* bw_bytes_per_s) {
  *alpha_ns = 0;
  *bw_bytes_per_s = 0;
  for (const auto& ring : cluster.GroupRings(gpus)) {
    double ring_bw = 0;
    for (size_t i = 0; i < ring.size(); ++i) {
      int a = ring[i], b = ring[(i + 1) % ring.size()];
      double bw = cluster.RouteBottleneckBytesPerS(a, b);
      ring_bw = i == 0 ? bw : std::min(ring_bw, bw);
      *alpha_ns = std::max(*alpha_ns, static_cast<double>(cluster.RouteLatencyNs(a, b)));
    }
    *bw_bytes_per_s += ring_bw;
  }
}

}  // namespace

StageCost::StageCost(const ModelCard& model, const ComputeCostModel& compute,
                     const Cluster& cluster, StageShape shape)
    : model_(model), compute_(compute), shape_(shape) {
  if (shape.pp < 1 || shape.tp < 1) ThrowInput("stage cost: pp and tp must be >= 1");
  if (shape.pp * shape.tp > cluster.NumGpus()) {
    ThrowInput("--pp {} x --tp {} needs {} GPUs; {} has {}", shape.pp, shape.tp,
               shape.pp * shape.tp, cluster.Spec(), cluster.NumGpus());
  }
  if (shape.pp > model.layers) ThrowInput("--pp {} exceeds {} layers", shape.pp, model.layers);
  if (model.heads % shape.tp != 0) {
    ThrowInput("--tp {} does not divide {} heads", shape.tp, model.heads);
  }
  layers_per_stage_ = (model.layers + shape.pp - 1) / shape.pp;
  if (shape.tp > 1) {
    std::vector<int> group(shape.tp);
    for (int r = 0; r < shape.tp; ++r) group[r] = r;
    RingParameters(cluster, group, &tp_alpha_ns_, &tp_bw_);
  }
  // The slowest boundary between consecutive stages of replica 0 (rank = stage * T + tp),
  // judged by the time of a 1 MB transfer.
  double slowest_ns = -1;
  for (int s = 0; s + 1 < shape.pp; ++s) {
    int a = s * shape.tp, b = (s + 1) * shape.tp;
    double bw = cluster.RouteBottleneckBytesPerS(a, b);
    double alpha = static_cast<double>(cluster.RouteLatencyNs(a, b));
    double ns = alpha + 1e6 / bw * 1e9;
    if (ns > slowest_ns) {
      slowest_ns = ns;
      boundary_bw_ = bw;
      boundary_alpha_ns_ = alpha;
    }
  }
}

double StageCost::ComputeNs(int rows, int tokens, int context) const {
  SliceWork work;
  work.rows = rows;
  work.tokens = tokens;
  work.context = context;
  work.tp = shape_.tp;
  double total = 0;
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    work.pass = pass;
    if (shape_.tp == 1) {
      work.layers = layers_per_stage_;
      work.block = Block::kWhole;
      total += static_cast<double>(compute_.Time(work));
    } else {
      work.layers = 1;
      for (Block block : {Block::kAttention, Block::kMlp}) {
        work.block = block;
        total += layers_per_stage_ * static_cast<double>(compute_.Time(work));
      }
    }
  }
  return total;
}

double StageCost::CommunicationNs(int rows, int tokens) const {
  const Bytes activation = static_cast<Bytes>(rows) * tokens * model_.hidden * 2;
  double total = 0;
  if (shape_.tp > 1) {
    // Two all-reduces forward and two backward per layer.
    total += 4.0 * layers_per_stage_ *
             static_cast<double>(RingAllReduceTimeNs(activation, shape_.tp, tp_alpha_ns_, tp_bw_));
  }
  if (shape_.pp > 1) {
    // The activation forward and its gradient back.
    total +=
        2.0 * static_cast<double>(SendRecvTimeNs(activation, boundary_alpha_ns_, boundary_bw_));
    if (shape_.boundary == Boundary::kBroadcast && shape_.tp > 1) {
      total +=
          2.0 * static_cast<double>(BroadcastTimeNs(activation, shape_.tp, tp_alpha_ns_, tp_bw_));
    }
  }
  return total;
}

double StageCost::UnitNs(int rows, int tokens, int context) const {
  return ComputeNs(rows, tokens, context) + CommunicationNs(rows, tokens);
}

SliceCostFn StageCost::AsSliceCost() const {
  return [this](int rows, int tokens, int context) { return UnitNs(rows, tokens, context); };
}

}  // namespace terasim

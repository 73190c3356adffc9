// OperatorCostModel: the compute time of a layer as the sum of its operators
// (models/layer_operators.h), each on its own roofline, issued by a host that pays a fixed
// overhead per kernel. Parameters: the device spec's "operator_model" (models/operator_params.h).
//
// A GEMM of batch x (m x n x k) on a tile of tm x tn runs ceil(m / tm) ceil(n / tn) tiles per
// product in waves of sm_count thread blocks; each wave takes as long as one full tile,
//     compute = waves x 2 tm tn (k + min(k, tile_k_overhead)) / rate
//     rate    = min(peak / sm_count x gemm_efficiency,
//                   l2_bw / (tiles running at once) x tm tn / (rows + cols))
// (wave quantization: 81 tiles on 80 SMs take two waves; tile quantization: a 1-row GEMM
// pays for a full tile; a narrow tile is fed from L2 at fewer FLOPs per byte; a partial tile
// loads only its rows and columns inside the matrix, rows = m / ceil(m / tm) and
// cols = n / ceil(n / tn) on average, since its out-of-bounds loads are predicated off while
// its MMAs cover the full tile, so an L2-fed GEMM grows with its rows within a tile). A GEMM of
// fewer tiles than SMs splits k over the idle SMs (split-K, slices of at least 256), as
// cuBLAS does for skinny products. Each GEMM runs on the tile of the device's set (tile_m x
// tile_n and "tiles") with the least compute time, as cuBLAS's heuristics pick a kernel per
// shape. It takes at least its bytes over the memory bandwidth:
//     gpu = max(compute, bytes / (bandwidth x gemm_memory_efficiency))
//           + kernels x kernel_gpu_ns.
// A memory-bound operator takes bytes / (bandwidth x memory_efficiency) + kernels x
// kernel_gpu_ns; a layout one (LayerOperator::layout: row reductions, broadcasts, permuting
// or strided copies) runs at layout_memory_efficiency instead. tile_k_overhead is the
// tile's prologue and epilogue in steps of k; kernel_gpu_ns the grid's launch, ramp-up and
// drain on the GPU (both 0 unless fitted).
// The host issues kernel i kernel_overhead_ns after kernel i - 1 (framework dispatch and
// launch; backward_kernel_overhead_ns in the backward passes, where the autograd engine
// runs each node); the GPU starts it when it is issued and the previous one is done:
//     host_i = host_{i-1} + kernels_i x overhead,  end_i = max(host_i, end_{i-1}) + gpu_i.
// At tp > 1 a device with collective_host_ns lists the host's tensor-parallel collective
// calls among the kernels (LayerOperatorOptions::tp_collectives, two per forward and two per
// backward-input pass): each adds collective_host_ns to the host's time and nothing to the
// GPU's (the collective itself is the network model's op).
// A pass of `layers` layers is one such queue; its time is the last end. Without
// host_runs_ahead the queue starts empty (the op begins after a synchronization, as a timing
// script runs it). With it the op is one of a run of such ops whose host issues the next op's
// kernels while the GPU still runs this one's or waits for the op's input (PyTorch's NCCL calls
// make the stream wait, not the host; TeraPipe's forward_step / backward_step never
// synchronize), so the op takes the run's period,
//     layers x max(sum gpu_i, sum host_i):
// a GPU-bound op its GPU work, a launch-bound one its host's issue time. Both sums grow with
// the slice's tokens and context, so the cost does too, as the slicing planner assumes (except
// at a sequence's last slice, whose key/value gradient has no later slices' rows to add).
// Small slices are launch-bound (flat in the slice length), large ones GPU-bound, and attention's
// score-sized operators grow with l x (c + l).
//
// A whole backward runs backward-input and backward-weight in one queue, in the order
// models/layer_operators.h LayerBackwardOperators gives (eager: autograd's, each weight
// gradient right after its input gradient; fused: backward-input first). The optimizer is memory
// traffic: 28 bytes per parameter (models/layer_flops.h LayerBytes) plus one kernel.
//
// Immutable after construction; every method is thread-safe.
#pragma once

#include <string>
#include <vector>

#include "models/compute_cost.h"
#include "models/device_spec.h"
#include "models/layer_operators.h"
#include "models/model_card.h"

namespace terasim {

// One operator's cost, as `terasim cost --breakdown` prints it.
struct OperatorTiming {
  LayerOperator op;
  double compute_s = 0;   // tensor-core time after tile and wave quantization (GEMMs)
  double memory_s = 0;    // bytes over the achievable bandwidth
  double overhead_s = 0;  // host time to issue its kernels
  double gpu_s = 0;       // max(compute_s, memory_s) + kernels x kernel_gpu_ns
  int64_t waves = 0;      // GEMMs: waves of tiles over the SMs
  int tile_m = 0;         // GEMMs: the tile it runs on (rows x columns of the output)
  int tile_n = 0;
  // "compute", "memory", "launch" (the host's issue time exceeds the GPU's work) or "host"
  // (a collective call: host time only).
  const char* bound = "";
};

class OperatorCostModel : public ComputeCostModel {
 public:
  // Throws InputError "DEVICE: no operator_model" when the spec lacks the parameters.
  // `sequence_parallel` splits LayerNorm, dropout and residual tensors over the tp ranks;
  // `kv_cache` false runs an eager layer without its key/value cache
  // (LayerOperatorOptions::kv_cache; Time() then needs context 0); `synchronized` costs every
  // queue from empty even on a device with host_runs_ahead: an op timed between two
  // synchronizations, as a single-layer benchmark times one (`terasim cost --synchronized`).
  OperatorCostModel(ModelCard model, DeviceSpec device, bool sequence_parallel = false,
                    bool kv_cache = true, bool synchronized = false);

  // Time of `work` on one device, >= 1 ns. Precondition: layers >= 1, rows >= 1, tokens >= 0,
  // context >= 0, tp >= 1 dividing the heads.
  TimeNs Time(const SliceWork& work) const override;
  // "operator DEVICE MODEL".
  std::string Name() const override;

  // The operators of one layer (or block) of `pass` with their costs, in issue order.
  std::vector<OperatorTiming> Breakdown(const SliceWork& work, OperatorPass pass) const;
  // Seconds of `layers` layers of `passes` run back to back in one queue from empty.
  double QueueSeconds(const SliceWork& work, const std::vector<OperatorPass>& passes,
                      int layers) const;

  // Seconds of `layers` layers' whole backward (backward-input and backward-weight) in one
  // queue, in the order LayerBackwardOperators issues them.
  double WholeBackwardSeconds(const SliceWork& work, int layers) const;

  const ModelCard& model() const { return model_; }
  const DeviceSpec& device() const { return device_; }
  const OperatorModelParams& params() const { return params_; }

 private:
  struct GemmTiming {
    OperatorModelParams::Tile tile;
    int64_t waves = 0;
    double compute_s = 0;
  };
  // The queue of `ops`, repeated for `layers` layers, from empty (host_runs_ahead: with the
  // host's lead): the last end.
  double Queue(const std::vector<OperatorTiming>& ops, int layers) const;
  // `host_ns`: the host's time to issue one of its kernels.
  OperatorTiming Cost(const LayerOperator& op, TimeNs host_ns) const;
  // A GEMM's waves and compute time on one tile shape.
  GemmTiming GemmOnTile(const LayerOperator& op, OperatorModelParams::Tile tile) const;

  ModelCard model_;
  DeviceSpec device_;
  OperatorModelParams params_;
  LayerOperatorOptions options_;
};

}  // namespace terasim

// OperatorModelParams: the fitted parameters of the operator-level compute model
// (models/operator_cost.h), read from the optional "operator_model" object of a device spec
// (models/data/devices/NAME.json). Kept apart from device_spec.h so that the operator model's
// fields and their checks live in one place.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <string>
#include <vector>

#include "models/units.h"

namespace terasim {

class JsonReader;

struct OperatorModelParams {
  // Fraction of the tensor-core peak that one full GEMM tile reaches on one SM, (0, 1].
  double gemm_efficiency = 0;
  // The GEMM tile (rows x columns of the output one thread block computes): a GEMM of m x n
  // runs ceil(m / tile_m) x ceil(n / tile_n) tiles in waves of sm_count.
  int tile_m = 128;
  int tile_n = 128;
  // Further tiles the GEMM library can pick per shape (e.g. narrower ones for skinny
  // products), as {rows, columns}; each GEMM runs on the one that finishes it first
  // (optional, empty: tile_m x tile_n only).
  struct Tile {
    int m = 0;
    int n = 0;
  };
  std::vector<Tile> tiles;
  // The L2 cache's bandwidth, shared by the SMs that run tiles at once: a tile of m x n
  // loads 2 (m + n) bytes per step of k for 2 m n FLOPs, so a narrow tile is fed no faster
  // than its share times m n / (m + n) FLOP per byte (optional, 0: no such limit).
  double l2_bw_bytes_per_s = 0;
  // Fraction of the memory bandwidth that a GEMM's operand streams reach (a skinny GEMM
  // reads its weights once, in long sequential runs), (0, 1] (optional: memory_efficiency).
  double gemm_memory_efficiency = 0;
  // Host-side cost of issuing one kernel (framework dispatch plus launch), per kernel.
  TimeNs kernel_overhead_ns = 0;
  // Host-side cost of issuing one kernel of a backward pass (backward-input, backward-weight):
  // the autograd engine's per-node work (input buffers, output allocation) on top of the
  // dispatch (optional: kernel_overhead_ns).
  TimeNs backward_kernel_overhead_ns = 0;
  // Host-side cost of one tensor-parallel collective call at tp > 1 (the tensor-parallel
  // layer's autograd function and the NCCL call on the host; the collective's GPU time is
  // the network model's): LayerOperatorOptions::tp_collectives (optional, 0 when absent: no
  // collective calls listed).
  TimeNs collective_host_ns = 0;
  // Fraction of the memory bandwidth that memory-bound kernels reach, (0, 1].
  double memory_efficiency = 0;
  // Fraction of the memory bandwidth that the memory operators which do not stream
  // contiguous tensors reach (LayerOperator::layout: row reductions, broadcasts, permuting or
  // strided copies), (0, 1] (optional: memory_efficiency).
  double layout_memory_efficiency = 0;
  // GPU-side time of every kernel beyond its roofline: the grid's launch, ramp-up and drain,
  // which the host running ahead does not hide (optional, 0 when absent).
  TimeNs kernel_gpu_ns = 0;
  // A GEMM tile's prologue and epilogue (filling the pipeline, writing the output tile) as
  // this many extra steps of k: a tile of depth k takes k + min(k, tile_k_overhead) steps
  // (optional, 0 when absent).
  int tile_k_overhead = 0;
  // The host runs ahead of the GPU across ops: it issues an op's kernels without waiting for
  // the previous op's GPU work or its input (PyTorch's NCCL calls make the stream wait, not the
  // host), so an op takes the longer of its GPU work and its host work, the period of a run of
  // such ops (OperatorCostModel::Queue); false: every op's queue starts empty (optional).
  bool host_runs_ahead = false;
  // Fused kernels (scale-mask-softmax, bias-GeLU, bias-dropout-add, no layout copies) as in
  // Megatron-LM; false: one kernel per PyTorch op, as an eager implementation runs them.
  bool fused = false;
  // True: this device's RooflineCostModel answers with the operator model (the layer
  // roofline stays the default otherwise).
  bool is_default = false;
  std::string note;  // the fit and its sources
};

// Parses the "operator_model" object. Throws InputError "WHERE: KEY: what is wrong".
OperatorModelParams ParseOperatorModelParams(const JsonReader& r);

}  // namespace terasim

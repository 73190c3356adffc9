// Generate: builds a whole training iteration as a Schedule from a strategy and its degrees
// (DESIGN.md section 2; schedule/README.md fixes the keys, streams, groups and tensors written).
//
// One generator covers every family by composing four independent choices:
//   * the per-stage order of forward and backward units (schedule/pipeline_order.h): GPipe
//     flush, 1F1B (PipeDream-Flush), Megatron's interleaved 1F1B, and TeraPipe's token slices
//     in flush or 1F1B order; a unit is one (micro-batch, token slice);
//   * Megatron tensor parallelism of degree T (every layer split into attn and mlp ops, each
//     followed by a tp ALLREDUCE, forward and backward);
//   * data parallelism of degree D (a dp ALLREDUCE of each stage's weight gradients after its
//     last backward, then the OPTIMIZER);
//   * the stage boundary: point to point between equal tp ranks, or tp rank 0 to tp rank 0
//     followed by a BROADCAST inside the receiving stage's tp group.
//
// Ranks are operator-innermost: rank = dp * (P * T) + pipeline_rank * T + tp_rank. The ops are
// listed device by device, each device's ops in issue order; the output is a pure function of
// the options (same options -> byte-identical .pir). Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "models/model_card.h"
#include "schedule/schedule_ir.h"
#include "schedule/slicing_spec.h"

namespace terasim {

enum class Strategy {
  kGpipe,        // all forwards, then all backwards (reverse micro-batch order)
  kOneFOneB,     // PipeDream-Flush
  kInterleaved,  // Megatron's interleaved 1F1B with V model chunks per device
  kTeraPipe,     // token slices of each micro-batch, in flush or 1F1B order
};

// TeraPipe's order of units: all forwards then all backwards (the paper), or 1F1B over units.
enum class SliceOrder { kFlush, kOneFOneB };

// How an activation (or its gradient) crosses a stage boundary when T > 1.
enum class Boundary {
  kPointToPoint,  // tp rank r of one stage to tp rank r of the next
  kBroadcast,     // tp rank 0 to tp rank 0, then BROADCAST in the receiving stage's tp group
};

struct GenerateOptions {
  ModelCard model;
  Strategy strategy = Strategy::kOneFOneB;
  int dp = 1;
  int pp = 1;
  int tp = 1;
  // Micro-batches per data-parallel replica and their rows (sequences); used when `slicing`
  // is empty.
  int microbatches = 1;
  int microbatch_size = 1;
  int virtual_stages = 1;  // model chunks per device; > 1 only with kInterleaved
  // TeraPipe only: explicit micro-batches with their token slices (per replica), or
  // `uniform_slices` > 0 equal slices of each of the `microbatches` micro-batches.
  std::vector<MicrobatchSlicing> slicing;
  int uniform_slices = 0;
  SliceOrder order = SliceOrder::kFlush;  // TeraPipe only
  Boundary boundary = Boundary::kPointToPoint;
  bool optimizer = true;  // emit the OPTIMIZER ops
};

// The flag names used in messages and by `terasim schedule`.
std::string StrategyName(Strategy strategy);   // "gpipe", "1f1b", "interleaved", "terapipe"
std::string SliceOrderName(SliceOrder order);  // "flush", "1f1b"
std::string BoundaryName(Boundary boundary);   // "p2p", "broadcast"
// Inverses; throw InputError "FLAG: 'TEXT' must be one of ..." for an unknown name.
Strategy ParseStrategy(const std::string& text, const std::string& flag = "--strategy");
SliceOrder ParseSliceOrder(const std::string& text, const std::string& flag = "--order");
Boundary ParseBoundary(const std::string& text, const std::string& flag = "--boundary");

// The micro-batches of one data-parallel replica, each with its rows and token slices, in
// micro-batch order (local ids 0..M-1). Throws InputError naming the flag when the options
// are inconsistent (slicing on a strategy without token slices, slices that do not sum to the
// model's sequence, --slices larger than the sequence, non-positive counts).
std::vector<MicrobatchSlices> ReplicaMicrobatches(const GenerateOptions& options);

// Layers [l0, l1) of each of the P * V (virtual) stages: the first L mod (P V) stages get one
// layer more. Throws InputError when P * V > L.
std::vector<Range> StageLayers(int layers, int pp, int virtual_stages);

// The whole iteration. Throws InputError naming the flag on inconsistent options, e.g.
// "--tp 3 does not divide 4 heads", "--pp 8 x --virtual-stages 1 = 8 stages exceed 4 layers",
// "--microbatches 6 is not a multiple of --pp 4 (interleaved 1F1B ...)" (interleaving takes M
// a multiple of P, or M < P).
Schedule Generate(const GenerateOptions& options);

}  // namespace terasim

// The schedule IR's op: one unit of work on one device (DESIGN.md section 2).
//
// An Op is a plain value. Fields that do not apply to its kind keep their defaults
// (stage -1, microbatch -1, empty ranges, peer -1, bytes 0, empty strings); the writer omits
// them and the checker rejects a field set on a kind that does not use it.
//
//   kind            fields used
//   FWD/BWD/...     stage, layers, microbatch, rows, tokens, group (the tp group it is sharded
//                   over, empty without tensor parallelism)
//   SEND/RECV       peer, tensor (the identity matched across the pair), bytes; stage,
//                   microbatch, rows, tokens describe the activation or gradient carried
//   collectives     group, tensor (identity; every member issues the same identities in the
//                   same order), bytes (per rank); BROADCAST uses peer as the root rank;
//                   stage, layers, microbatch, rows, tokens when the collective belongs to one
//   OPTIMIZER       stage, layers; with zero > 0 also group (the data-parallel group its
//                   ZeRO shard is cut over)
//   RECOMPUTE       as FWD: the forward of a unit rebuilt just before its backward (full
//                   activation recomputation); it does not count as the unit's forward
//
// Today's recipes (DESIGN.md section 8), written only when set:
//   recompute=selective|full   layer compute: how the unit's forward keeps its activations
//                              (models/memory_model.h); FWD, RECOMPUTE and the backward ops
//                              of one unit carry the same value; full means a RECOMPUTE op
//                              precedes the backward
//   sp=1                       layer compute sharded over a tp group with sequence
//                              parallelism (its tp all-reduces become a reduce-scatter and an
//                              all-gather)
//   zero=1|2|3                 OPTIMIZER: the ZeRO stage of its data-parallel group
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/memory_model.h"

namespace terasim {

enum class OpKind {
  kFwd,
  kBwd,
  kBwdInput,
  kBwdWeight,
  kSend,
  kRecv,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kOptimizer,
  kRecompute,
};

// "FWD", "BWD", "BWD_INPUT", "BWD_WEIGHT", "SEND", "RECV", "ALLREDUCE", "ALLGATHER",
// "REDUCE_SCATTER", "BROADCAST", "OPTIMIZER", "RECOMPUTE".
std::string_view OpKindName(OpKind kind);
// The inverse of OpKindName; nullopt for an unknown name.
std::optional<OpKind> ParseOpKind(std::string_view name);

// FWD, BWD, BWD_INPUT, BWD_WEIGHT, RECOMPUTE: the layer math of a token slice.
bool IsLayerCompute(OpKind kind);
// Layer compute or OPTIMIZER: ops that occupy the GPU's compute units.
bool IsCompute(OpKind kind);
bool IsPointToPoint(OpKind kind);
bool IsCollective(OpKind kind);
// BWD or BWD_INPUT: the op that carries the gradient to the previous layer (counts as the
// backward coverage of a slice).
bool IsBackwardCoverage(OpKind kind);

// Which part of each layer a compute op covers. With tensor parallelism the generators split
// every layer at its all-reduces (Megatron's f / g operators): the attention block and the
// MLP block are separate ops with an ALLREDUCE after each (forward) or before each (backward).
enum class LayerPart {
  kWhole,      // the whole layer (written as no field)
  kAttention,  // LayerNorm, QKV, causal attention, output projection (written part=attn)
  kMlp,        // LayerNorm, MLP with GeLU (written part=mlp)
};
std::string_view LayerPartName(LayerPart part);  // "", "attn", "mlp"

// A half-open range [begin, end).
struct Range {
  int begin = 0;
  int end = 0;

  int Length() const { return end - begin; }
  bool Empty() const { return end <= begin; }
  bool operator==(const Range&) const = default;
};

struct Op {
  std::string key;  // unique in the schedule, e.g. "F.s3.m5.t256-512"
  OpKind kind = OpKind::kFwd;
  int device = 0;  // global GPU rank
  // Integer names of `stream`, `group` and `tensor`, written by the generator as it emits the op
  // (it knows each by construction), so that a replay builds its graph without reading a string
  // (sim/replay_graph.h). stream_id >= 0 says the three are set: stream_id numbers the stream
  // (on one device, equal numbers for equal names), group_id is the position of `group` in
  // Schedule::groups (-1 for none) and, on a SEND / RECV, tensor_id names `tensor` (equal ids
  // for equal names on one (sender, receiver) pair). They travel with the op (copies, moves,
  // reordering keep them right); code that changes an op's stream, group or tensor, or a
  // schedule's groups, sets stream_id = -1 on the ops it touches (or all of them), and the
  // consumer reads the strings. -1 on an op read from .pir or built by hand.
  int stream_id = -1;
  int group_id = -1;
  std::string stream;  // in-order queue on the device: "compute", "p2p", "tp", "dp", ...
  int stage = -1;      // pipeline stage (the virtual stage with interleaving)
  Range layers;        // [l0, l1)
  LayerPart part = LayerPart::kWhole;  // with part != kWhole, layers spans exactly one layer
  int microbatch = -1;             // global micro-batch id, unique across data-parallel replicas
  int rows = 0;                    // sequences in the micro-batch
  Range tokens;                    // [t0, t1); the context of a causal slice is t0 tokens
  std::string group;               // collective group, or the tp group a compute op is sharded over
  int peer = -1;                   // SEND/RECV: the other device; BROADCAST: the root device
  std::string tensor;              // SEND/RECV/collectives: identity matched across devices
  int64_t tensor_id = 0;           // see stream_id
  int64_t bytes = 0;               // SEND/RECV: payload; collectives: bytes per rank
  std::vector<std::string> after;  // keys on the same device that must finish first
  int line = 0;                    // line in the .pir file it was read from; 0 when generated
  // Today's recipes (see the top of this file); defaults are not written.
  Recompute recompute = Recompute::kNone;  // layer compute
  bool sequence_parallel = false;          // layer compute with a tp group
  int zero = 0;                            // OPTIMIZER: ZeRO stage 0-3
};

// "" for an op the base IR describes (no RECOMPUTE kind, no recompute, sp or zero field), else
// the name of the first feature of today's recipes it uses ("RECOMPUTE", "recompute=selective",
// "sp=1", "zero=3"): for a consumer that does not run them yet to refuse the op by name.
std::string RecipeFeature(const Op& op);

}  // namespace terasim

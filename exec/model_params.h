// The executor's parameter layout: every weight tensor of the model card's stack, its full
// shape, how Megatron tensor parallelism shards it, and its deterministic initial value.
//
// Matrices are row-major [in, out] (y = x W). Per layer: ln1 (gain, bias), QKV [h, 3h]
// (column-parallel: each tp rank takes its heads' columns of each of the Q, K and V blocks),
// its bias, out-proj [h, h] (row-parallel), its bias, ln2, fc1 [h, f] (column-parallel), its
// bias, fc2 [f, h] (row-parallel), its bias. Biases of row-parallel layers and LayerNorms are
// replicated on every tp rank. With the embedding in the stack: token [V, h] and position
// [S, h] tables (the "embed" set, held with layer 0); with the LM head: a final LayerNorm and
// an output matrix [V, h] (the "head" set, held with the last layer). The executor keeps the
// LM head as its own matrix, initialized equal to the token table (tying it across pipeline
// stages would need an embedding all-reduce that the IR does not carry).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_card.h"

namespace terasim {

enum class ShardKind {
  kReplicated,  // every tp rank holds the whole tensor
  kColumns,     // columns split T ways inside each of `blocks` equal column blocks
  kRows,        // rows split T ways
};

struct ParamSpec {
  std::string name;  // "ln1.g", "qkv.w", ... (unique within its set)
  int rows = 1;      // full shape
  int cols = 1;
  ShardKind shard = ShardKind::kReplicated;
  int blocks = 1;   // kColumns: column blocks sharded separately (3 for QKV)
  float scale = 0;  // initial value: offset + scale * U[-1, 1)
  float offset = 0;
  int init_tag = 0;  // which random stream initializes it (the LM head shares the token table's)
};

// Indices into LayerParamSpecs (plain ints: they index arrays).
inline constexpr int kLn1Gain = 0;
inline constexpr int kLn1Bias = 1;
inline constexpr int kQkvWeight = 2;
inline constexpr int kQkvBias = 3;
inline constexpr int kOutWeight = 4;
inline constexpr int kOutBias = 5;
inline constexpr int kLn2Gain = 6;
inline constexpr int kLn2Bias = 7;
inline constexpr int kFc1Weight = 8;
inline constexpr int kFc1Bias = 9;
inline constexpr int kFc2Weight = 10;
inline constexpr int kFc2Bias = 11;
inline constexpr int kLayerParamCount = 12;
// Indices into EmbedParamSpecs / HeadParamSpecs.
inline constexpr int kTokenTable = 0;
inline constexpr int kPositionTable = 1;
inline constexpr int kEmbedParamCount = 2;
inline constexpr int kLnfGain = 0;
inline constexpr int kLnfBias = 1;
inline constexpr int kLmWeight = 2;
inline constexpr int kHeadParamCount = 3;

std::vector<ParamSpec> LayerParamSpecs(const ModelCard& card);
// Empty when the card has no embedding (resp. LM head) in the stack.
std::vector<ParamSpec> EmbedParamSpecs(const ModelCard& card);
std::vector<ParamSpec> HeadParamSpecs(const ModelCard& card);

// The shard shape of `spec` on a tp group of `tp` ranks. Precondition: tp divides the split
// dimension (ValidateTensorParallel checks the card).
int ShardRows(const ParamSpec& spec, int tp);
int ShardCols(const ParamSpec& spec, int tp);

// The full (row, col) of shard element (row, col) on tp rank `tp_rank`.
void FullIndex(const ParamSpec& spec, int tp_rank, int tp, int row, int col, int& full_row,
               int& full_col);

// Which weight set a tensor belongs to in the seeded initialization: a layer index, or one of
// these for the embedding and the head.
inline constexpr int kEmbedSet = -1;
inline constexpr int kHeadSet = -2;

// The shard of `spec` (set `set`) for tp rank `tp_rank` of `tp`, initialized from `seed`.
std::vector<float> InitShard(const ParamSpec& spec, int set, uint64_t seed, int tp_rank, int tp);

// Throws InputError "CONTEXT: ..." when `tp` does not divide the card's heads and ffn.
void ValidateTensorParallel(const ModelCard& card, int tp, const std::string& context);

// "l{L}.NAME", "embed.NAME" or "head.NAME": the name of a parameter tensor in reports.
std::string ParamName(int set, const ParamSpec& spec);

}  // namespace terasim

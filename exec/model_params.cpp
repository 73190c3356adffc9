#include "exec/model_params.h"

#include <cmath>

#include <fmt/format.h>

#include "exec/synthetic_data.h"
#include "models/errors.h"

namespace terasim {

namespace {

ParamSpec Spec(std::string name, int rows, int cols, ShardKind shard, int blocks, float scale,
               float offset, int tag) {
  ParamSpec s;
  s.name = std::move(name);
  s.rows = rows;
  s.cols = cols;
  s.shard = shard;
  s.blocks = blocks;
  s.scale = scale;
  s.offset = offset;
  s.init_tag = tag;
  return s;
}

}  // namespace

std::vector<ParamSpec> LayerParamSpecs(const ModelCard& card) {
  const int h = card.hidden;
  const int f = card.ffn;
  // Weights ~ U[-1,1) / sqrt(fan_in) keep activations O(1); gains near 1 and small biases
  // make every parameter's gradient non-trivial.
  const float wh = 1.0f / std::sqrt(static_cast<float>(h));
  const float wf = 1.0f / std::sqrt(static_cast<float>(f));
  std::vector<ParamSpec> specs(kLayerParamCount);
  specs[kLn1Gain] = Spec("ln1.g", 1, h, ShardKind::kReplicated, 1, 0.1f, 1.0f, kLn1Gain);
  specs[kLn1Bias] = Spec("ln1.b", 1, h, ShardKind::kReplicated, 1, 0.1f, 0, kLn1Bias);
  specs[kQkvWeight] = Spec("qkv.w", h, 3 * h, ShardKind::kColumns, 3, wh, 0, kQkvWeight);
  specs[kQkvBias] = Spec("qkv.b", 1, 3 * h, ShardKind::kColumns, 3, 0.1f, 0, kQkvBias);
  specs[kOutWeight] = Spec("out.w", h, h, ShardKind::kRows, 1, wh, 0, kOutWeight);
  specs[kOutBias] = Spec("out.b", 1, h, ShardKind::kReplicated, 1, 0.1f, 0, kOutBias);
  specs[kLn2Gain] = Spec("ln2.g", 1, h, ShardKind::kReplicated, 1, 0.1f, 1.0f, kLn2Gain);
  specs[kLn2Bias] = Spec("ln2.b", 1, h, ShardKind::kReplicated, 1, 0.1f, 0, kLn2Bias);
  specs[kFc1Weight] = Spec("fc1.w", h, f, ShardKind::kColumns, 1, wh, 0, kFc1Weight);
  specs[kFc1Bias] = Spec("fc1.b", 1, f, ShardKind::kColumns, 1, 0.1f, 0, kFc1Bias);
  specs[kFc2Weight] = Spec("fc2.w", f, h, ShardKind::kRows, 1, wf, 0, kFc2Weight);
  specs[kFc2Bias] = Spec("fc2.b", 1, h, ShardKind::kReplicated, 1, 0.1f, 0, kFc2Bias);
  return specs;
}

std::vector<ParamSpec> EmbedParamSpecs(const ModelCard& card) {
  if (!card.embedding_in_stack) return {};
  std::vector<ParamSpec> specs(kEmbedParamCount);
  specs[kTokenTable] = Spec("tokens", card.vocab, card.hidden, ShardKind::kReplicated, 1,
                            1.0f / std::sqrt(static_cast<float>(card.hidden)), 0, 100);
  specs[kPositionTable] =
      Spec("positions", card.sequence, card.hidden, ShardKind::kReplicated, 1, 0.1f, 0, 101);
  return specs;
}

std::vector<ParamSpec> HeadParamSpecs(const ModelCard& card) {
  if (!card.lm_head_in_stack) return {};
  std::vector<ParamSpec> specs(kHeadParamCount);
  specs[kLnfGain] = Spec("lnf.g", 1, card.hidden, ShardKind::kReplicated, 1, 0.1f, 1.0f, 102);
  specs[kLnfBias] = Spec("lnf.b", 1, card.hidden, ShardKind::kReplicated, 1, 0.1f, 0, 103);
  // Initialized like the token table (same stream, set and scale) but trained separately.
  specs[kLmWeight] = Spec("lm.w", card.vocab, card.hidden, ShardKind::kReplicated, 1,
                          1.0f / std::sqrt(static_cast<float>(card.hidden)), 0, 100);
  return specs;
}

int ShardRows(const ParamSpec& spec, int tp) {
  return spec.shard == ShardKind::kRows ? spec.rows / tp : spec.rows;
}

int ShardCols(const ParamSpec& spec, int tp) {
  return spec.shard == ShardKind::kColumns ? spec.cols / tp : spec.cols;
}

void FullIndex(const ParamSpec& spec, int tp_rank, int tp, int row, int col, int& full_row,
               int& full_col) {
  full_row = row;
  full_col = col;
  if (spec.shard == ShardKind::kRows) {
    full_row = tp_rank * (spec.rows / tp) + row;
  } else if (spec.shard == ShardKind::kColumns) {
    const int block_cols = spec.cols / spec.blocks;  // full columns per block
    const int shard_block_cols = block_cols / tp;
    const int block = col / shard_block_cols;
    full_col = block * block_cols + tp_rank * shard_block_cols + col % shard_block_cols;
  }
}

std::vector<float> InitShard(const ParamSpec& spec, int set, uint64_t seed, int tp_rank, int tp) {
  const int rows = ShardRows(spec, tp);
  const int cols = ShardCols(spec, tp);
  // The LM head shares the token table's stream: its set is the embedding's.
  const int init_set = spec.init_tag == 100 ? kEmbedSet : set;
  std::vector<float> out(static_cast<size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      int fr = 0;
      int fc = 0;
      FullIndex(spec, tp_rank, tp, r, c, fr, fc);
      const float u = SymmetricUniform(seed, kTagWeight, static_cast<uint64_t>(init_set + 2),
                                       static_cast<uint64_t>(spec.init_tag),
                                       static_cast<uint64_t>(fr) * spec.cols + fc);
      out[static_cast<size_t>(r) * cols + c] = spec.offset + spec.scale * u;
    }
  }
  return out;
}

void ValidateTensorParallel(const ModelCard& card, int tp, const std::string& context) {
  if (tp < 1) ThrowInput("{}: tensor-parallel degree {} must be >= 1", context, tp);
  if (card.heads % tp != 0) {
    ThrowInput("{}: tensor-parallel degree {} does not divide the {} heads of model {}", context,
               tp, card.heads, card.name);
  }
  if (card.ffn % tp != 0) {
    ThrowInput("{}: tensor-parallel degree {} does not divide ffn {} of model {}", context, tp,
               card.ffn, card.name);
  }
}

std::string ParamName(int set, const ParamSpec& spec) {
  if (set == kEmbedSet) return "embed." + spec.name;
  if (set == kHeadSet) return "head." + spec.name;
  return fmt::format("l{}.{}", set, spec.name);
}

}  // namespace terasim

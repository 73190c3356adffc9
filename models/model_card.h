// ModelCard: the shape of a decoder-only transformer, read from a JSON card.
//
// Cards live in models/data/NAME.json (see models/data/README.md for the format). A card
// is a plain value; LoadModelCard validates it once and later code may assume it is sane.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace terasim {

struct ModelCard {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int ffn = 0;       // MLP inner size (4 * hidden for GPT-3)
  int sequence = 0;  // tokens per sequence
  int vocab = 0;
  bool embedding_in_stack = false;  // the token embedding is part of the pipeline's stack
  bool lm_head_in_stack = false;    // the LM head (and a cross-entropy loss) is part of it
  std::string source;               // the file it was read from

  int HeadDim() const { return hidden / heads; }
  // Parameters of one transformer layer: QKV (3h^2 + 3h), output projection (h^2 + h),
  // MLP (2 h f + f + h), two LayerNorms (4h). With f = 4h this is 12h^2 + 13h.
  int64_t ParamsPerLayer() const;
  // Parameters of the embedding (vocab x hidden plus sequence x hidden positions) when it is
  // part of the stack, else 0. The LM head is tied to it when both are in the stack.
  int64_t EmbeddingParams() const;
  // All parameters of the stack.
  int64_t TotalParams() const;
};

// The folder holding terasim's data files (models/data, topologies/data, sim/data,
// tools/data), looked for in this order:
//   1. $TERASIM_DATA_DIR when set (an explicit choice: throws InputError when it holds no
//      models/data rather than falling back);
//   2. ../share/terasim beside the running binary (an installed tree, cmake/Install.cmake);
//   3. the source tree the binary was built from, unless $TERASIM_NO_SOURCE_DATA is set (to
//      something other than 0).
// Throws InputError naming all three places when none holds the data.
std::string DataRoot();

// Loads a model card by name (models/data/NAME.json) or by path (anything containing '/'
// or ending in .json). Throws InputError naming the file and field on any problem.
ModelCard LoadModelCard(const std::string& name_or_path);

// Parses a card from JSON text; `origin` names the place in error messages.
ModelCard ParseModelCard(const std::string& json_text, const std::string& origin);

// Every card in models/data, sorted by name.
std::vector<ModelCard> ListModelCards();

}  // namespace terasim

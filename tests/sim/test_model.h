// A small model card for the simulator's tests: 8 layers, hidden 64, 4 heads, 32 tokens.
#pragma once

#include "models/model_card.h"

namespace terasim::testing {

inline ModelCard TestModel8() {
  ModelCard model;
  model.name = "test8";
  model.layers = 8;
  model.hidden = 64;
  model.heads = 4;
  model.ffn = 256;
  model.sequence = 32;
  model.vocab = 128;
  return model;
}

}  // namespace terasim::testing

// terasim models: lists the model cards.
#include <iostream>

#include <fmt/format.h>

#include "models/model_card.h"
#include "tools/cli.h"
#include "tools/commands.h"

namespace terasim::cli {

int RunModels(const Args& args) {
  po::options_description options("terasim models");
  options.add_options()("json", po::bool_switch(), "print JSON");
  po::variables_map vm;
  if (!Parse("models", "[--json]", options, {}, args, vm)) return 0;
  std::vector<ModelCard> cards = ListModelCards();
  if (vm["json"].as<bool>()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : cards) {
      out.push_back({{"name", c.name},
                     {"layers", c.layers},
                     {"hidden", c.hidden},
                     {"heads", c.heads},
                     {"ffn", c.ffn},
                     {"sequence", c.sequence},
                     {"vocab", c.vocab},
                     {"embedding_in_stack", c.embedding_in_stack},
                     {"lm_head_in_stack", c.lm_head_in_stack},
                     {"params", c.TotalParams()}});
    }
    PrintJson(out);
    return 0;
  }
  std::cout << fmt::format("{:<16} {:>6} {:>7} {:>6} {:>7} {:>9} {:>10}\n", "model", "layers",
                           "hidden", "heads", "ffn", "sequence", "params");
  for (const auto& c : cards) {
    std::cout << fmt::format("{:<16} {:>6} {:>7} {:>6} {:>7} {:>9} {:>9.2f}B\n", c.name, c.layers,
                             c.hidden, c.heads, c.ffn, c.sequence,
                             static_cast<double>(c.TotalParams()) / 1e9);
  }
  return 0;
}

}  // namespace terasim::cli

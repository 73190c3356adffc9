#include "models/model_card.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/limits.h"

namespace terasim {

int64_t ModelCard::ParamsPerLayer() const {
  const int64_t h = hidden;
  const int64_t f = ffn;
  return (3 * h * h + 3 * h) + (h * h + h) + (2 * h * f + f + h) + 4 * h;
}

int64_t ModelCard::EmbeddingParams() const {
  if (!embedding_in_stack) return 0;
  return static_cast<int64_t>(vocab) * hidden + static_cast<int64_t>(sequence) * hidden;
}

int64_t ModelCard::TotalParams() const {
  return static_cast<int64_t>(layers) * ParamsPerLayer() + EmbeddingParams();
}

std::string DataRoot() {
  if (const char* env = std::getenv("TERASIM_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return TERASIM_SOURCE_DIR;
}

ModelCard ParseModelCard(const std::string& json_text, const std::string& origin) {
  nlohmann::json doc = ParseJson(json_text, origin);
  JsonReader r(doc, origin);
  r.RejectUnknown({"name", "layers", "hidden", "heads", "ffn", "sequence", "vocab",
                   "embedding_in_stack", "lm_head_in_stack", "source", "note"});
  ModelCard card;
  card.name = r.RequireString("name");
  if (card.name.empty()) ThrowInput("{}: name: must not be empty", origin);
  card.layers = static_cast<int>(r.RequireInt("layers", 1, limits::kMaxLayers, "kMaxLayers"));
  card.hidden = static_cast<int>(r.RequireInt("hidden", 1, limits::kMaxHidden, "kMaxHidden"));
  card.heads = static_cast<int>(r.RequireInt("heads", 1, limits::kMaxHidden, "kMaxHidden"));
  card.ffn =
      static_cast<int>(r.OptionalInt("ffn", 4LL * card.hidden, 1, limits::kMaxFfn, "kMaxFfn"));
  card.sequence =
      static_cast<int>(r.RequireInt("sequence", 1, limits::kMaxSequence, "kMaxSequence"));
  card.vocab = static_cast<int>(r.RequireInt("vocab", 1, limits::kMaxVocab, "kMaxVocab"));
  card.embedding_in_stack = r.OptionalBool("embedding_in_stack", false);
  card.lm_head_in_stack = r.OptionalBool("lm_head_in_stack", false);
  if (card.hidden % card.heads != 0) {
    ThrowInput("{}: heads: {} does not divide hidden {}", origin, card.heads, card.hidden);
  }
  card.source = origin;
  return card;
}

ModelCard LoadModelCard(const std::string& name_or_path) {
  std::string path = name_or_path;
  const bool is_path =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
  if (!is_path) {
    path = DataRoot() + "/models/data/" + name_or_path + ".json";
    if (!std::filesystem::exists(path)) {
      std::string known;
      for (const auto& card : ListModelCards()) known += (known.empty() ? "" : ", ") + card.name;
      ThrowInput("--model {}: no such model card (known: {})", name_or_path, known);
    }
  }
  return ParseModelCard(ReadTextFile(path), path);
}

std::vector<ModelCard> ListModelCards() {
  std::vector<std::string> paths;
  std::string dir = DataRoot() + "/models/data";
  if (!std::filesystem::is_directory(dir)) ThrowInput("{}: model card folder not found", dir);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<ModelCard> cards;
  for (const auto& p : paths) cards.push_back(ParseModelCard(ReadTextFile(p), p));
  std::sort(cards.begin(), cards.end(),
            [](const ModelCard& a, const ModelCard& b) { return a.name < b.name; });
  return cards;
}

}  // namespace terasim

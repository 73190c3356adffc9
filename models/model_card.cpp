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

namespace {

// A folder holds terasim's data when it has the model cards' folder.
bool HoldsData(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_directory(dir / "models" / "data", ec);
}

}  // namespace

std::string DataRoot() {
  const char* env = std::getenv("TERASIM_DATA_DIR");
  if (env != nullptr && *env != '\0') {
    if (HoldsData(env)) return env;
    ThrowInput(
        "TERASIM_DATA_DIR={}: no terasim data there (models/data is missing); unset it to "
        "use the installed data",
        env);
  }
  std::string beside = "(the binary's path is unknown)";
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
#ifdef TERASIM_DATA_FROM_BIN
    const std::filesystem::path installed = exe.parent_path() / TERASIM_DATA_FROM_BIN;
#else
    const std::filesystem::path installed = exe.parent_path() / "../share/terasim";
#endif
    if (HoldsData(installed)) return installed.lexically_normal().string();
    beside = installed.lexically_normal().string() + " (beside the binary: not there)";
  }
  std::string source = std::string(TERASIM_SOURCE_DIR) + " (the source tree: not there)";
  const char* no_source = std::getenv("TERASIM_NO_SOURCE_DATA");
  if (no_source != nullptr && *no_source != '\0' && std::string(no_source) != "0") {
    source =
        std::string(TERASIM_SOURCE_DIR) + " (the source tree: skipped, TERASIM_NO_SOURCE_DATA)";
  } else if (HoldsData(TERASIM_SOURCE_DIR)) {
    return TERASIM_SOURCE_DIR;
  }
  ThrowInput(
      "terasim's data files (models/data, topologies/data, sim/data) not found; looked in "
      "$TERASIM_DATA_DIR (not set), {}, {}",
      beside, source);
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

#include <catch2/catch.hpp>

#include "models/errors.h"
#include "models/model_card.h"

using namespace terasim;

TEST_CASE("gpt3 model cards carry FACTS.md shapes and parameter counts", "[models]") {
  ModelCard m = LoadModelCard("gpt3-175b");
  CHECK(m.layers == 96);
  CHECK(m.hidden == 12288);
  CHECK(m.heads == 96);
  CHECK(m.HeadDim() == 128);
  // Parameters per layer: 12 h^2 + 13 h with ffn = 4h.
  const int64_t h = 12288;
  CHECK(m.ParamsPerLayer() == 12 * h * h + 13 * h);
  // 96 layers of that is 173.96e9: GPT-3's 175B less its 0.6B embedding (50257 x 12288).
  CHECK(m.TotalParams() == 96 * (12 * h * h + 13 * h));
  CHECK(m.TotalParams() + 50257 * h > 174.5e9);
  CHECK(m.TotalParams() + 50257 * h < 175.0e9);

  ModelCard small = LoadModelCard("gpt3-1b");
  CHECK(small.layers == 24);
  CHECK(small.hidden == 2048);
  CHECK(LoadModelCard("gpt3-13b-8192").sequence == 8192);
}

TEST_CASE("the embedding counts only when it is part of the stack", "[models]") {
  ModelCard tiny = LoadModelCard("tiny");
  ModelCard lm = LoadModelCard("tiny-lm");
  CHECK(tiny.EmbeddingParams() == 0);
  // vocab x hidden + sequence x hidden = 128*64 + 32*64
  CHECK(lm.EmbeddingParams() == 128 * 64 + 32 * 64);
  CHECK(lm.TotalParams() - tiny.TotalParams() == 128 * 64 + 32 * 64);
}

TEST_CASE("ListModelCards lists every card sorted by name", "[models]") {
  auto cards = ListModelCards();
  REQUIRE(cards.size() >= 9);
  for (size_t i = 1; i < cards.size(); ++i) CHECK(cards[i - 1].name < cards[i].name);
}

TEST_CASE("malformed model cards name the file and the field", "[models]") {
  auto message = [](const std::string& text) {
    try {
      ParseModelCard(text, "bad.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message(R"({"name":"x","layers":0,"hidden":8,"heads":2,"sequence":4,"vocab":8})") ==
        "bad.json: layers: must be >= 1 (got 0)");
  CHECK(message(R"({"name":"x","layers":2,"hidden":10,"heads":4,"sequence":4,"vocab":8})") ==
        "bad.json: heads: 4 does not divide hidden 10");
  CHECK(message(R"({"name":"x","layers":2,"hidden":8,"heads":2,"vocab":8})") ==
        "bad.json: sequence: missing");
  CHECK(
      message(R"({"name":"x","layers":2,"hidden":8,"heads":2,"sequence":4,"vocab":8,"hiden":3})") ==
      "bad.json: hiden: unknown field");
  CHECK(message("{\"name\": \"x\",\n \"layers\": }").find("bad.json: line 2") == 0);
  CHECK_THROWS_AS(LoadModelCard("no-such-model"), InputError);
}

// Numbers read from data files: integers never narrowed, durations and rates finite and in
// range, sizes within models/limits.h, each refused with the file and the field.
#include <limits>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/calibrated_cost.h"
#include "models/errors.h"
#include "models/json_reader.h"
#include "models/limits.h"
#include "models/model_card.h"

namespace terasim {
namespace {

std::string TinyCard(const std::string& hidden) {
  return R"({"name": "t", "layers": 4, "hidden": )" + hidden +
         R"(, "heads": 4, "ffn": 256, "sequence": 32, "vocab": 128, "source": "test"})";
}

TEST_CASE("A model card's hidden size is never cut to 32 bits") {
  CHECK(ParseModelCard(TinyCard("64"), "t.json").hidden == 64);
  // 4294967360 = 2^32 + 64: as int it would read as 64.
  CHECK_THROWS_WITH(ParseModelCard(TinyCard("4294967360"), "t.json"),
                    "t.json: hidden: 4294967360 exceeds the limit 131072 (kMaxHidden, "
                    "models/limits.h)");
  // Beyond int64 (an unsigned JSON number) and fractional values are refused too.
  CHECK_THROWS_AS(ParseModelCard(TinyCard("18446744073709551615"), "t.json"), InputError);
  CHECK_THROWS_WITH(ParseModelCard(TinyCard("1.9"), "t.json"),
                    "t.json: hidden: must be an integer");
}

TEST_CASE("JsonReader refuses infinite and out-of-range numbers naming the field") {
  // 1e999 overflows a double: an input error (it escaped as an internal one before).
  CHECK_THROWS_AS(ParseJson(R"({"rate": 1e999})", "x.json"), InputError);
  CHECK_THROWS_WITH(
      ParseJson(R"({"rate": 1e999})", "x.json"),
      Catch::StartsWith("x.json: invalid JSON: ") && Catch::Contains("number overflow"));
  nlohmann::json doc = {{"rate", std::numeric_limits<double>::infinity()}, {"n", 5}};
  JsonReader r(doc, "x.json");
  CHECK_THROWS_WITH(r.RequireDouble("rate"), "x.json: rate: must be finite (got inf)");
  CHECK_THROWS_WITH(r.RequireInt("n", 0, 4), "x.json: n: must be <= 4 (got 5)");
  CHECK_THROWS_WITH(r.RequireDoubleIn("n", 1, 2), "x.json: n: must be in [1, 2] (got 5)");
  CHECK(r.RequireInt("n", 0, 5) == 5);
}

// A calibration table from traces/data with every time multiplied by `factor`.
std::string ScaledTable(double factor) {
  nlohmann::json doc = nlohmann::json::parse(
      ReadTextFile(std::string(TERASIM_SOURCE_DIR) + "/traces/data/gpipe_p2_m4.calib.json"));
  for (auto& table : doc["tables"]) {
    if (table.contains("time_ns_per_layer")) {
      table["time_ns_per_layer"] = table["time_ns_per_layer"].get<double>() * factor;
    }
    if (!table.contains("rows")) continue;
    for (auto& curve : table["rows"]) {
      for (auto& t : curve["time_ns"]) t = t.get<double>() * factor;
    }
  }
  return doc.dump();
}

TEST_CASE("A calibration table with times x1e300 is refused, not clamped to 1 ns") {
  CHECK_NOTHROW(ParseCalibrationTable(ScaledTable(1), "c.json"));
  CHECK_THROWS_WITH(ParseCalibrationTable(ScaledTable(1e300), "c.json"),
                    Catch::Contains("time_ns[0]: must be in (0, 1000000000000000] "
                                    "(kMaxDurationNs, models/limits.h)"));
}

}  // namespace
}  // namespace terasim

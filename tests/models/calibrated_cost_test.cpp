#include <catch2/catch.hpp>

#include "models/calibrated_cost.h"
#include "models/device_spec.h"
#include "models/errors.h"
#include "models/roofline_cost.h"

using namespace terasim;

namespace {

const std::string kTablePath = std::string(TERASIM_TEST_DATA) + "/data/calibration_small.json";

SliceWork Work(Pass pass, int rows, int64_t tokens, int64_t context = 0,
               Block block = Block::kWhole) {
  SliceWork w;
  w.pass = pass;
  w.rows = rows;
  w.tokens = tokens;
  w.context = context;
  w.block = block;
  return w;
}

std::string ErrorOf(const std::string& text) {
  try {
    ParseCalibrationTable(text, "bad.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("calibration table loads with its fit quality", "[models][calib]") {
  CalibrationTable table = LoadCalibrationTable(kTablePath);
  CHECK(table.device == "v100-sxm2-16gb");
  CHECK(table.model == "tiny");
  REQUIRE(table.tables.size() == 4);
  CHECK(table.tables[0].curves.size() == 2);
  CHECK(table.tables[0].curves[1].context.r2 == 0.98);
  CHECK(table.tables[0].curves[1].context.max_rel_error == 0.03);
  CHECK(table.tables[3].pass == Pass::kOptimizer);
  CalibratedCostModel model(table);
  CHECK(model.Name() == "calib " + kTablePath);
}

TEST_CASE("calibrated model interpolates and extrapolates linearly in tokens", "[models][calib]") {
  CalibratedCostModel model(LoadCalibrationTable(kTablePath));
  // Measured points.
  CHECK(model.Time(Work(Pass::kForward, 1, 16)) == 1200);
  // Between 8 (1000) and 16 (1200): 1000 + 4 x 25.
  CHECK(model.Time(Work(Pass::kForward, 1, 12)) == 1100);
  // Between 16 (1200) and 32 (2000): 1200 + 8 x 50.
  CHECK(model.Time(Work(Pass::kForward, 1, 24)) == 1600);
  // Beyond 32 along the last segment (50 ns per token): 2000 + 32 x 50.
  CHECK(model.Time(Work(Pass::kForward, 1, 64)) == 3600);
  // Below 8 along the first segment (25 ns per token): 1000 - 4 x 25.
  CHECK(model.Time(Work(Pass::kForward, 1, 4)) == 900);
  // Several layers: layers x one layer.
  SliceWork three = Work(Pass::kForward, 1, 16);
  three.layers = 3;
  CHECK(model.Time(three) == 3600);
}

TEST_CASE("calibrated model adds the fitted context term for c > 0", "[models][calib]") {
  CalibratedCostModel model(LoadCalibrationTable(kTablePath));
  // base 1200 + a0 + a1 l + a2 c + a3 l c = 1200 + 10 + 16 + 64 + 0.5 x 16 x 32.
  CHECK(model.Time(Work(Pass::kForward, 1, 16, 32)) == 1200 + 10 + 16 + 64 + 256);
  // No context: the base alone.
  CHECK(model.Time(Work(Pass::kForward, 1, 16, 0)) == 1200);
}

TEST_CASE("calibrated model interpolates in rows and extrapolates by equivalent work",
          "[models][calib]") {
  CalibratedCostModel model(LoadCalibrationTable(kTablePath));
  // rows 2 lies 1/3 of the way from rows 1 (1200) to rows 4 (3000) at 16 tokens.
  CHECK(model.Time(Work(Pass::kForward, 2, 16)) == 1800);
  // rows 8 beyond rows 4: the rows-4 curve at 16 x 8 / 4 = 32 tokens.
  CHECK(model.Time(Work(Pass::kForward, 8, 16)) == 5000);
  CHECK(model.Time(Work(Pass::kForward, 4, 8)) == 2000);
}

TEST_CASE("calibrated backward is input plus weight when only the halves are measured",
          "[models][calib]") {
  CalibratedCostModel model(LoadCalibrationTable(kTablePath));
  CHECK(model.Time(Work(Pass::kBackwardInput, 1, 8)) == 1500);
  CHECK(model.Time(Work(Pass::kBackwardWeight, 1, 8)) == 1000);
  CHECK(model.Time(Work(Pass::kBackward, 1, 8)) == 2500);
  // 20 tokens: input 1500 + 12 x 62.5, weight 1000 + 12 x 41.67.
  CHECK(model.Time(Work(Pass::kBackward, 1, 20)) == 2250 + 1500);
  SliceWork opt = Work(Pass::kOptimizer, 1, 0);
  opt.layers = 2;
  // 2 layers x 5000 ns.
  CHECK(model.Time(opt) == 10000);
}

TEST_CASE("calibrated model sends work it lacks to the fallback or names what is missing",
          "[models][calib]") {
  CalibratedCostModel strict(LoadCalibrationTable(kTablePath));
  CHECK_THROWS_WITH(strict.Time(Work(Pass::kForward, 1, 16, 0, Block::kAttention)),
                    kTablePath + ": no table for pass forward block attn tp 1");
  RooflineCostModel roofline(LoadModelCard("tiny"), LoadDeviceSpec("v100-sxm2-16gb"));
  CalibratedCostModel with_fallback(LoadCalibrationTable(kTablePath), &roofline);
  const SliceWork attn = Work(Pass::kForward, 1, 16, 0, Block::kAttention);
  CHECK(with_fallback.Time(attn) == roofline.Time(attn));
  // What the table has still comes from the table.
  CHECK(with_fallback.Time(Work(Pass::kForward, 1, 16)) == 1200);
}

TEST_CASE("malformed calibration tables name the file and the field", "[models][calib]") {
  const std::string head =
      R"({"format": "terasim-calibration", "version": 1, "device": "d", "model": "m",
          "source": "s", "tables": [)";
  const std::string context =
      R"("context": {"a0":0,"a1":0,"a2":0,"a3":0,"r2":1,"max_rel_error":0,"points":1})";
  CHECK(ErrorOf(head + R"({"pass": "forward", "rows": [{"rows": 1, "tokens": [8, 16],
        "time_ns": [1, 2], )" +
                context + "}]}]}") == "no error");
  CHECK(ErrorOf(head + R"({"pass": "forward", "rows": [{"rows": 1, "tokens": [16, 8],
        "time_ns": [1, 2], )" +
                context + "}]}]}") ==
        "bad.json: tables[0]: rows[0]: tokens[1]: must be greater than tokens[0]");
  CHECK(ErrorOf(head + R"({"pass": "forward", "rows": [{"rows": 1, "tokens": [8, 16],
        "time_ns": [1], )" +
                context + "}]}]}") ==
        "bad.json: tables[0]: rows[0]: time_ns: has 1 entries, tokens has 2");
  CHECK(ErrorOf(head + R"({"pass": "sideways", "rows": []}]})") ==
        "bad.json: tables[0]: pass: 'sideways' must be one of forward, backward, "
        "backward_input, backward_weight, optimizer");
  CHECK(ErrorOf(head + R"({"pass": "forward", "rows": [{"rows": 1, "tokens": [8, 16],
        "time_ns": [1, 2]}]}]})") == "bad.json: tables[0]: rows[0]: context: missing");
  CHECK(ErrorOf(head + R"({"pass": "optimizer", "time_ns_per_layer": 5},
                          {"pass": "optimizer", "time_ns_per_layer": 6}]})") ==
        "bad.json: tables[1]: pass: a second table for pass optimizer block whole tp 1");
  CHECK(ErrorOf(R"({"format": "terasim-calibration", "version": 2})") ==
        "bad.json: version: 2 is not supported (this build reads version 1)");
}

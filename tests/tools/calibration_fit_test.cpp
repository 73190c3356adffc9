// Tests of the calibration fit (models/calibration_fit.h): least squares of the context term,
// base curves from medians, speed factors, and a table that reads back through
// CalibratedCostModel.
#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "models/calibrated_cost.h"
#include "models/calibration_fit.h"
#include "models/errors.h"

namespace terasim {
namespace {

TEST_CASE("The context fit recovers exact coefficients with r2 = 1", "[calibration]") {
  std::vector<double> ls, cs, extra;
  for (double l : {8.0, 16.0, 32.0, 64.0}) {
    for (double c : {16.0, 48.0, 96.0}) {
      ls.push_back(l);
      cs.push_back(c);
      extra.push_back(1000 + 10 * l + 5 * c + 0.5 * l * c);
    }
  }
  const ContextFit f = FitContextTerm(ls, cs, extra);
  // The data are exactly a0 + a1 l + a2 c + a3 l c with (1000, 10, 5, 0.5).
  CHECK(f.a0 == Approx(1000).epsilon(1e-6));
  CHECK(f.a1 == Approx(10).epsilon(1e-6));
  CHECK(f.a2 == Approx(5).epsilon(1e-6));
  CHECK(f.a3 == Approx(0.5).epsilon(1e-6));
  CHECK(f.r2 == Approx(1).epsilon(1e-9));
  CHECK(f.points == 12);
}

TEST_CASE("The context fit drops columns the points cannot determine", "[calibration]") {
  // One context value: c and l c are collinear with 1 and l, so only a0 + a1 l is fitted
  // (the dropped columns are 0) and it still matches every point.
  const std::vector<double> ls = {8, 16, 32}, cs = {64, 64, 64};
  const std::vector<double> extra = {100 + 2 * 8.0, 100 + 2 * 16.0, 100 + 2 * 32.0};
  const ContextFit f = FitContextTerm(ls, cs, extra);
  for (size_t i = 0; i < ls.size(); ++i) CHECK(f.Ns(ls[i], cs[i]) == Approx(extra[i]));
  CHECK(f.r2 == Approx(1));
}

TEST_CASE("A fitted table reads back and reproduces the measured medians", "[calibration]") {
  // Forward: base 100 us + 1 us per token; context adds 0.01 us per l x c. Three repetitions
  // of each point, one of them an outlier the median removes. Backward is twice the forward.
  std::vector<ProfilePoint> points;
  for (int64_t c : {0, 32, 64}) {
    for (int64_t l : {1, 16, 32, 64}) {
      const double t = 100e3 + 1e3 * l + 10.0 * l * c;
      for (double noise : {1.0, 1.0, 3.0}) {
        points.push_back({Pass::kForward, 1, l, c, t * noise});
        points.push_back({Pass::kBackward, 1, l, c, 2 * t * noise});
      }
    }
  }
  points.push_back({Pass::kOptimizer, 1, 0, 0, 5000});
  const CalibrationTable table = FitCalibration(points, "local-cpu", "tiny", "test");
  const CalibrationTable back = ParseCalibrationTable(CalibrationJson(table), "fit.json");
  REQUIRE(back.tables.size() == 3);
  const CalibratedCostModel model(back);
  SliceWork w;
  w.tokens = 32;
  // Base curve at a measured length: 100 us + 32 us.
  CHECK(model.Time(w) == 132000);
  w.context = 64;
  // With context: + 0.01 us x 32 x 64 = 20.48 us.
  CHECK(model.Time(w) == Approx(152480).epsilon(1e-6));
  w.pass = Pass::kBackward;
  CHECK(model.Time(w) == Approx(2 * 152480).epsilon(1e-6));
  w.pass = Pass::kOptimizer;
  w.layers = 2;
  // Two layers of 5 us.
  CHECK(model.Time(w) == 10000);
  for (const PassTable& t : back.tables) {
    for (const RowsCurve& c : t.curves) {
      // An exact model fits every point.
      CHECK(c.context.max_rel_error < 1e-9);
      CHECK(c.context.points == 8);
    }
  }
}

TEST_CASE("A pass without two context-free lengths is an error naming it", "[calibration]") {
  const std::vector<ProfilePoint> points = {{Pass::kForward, 2, 16, 0, 1000},
                                            {Pass::kForward, 2, 16, 8, 1200}};
  // Only one length at context 0 for forward rows 2.
  CHECK_THROWS_WITH(FitCalibration(points, "d", "m", "s"),
                    Catch::Matchers::Contains("pass forward rows 2: needs at least 2"));
  CHECK_THROWS_AS(FitCalibration({}, "d", "m", "s"), InputError);
}

TEST_CASE("Speed factors: each round and thread's time against the cells' medians",
          "[calibration]") {
  // Two cells measured in 3 rounds on 2 threads; group (round r, thread t) runs at speed[2r+t].
  // Each cell's median over the 6 groups is the base time (median speed 1.0), so the factors
  // are the speeds themselves, one row per round.
  const double speed[] = {1.3, 0.8, 1.0, 1.1, 0.9, 1.0};
  std::vector<ProfilePoint> points;
  for (int round = 0; round < 3; ++round) {
    for (int thread = 0; thread < 2; ++thread) {
      for (int64_t l : {16, 32}) {
        const double t = (100e3 + 1e3 * l) * speed[2 * round + thread];
        points.push_back({Pass::kForward, 1, l, 0, t, round, thread});
      }
    }
  }
  const auto check_rows = [&](const std::vector<std::vector<double>>& got) {
    REQUIRE(got.size() == 3);
    for (int round = 0; round < 3; ++round) {
      REQUIRE(got[round].size() == 2);
      for (int thread = 0; thread < 2; ++thread) {
        CHECK(got[round][thread] == Approx(speed[2 * round + thread]));
      }
    }
  };
  check_rows(SpeedFactors(points));
  // The table carries them, and they read back.
  const CalibrationTable table = FitCalibration(points, "local-cpu", "tiny", "test");
  check_rows(ParseCalibrationTable(CalibrationJson(table), "fit.json").speed_factors);
  // A round that lacks a thread's points is left out.
  std::vector<ProfilePoint> partial = points;
  partial.erase(std::remove_if(partial.begin(), partial.end(),
                               [](const ProfilePoint& p) { return p.round == 1 && p.thread == 0; }),
                partial.end());
  CHECK(SpeedFactors(partial).size() == 2);
  // One group: nothing to compare against.
  for (ProfilePoint& p : points) p.round = p.thread = 0;
  CHECK(SpeedFactors(points).empty());
  CHECK(CalibrationJson(FitCalibration(points, "d", "m", "s")).find("speed_factors") ==
        std::string::npos);
}

TEST_CASE("Speed factors that are not positive or of unequal rounds are rejected",
          "[calibration]") {
  const std::vector<ProfilePoint> points = {{Pass::kForward, 1, 16, 0, 1000},
                                            {Pass::kForward, 1, 32, 0, 2000}};
  nlohmann::json doc =
      nlohmann::json::parse(CalibrationJson(FitCalibration(points, "d", "m", "s")));
  doc["speed_factors"] = {{0.9, 1.1}, {1.0, 0.0}};
  CHECK_THROWS_WITH(ParseCalibrationTable(doc.dump(), "c.json"),
                    Catch::Matchers::Contains("c.json: speed_factors[1][1]: must be a number > 0"));
  doc["speed_factors"] = {{0.9, 1.1}, {1.0}};
  CHECK_THROWS_WITH(
      ParseCalibrationTable(doc.dump(), "c.json"),
      Catch::Matchers::Contains("speed_factors[1]: has 1 factors, speed_factors[0] 2"));
  doc["speed_factors"] = {0.9, 1.1};
  CHECK_THROWS_WITH(ParseCalibrationTable(doc.dump(), "c.json"),
                    Catch::Matchers::Contains("speed_factors[0]: must be a non-empty array"));
}

}  // namespace
}  // namespace terasim

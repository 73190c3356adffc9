// The profiler behind `terasim calibrate` and `terasim validate --calib auto`: which points it
// measures, in which order, on how many layers.
#include <catch2/catch.hpp>

#include "exec/executor.h"
#include "exec/profiler.h"
#include "models/errors.h"
#include "models/model_card.h"

using namespace terasim;

TEST_CASE("The profiler measures every grid point round by round on a stack of layers",
          "[exec][profiler]") {
  const ModelCard card = LoadModelCard("tiny");  // 4 layers, sequence 32
  ProfileGrid grid;
  grid.rows = {1};
  grid.tokens = {4, 8, 30};
  grid.contexts = {0, 4};
  grid.layers = 2;
  grid.repetitions = 3;
  grid.warmup = 1;
  int calls = 0, last_done = 0, last_all = 0;
  const std::vector<ProfilePoint> points =
      ProfileLayer(card, grid, MakeBackendFactory("cpu", card, 1), [&](int done, int all) {
        ++calls;
        CHECK(done == last_done + 1);
        last_done = done;
        last_all = all;
      });
  // Cells: (4, 0), (8, 0), (30, 0), (4, 4), (8, 4); (30, 4) passes the 32-token sequence.
  const int cells = 5;
  // 3 rounds x 5 cells x (forward + backward), plus the optimizer once per round.
  REQUIRE(points.size() == static_cast<size_t>(3 * cells * 2 + 3));
  CHECK(calls == 3 * cells);
  CHECK(last_all == 3 * cells);
  // Round by round: the first round visits every cell before any cell repeats.
  std::vector<std::pair<int64_t, int64_t>> first_round;
  for (const ProfilePoint& p : points) {
    CHECK(p.time_ns > 0);
    if (p.pass == Pass::kForward && first_round.size() < static_cast<size_t>(cells)) {
      first_round.push_back({p.tokens, p.context});
    }
  }
  CHECK(first_round ==
        std::vector<std::pair<int64_t, int64_t>>{{4, 0}, {8, 0}, {30, 0}, {4, 4}, {8, 4}});
}

TEST_CASE("The profiler rejects a stack larger than the model", "[exec][profiler]") {
  const ModelCard card = LoadModelCard("tiny");
  ProfileGrid grid;
  grid.tokens = {4, 8};
  grid.contexts = {0};
  grid.layers = 5;
  CHECK_THROWS_WITH(ProfileLayer(card, grid, MakeBackendFactory("cpu", card, 1)),
                    "calibrate: --layers: 5 must be in 1..4 (the layers of tiny)");
  grid.layers = 1;
  grid.in_flight = 0;
  CHECK_THROWS_WITH(ProfileLayer(card, grid, MakeBackendFactory("cpu", card, 1)),
                    "calibrate: --in-flight: 0 must be >= 1");
}

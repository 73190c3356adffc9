// The differential fuzz harness's short run (tests/fuzz/differential.h; the long one is
// tools/fuzz/differential.sh): mutated generator schedules either fail the checker or run to
// the end in both the simulator and the executor.
#include <catch2/catch.hpp>

#include "tests/fuzz/differential.h"

namespace terasim::fuzz {
namespace {

TEST_CASE("every mutated schedule the checker accepts runs to the end in simulate and exec",
          "[fuzz][differential]") {
  DifferentialOptions options;
  options.seed = 20261201;
  options.cases = 300;
  const DifferentialCounts c = RunDifferential(options);
  for (const DifferentialFailure& f : c.failures) {
    UNSCOPED_INFO("case " << f.case_index << ": " << f.what << "\n" << f.mutation << "\n" << f.pir);
  }
  CHECK(c.failures.empty());
  CHECK(c.cases == options.cases);
  CHECK(c.accepted + c.rejected == c.cases);
  // The run means something only when both sides are exercised: about one case in eight is
  // left as generated (each must be accepted), and mutations both break and keep schedules.
  CHECK(c.unmutated > 0);
  CHECK(c.accepted > c.unmutated);
  CHECK(c.rejected > 0);
}

TEST_CASE("a differential case is a pure function of seed and index", "[fuzz][differential]") {
  std::string first, second;
  const Schedule a = MakeCase(7, 3, first);
  const Schedule b = MakeCase(7, 3, second);
  CHECK(first == second);
  REQUIRE(a.ops.size() == b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) CHECK(a.ops[i].key == b.ops[i].key);
}

}  // namespace
}  // namespace terasim::fuzz

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "sim/quaternary_heap.h"

namespace terasim {
namespace {

TEST_CASE("QuaternaryPopRoot returns the smallest key left, for any heap size") {
  // Expected: interleaved pushes and pops return the keys pushed and not yet popped in ascending
  // order (the reference: the minimum of a plain list). Sizes from 0 to several hundred cover
  // partial last families (1-3 children) and full ones.
  std::mt19937_64 rng(3);
  std::vector<uint64_t> heap;
  std::vector<uint64_t> left;
  uint64_t next_distinct = 0;
  for (int round = 0; round < 4000; ++round) {
    const bool push = left.empty() || (round < 2000 ? rng() % 3 != 0 : rng() % 3 == 0);
    if (push) {
      const uint64_t key = (rng() % 1000) << 20 | next_distinct++;  // distinct keys
      QuaternarySiftUp(heap, key);
      left.push_back(key);
    } else {
      const auto smallest = std::min_element(left.begin(), left.end());
      REQUIRE(QuaternaryPopRoot(heap) == *smallest);
      left.erase(smallest);
    }
    REQUIRE(heap.size() == left.size());
  }
}

}  // namespace
}  // namespace terasim

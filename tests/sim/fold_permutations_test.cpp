// The permutation groups a fold may simulate (sim/fold_permutations.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <utility>
#include <vector>

#include "sim/fold_permutations.h"

namespace terasim {
namespace {

// The pair colors of the p3.16xlarge hybrid cube-mesh (FACTS.md): 2 on an NV2 pair, 1 on an
// NV1 pair, 0 elsewhere (and on the diagonal).
std::vector<std::vector<int>> CubeMeshPairs() {
  std::vector<std::vector<int>> pair(8, std::vector<int>(8, 0));
  const auto link = [&](int a, int b, int lanes) { pair[a][b] = pair[b][a] = lanes; };
  for (auto [a, b] : {std::pair{0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {4, 7}, {5, 6}, {6, 7}}) {
    link(a, b, 2);
  }
  for (auto [a, b] : {std::pair{0, 1}, {0, 2}, {1, 3}, {2, 6}, {3, 7}, {4, 5}, {4, 6}, {5, 7}}) {
    link(a, b, 1);
  }
  return pair;
}

}  // namespace

TEST_CASE("the cube-mesh's fixed-point-free automorphisms within each socket") {
  // The NV2 pairs form the 8-cycle 0-3-2-1-5-6-7-4; an automorphism keeping the socket
  // {0, 1, 2, 3} (an arc of 4 of that cycle) is the identity or the reflection about the arc's
  // middle, which also keeps the NV1 pairs: (0 1)(2 3)(4 5)(6 7).
  const std::vector<int> sockets{0, 0, 0, 0, 1, 1, 1, 1};
  const auto within = SemiregularAutomorphisms(sockets, CubeMeshPairs(), 64, 100000);
  REQUIRE(within.size() == 1);
  CHECK(within[0] == Permutation{1, 0, 3, 2, 5, 4, 7, 6});
  // Without the sockets, the rotation of the 8-cycle by 4 (0 <-> 5, 3 <-> 6, 2 <-> 7, 1 <-> 4)
  // and the reflections and rotations that keep both pair colors: more than one.
  const auto any = SemiregularAutomorphisms(std::vector<int>(8, 0), CubeMeshPairs(), 64, 100000);
  CHECK(any.size() > 1);
  CHECK(std::find(any.begin(), any.end(), Permutation{5, 4, 7, 6, 1, 0, 3, 2}) != any.end());
}

TEST_CASE("an asymmetric pair has no automorphism") {
  // Three points, one pair colored apart (0-1): 2 is fixed by every automorphism.
  const std::vector<std::vector<int>> pair{{0, 1, 0}, {1, 0, 0}, {0, 0, 0}};
  CHECK(SemiregularAutomorphisms({0, 0, 0}, pair, 64, 1000).empty());
}

TEST_CASE("the largest free group of candidate permutations") {
  // On 4 points: the rotation by 1 (order 4, free), the double swap (0 1)(2 3) (order 2) and
  // a transposition (not free). The rotation alone is the largest free group; the double swap
  // with it would generate the dihedral group of order 8, which fixes points (not free).
  const std::vector<Permutation> candidates{{1, 0, 3, 2}, {1, 0, 2, 3}, {1, 2, 3, 0}};
  const std::vector<int> best = LargestFreeGroup(candidates, 4);
  REQUIRE(best == std::vector<int>{2});
  CHECK(GeneratedGroup({candidates[2]}, 4).size() == 4);
  // (0 1)(2 3) and (0 2)(1 3) generate the Klein group: order 4, free.
  const std::vector<Permutation> klein{{1, 0, 3, 2}, {2, 3, 0, 1}};
  CHECK(LargestFreeGroup(klein, 4) == std::vector<int>{0, 1});
  CHECK(ActsFreely(GeneratedGroup(klein, 4)));
  CHECK_FALSE(ActsFreely(GeneratedGroup({{1, 0, 2, 3}}, 4)));
  // A group larger than max_order is not built.
  CHECK(GeneratedGroup({{1, 2, 3, 0}}, 3).empty());
}

}  // namespace terasim

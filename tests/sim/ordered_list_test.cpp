#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "sim/ordered_list.h"

namespace terasim {
namespace {

TEST_CASE("RemoveKeepingOrder removes one id wherever it is and keeps the others' order") {
  // Expected: the list with that one entry erased (std::vector::erase keeps the order).
  std::mt19937 rng(5);
  for (int size = 1; size <= 9; ++size) {
    for (int at = 0; at < size; ++at) {
      std::vector<int> list(size);
      for (int k = 0; k < size; ++k) list[k] = static_cast<int>(rng() % 1000) * 10 + k;
      std::vector<int> expected = list;
      expected.erase(expected.begin() + at);
      RemoveKeepingOrder(list, list[at]);
      REQUIRE(list == expected);
    }
  }
  std::vector<int> one = {7};
  RemoveKeepingOrder(one, 7);
  REQUIRE(one.empty());
}

}  // namespace
}  // namespace terasim

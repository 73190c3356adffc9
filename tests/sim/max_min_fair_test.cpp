#include <catch2/catch.hpp>

#include "sim/max_min_fair.h"

namespace terasim {
namespace {

TEST_CASE("Two flows on one link get half its bandwidth each") {
  const auto rates = MaxMinFairRates({10e9}, {{0}, {0}});
  // Fair share: B / 2.
  REQUIRE(rates[0] == Approx(5e9));
  REQUIRE(rates[1] == Approx(5e9));
}

TEST_CASE("A flow over two links gets the narrower one") {
  const auto rates = MaxMinFairRates({10e9, 4e9}, {{0, 1}});
  // min(10, 4) GB/s.
  REQUIRE(rates[0] == Approx(4e9));
}

TEST_CASE("Three flows with different bottlenecks get the hand-computed max-min allocation") {
  // Links: A = 10, B = 4, C = 12 (GB/s). Flow 0 crosses A and B, flow 1 crosses B, flow 2 crosses
  // A and C. Progressive filling: B saturates first at 4 / 2 = 2 each (flows 0 and 1); A then has
  // 10 - 2 = 8 left for flow 2 alone, C has 12: flow 2 gets 8.
  const auto rates = MaxMinFairRates({10e9, 4e9, 12e9}, {{0, 1}, {1}, {0, 2}});
  REQUIRE(rates[0] == Approx(2e9));
  REQUIRE(rates[1] == Approx(2e9));
  REQUIRE(rates[2] == Approx(8e9));
}

TEST_CASE("A flow without links is unconstrained") {
  const auto rates = MaxMinFairRates({1e9}, {{}, {0}});
  // Empty route: +infinity; the other flow has the link alone.
  REQUIRE(std::isinf(rates[0]));
  REQUIRE(rates[1] == Approx(1e9));
}

}  // namespace
}  // namespace terasim

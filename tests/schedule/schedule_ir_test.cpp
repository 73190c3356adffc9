// Tests of the Schedule look-ups (schedule/schedule_ir.h).
#include <catch2/catch.hpp>

#include "schedule/schedule_ir.h"

using namespace terasim;

TEST_CASE("FindGroup returns the first group of a name, -1 for none") {
  Schedule s;
  // Names of one length that differ only in their last character, one differing earlier
  // with the same last character, a duplicate and the empty name.
  for (const char* name : {"tp.d0.s1", "tp.d0.s2", "tp.d1.s2", "tp.d0.s2", "", "dp.s0.r0"}) {
    s.groups.push_back(Group{name, {0, 1}, 0});
  }
  CHECK(s.FindGroup("tp.d0.s1") == 0);
  CHECK(s.FindGroup("tp.d0.s2") == 1);  // not the duplicate at 3
  CHECK(s.FindGroup("tp.d1.s2") == 2);
  CHECK(s.FindGroup("") == 4);
  CHECK(s.FindGroup("dp.s0.r0") == 5);
  CHECK(s.FindGroup("tp.d2.s2") == -1);  // same length and last character as three of them
  CHECK(s.FindGroup("tp.d0.s") == -1);   // a prefix
  CHECK(Schedule().FindGroup("") == -1);
}

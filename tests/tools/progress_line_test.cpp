// ProgressLine (tools/progress_line.h): milestones when piped, a redrawn line with rate and
// ETA on a terminal.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include "tools/progress_line.h"

using terasim::cli::ProgressLine;

TEST_CASE("ProgressLine prints one line per tenth of the work when piped", "[tools][progress]") {
  std::ostringstream out;
  {
    ProgressLine line("sweep", "points", 100, out, /*terminal=*/false);
    for (int done = 1; done <= 100; ++done) line.Update(done);
  }
  const std::string text = out.str();
  // 100 items: a line at 10, 20, ..., 100 = 10 lines, no carriage return, no timing.
  CHECK(std::count(text.begin(), text.end(), '\n') == 10);
  CHECK(text.find('\r') == std::string::npos);
  CHECK(text.find("ETA") == std::string::npos);
  CHECK(text.rfind("sweep: 100/100 points\n") == text.size() - 22);
}

TEST_CASE("ProgressLine reports every item of a short job when piped", "[tools][progress]") {
  std::ostringstream out;
  ProgressLine line("validate", "rounds", 3, out, /*terminal=*/false);
  // Each of 3 items crosses a tenth (3, 6 and 10 tenths): 3 lines.
  for (int done = 1; done <= 3; ++done) line.Update(done, "x");
  CHECK(out.str() == "validate: 1/3 rounds, x\nvalidate: 2/3 rounds, x\nvalidate: 3/3 rounds, x\n");
}

TEST_CASE("ProgressLine redraws one line with rate and ETA on a terminal", "[tools][progress]") {
  std::ostringstream out;
  {
    ProgressLine line("calibrate", "measurements", 4, out, /*terminal=*/true);
    line.Update(1);
    line.Update(2);
  }
  const std::string text = out.str();
  // Two redraws, each starting with '\r'; the destructor ends the line once.
  CHECK(std::count(text.begin(), text.end(), '\r') == 2);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK(text.find("calibrate: 2/4 measurements (") != std::string::npos);
  CHECK(text.find("measurements/s, ETA ") != std::string::npos);
}

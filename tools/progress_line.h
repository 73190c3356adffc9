// ProgressLine: the progress of a long command (sweep points, calibration measurements,
// validation rounds) on stderr. On a terminal one line is redrawn in place ('\r') with the
// rate and the time left; anywhere else (a pipe, a log file) it prints one plain line per
// milestone (every tenth of the work, and the last item), so a log stays one line per event
// and holds no carriage returns.
//
// Not thread-safe: the owner calls Update from one thread (or under its own lock).
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace terasim::cli {

class ProgressLine {
 public:
  // `label` starts every line ("sweep"), `unit` names the items ("points"); `terminal`
  // chooses the redrawn line (pass StderrIsTerminal() for stderr).
  ProgressLine(std::string label, std::string unit, int64_t total, std::ostream& out,
               bool terminal);
  // Calls Finish.
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // `done` of `total` items finished; `detail` (e.g. "2 failed") is appended.
  void Update(int64_t done, const std::string& detail = "");
  // Ends the redrawn line with a newline when one was drawn (before other output follows).
  void Finish();

 private:
  std::string label_;
  std::string unit_;
  int64_t total_;
  std::ostream& out_;
  bool terminal_;
  int printed_tenth_ = 0;  // tenths of the work already reported (piped)
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

// Whether stderr is a terminal (isatty).
bool StderrIsTerminal();

}  // namespace terasim::cli

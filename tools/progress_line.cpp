#include "tools/progress_line.h"

#include <unistd.h>

#include <fmt/format.h>

namespace terasim::cli {

ProgressLine::ProgressLine(std::string label, std::string unit, int64_t total, std::ostream& out,
                           bool terminal)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      out_(out),
      terminal_(terminal),
      start_(std::chrono::steady_clock::now()) {}

ProgressLine::~ProgressLine() { Finish(); }

void ProgressLine::Finish() {
  if (drawn_) out_ << "\n" << std::flush;
  drawn_ = false;
}

void ProgressLine::Update(int64_t done, const std::string& detail) {
  const std::string base = fmt::format("{}: {}/{} {}{}", label_, done, total_, unit_,
                                       detail.empty() ? "" : ", " + detail);
  if (!terminal_) {
    // Milestones: the first update in each tenth of the work (the last item is the tenth).
    const int tenth = total_ > 0 ? static_cast<int>(10 * done / total_) : 10;
    if (tenth <= printed_tenth_) return;
    printed_tenth_ = tenth;
    out_ << base << "\n" << std::flush;
    return;
  }
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string timing;
  if (done > 0 && elapsed_s > 0) {
    const double rate = static_cast<double>(done) / elapsed_s;
    timing = fmt::format(" ({:.1f} {}/s", rate, unit_);
    if (done < total_) timing += fmt::format(", ETA {:.0f} s", (total_ - done) / rate);
    timing += ")";
  }
  // Clear to the end of the line: a shorter line must not leave the old one's tail.
  out_ << "\r" << base << timing << "\033[K" << std::flush;
  drawn_ = true;
}

bool StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

}  // namespace terasim::cli

#include "tools/sweep/sweep_writer.h"

#include <csignal>
#include <iostream>

#include <fmt/format.h>

namespace terasim {

void PointWriter::Write(const SweepResult& r) {
  if (!r.record) {
    ++failed_;
    std::cerr << fmt::format("\nsweep: {}: {}\n", in_.grid.points[r.job].config.dump(), r.error);
    return;
  }
  if (!store_.WriteRunUnlessStored(*r.record, r.rows)) {
    ++already_stored_;
    return;
  }
  ++stored_by_rank_.at(r.rank);
  if (kill_after_ > 0 && Stored() >= kill_after_) std::raise(SIGKILL);
}

int PointWriter::Stored() const {
  int n = 0;
  for (int s : stored_by_rank_) n += s;
  return n;
}

}  // namespace terasim

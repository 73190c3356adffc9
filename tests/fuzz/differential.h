// The differential fuzz harness: one schedule means one thing to `check`, `simulate` and
// `exec` (docs/execution_rules.md). Random schedules from the generators (schedule/generator.h:
// gpipe, 1f1b, interleaved, terapipe; tp, dp and broadcast boundaries; the `tiny` model, at most
// 4 devices) are mutated (two ops of a stream swapped, an op moved to another place in its
// device's program or to another stream, an `after` dep dropped or added) and each one must
// either fail CheckSchedule or run to the end in both the simulator (sim/simulator.h) and the
// executor (CPU back end, in-process transport). Used by the test (a few hundred cases) and by
// tools/fuzz/differential.sh (tests/fuzz/differential_main.cpp, thousands).
//
// Thread safety: RunDifferential runs one case at a time; the executor runs its own threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/schedule_ir.h"

namespace terasim::fuzz {

struct DifferentialOptions {
  uint64_t seed = 1;
  int first_case = 0;  // run cases first_case .. first_case + cases - 1
  int cases = 100;
  // The executor's stall timeout; a stall is a failure. Generous: a RECV posted at the start of
  // an iteration waits the whole iteration, which a loaded machine can stretch a hundredfold.
  double stall_timeout_s = 120;
  std::string failure_dir;  // where failing schedules are written ("" : nowhere)
  bool verbose = false;     // one line per case on stderr
  bool progress = false;    // the counts every 500 cases on stderr
};

struct DifferentialFailure {
  int case_index = 0;
  std::string what;      // which side failed and its error
  std::string mutation;  // what was done to the generated schedule
  std::string pir;       // the schedule, as .pir text
};

struct DifferentialCounts {
  int cases = 0;
  int accepted = 0;   // the checker accepted; simulate and exec both ran (or failed: failures)
  int rejected = 0;   // the checker refused
  int unmutated = 0;  // cases left as generated (each must be accepted)
  std::vector<DifferentialFailure> failures;
};

// Case `index` of the run seeded `seed`: a generated schedule and the mutations applied to it
// (described in `mutation`). Deterministic: same seed and index, same schedule.
Schedule MakeCase(uint64_t seed, int index, std::string& mutation);

// Runs options.cases cases. Never throws for a case's failure (it is recorded); throws only
// when the model card or a generator option is broken.
DifferentialCounts RunDifferential(const DifferentialOptions& options);

}  // namespace terasim::fuzz

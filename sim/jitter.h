// Speed jitter: devices that do not run at one steady speed. A pipeline waits for the slower
// of its stages at every hand-off, so when each device's speed varies from one iteration to the
// next, the median iteration is longer than an iteration at the median speed, by more the more
// balanced the stages are (E[max(a, b)] > max(E[a], E[b])). Shared cores of a cloud VM vary by
// 10-20 % per iteration; a GPU by much less.
//
// SimulateWithJitter replays `samples` iterations; for each it draws (at random, with
// replacement) one row of factors, measured together, and multiplies each device's compute
// durations by its factor in that row: a round of the calibration table's speed_factors (one
// factor per profiler thread) or, for a replay of measured durations, an iteration of the
// trace's own (TraceSpeedFactors). Drawing whole rows keeps what the devices share (a slow
// spell of the whole machine slows every stage alike and adds no wait) apart from what they do
// not. It reports the median and the spread, and the median sample's whole SimResult.
//
// Same inputs and seed, same result. Thread safety: a pure function of its inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/simulator.h"

namespace terasim {

struct JitterOptions {
  // The rows to draw from: row[d] is device d's factor; a row of one factor serves every device.
  // Every row has 1 or at least as many factors as devices; every factor is finite and > 0.
  std::vector<std::vector<double>> factors;
  int samples = 101;  // >= 1
  uint64_t seed = 1;
  std::string origin = "jitter";  // names the factors' source in errors (a file, a trace)
};

struct JitterResult {
  std::vector<TimeNs> iteration_ns;  // per sample, in sample order
  TimeNs median_ns = 0;
  TimeNs p10_ns = 0;  // 10th and 90th percentiles (nearest rank)
  TimeNs p90_ns = 0;
  SimResult median;  // the median sample (the lower middle one for an even count)
};

// Throws InputError naming jitter.origin when it has no rows, a row of the wrong width, a factor
// that is not finite and > 0, or samples < 1; and
// what Simulate throws. `options.device_speed` is overwritten per sample.
JitterResult SimulateWithJitter(const Schedule& schedule, const NetworkTopology& topology,
                                const ComputeCostModel& cost, const SimOptions& options,
                                const JitterOptions& jitter);

}  // namespace terasim

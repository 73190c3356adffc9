// Speed jitter: devices that do not run at one steady speed. A pipeline waits for the slower
// of its stages at every hand-off, so when each device's speed varies from one iteration to the
// next, the median iteration is longer than an iteration at the median speed, by more the more
// balanced the stages are (E[max(a, b)] > max(E[a], E[b])). Shared cores of a cloud VM vary by
// 10-20 % per iteration; a GPU by much less.
//
// SimulateWithJitter replays `samples` iterations; in each, every device's compute durations
// are multiplied by a factor drawn at random (with replacement) from its list: the calibration
// table's speed_factors (measured by the profiler, one per round and device) or, for a replay
// of measured durations, the trace's own per-iteration factors (TraceSpeedFactors). It reports
// the median and the spread, and the median sample's whole SimResult.
//
// Same inputs and seed, same result. Thread safety: a pure function of its inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/simulator.h"

namespace terasim {

struct JitterOptions {
  // Per device: the factors it draws from (a device beyond the list draws from the last
  // entry; one list serves every device). Every factor > 0.
  std::vector<std::vector<double>> factors;
  int samples = 101;  // >= 1
  uint64_t seed = 1;
};

struct JitterResult {
  std::vector<TimeNs> iteration_ns;  // per sample, in sample order
  TimeNs median_ns = 0;
  TimeNs p10_ns = 0;  // 10th and 90th percentiles (nearest rank)
  TimeNs p90_ns = 0;
  SimResult median;  // the median sample (the lower middle one for an even count)
};

// Throws InputError when `jitter` has no factors, a factor <= 0, or samples < 1; and what
// Simulate throws. `options.device_speed` is overwritten per sample.
JitterResult SimulateWithJitter(const Schedule& schedule, const NetworkTopology& topology,
                                const ComputeCostModel& cost, const SimOptions& options,
                                const JitterOptions& jitter);

}  // namespace terasim

#include "sim/jitter.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "models/errors.h"

namespace terasim {

namespace {

// splitmix64: a fixed generator, so that the samples are the same on every platform.
uint64_t Next(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

JitterResult SimulateWithJitter(const Schedule& schedule, const NetworkTopology& topology,
                                const ComputeCostModel& cost, const SimOptions& options,
                                const JitterOptions& jitter) {
  const std::string& where = jitter.origin;
  if (jitter.samples < 1)
    ThrowInput("{}: jitter samples must be >= 1, not {}", where, jitter.samples);
  if (jitter.factors.empty()) ThrowInput("{}: no speed factors", where);
  for (size_t r = 0; r < jitter.factors.size(); ++r) {
    const std::vector<double>& row = jitter.factors[r];
    if (row.size() != 1 && row.size() < static_cast<size_t>(schedule.devices)) {
      ThrowInput(
          "{}: speed factors row {} has {} factors for {} devices (1 shared by all, or one per "
          "device)",
          where, r, row.size(), schedule.devices);
    }
    for (double f : row) {
      if (!std::isfinite(f) || !(f > 0)) {
        ThrowInput("{}: speed factors row {}: {} must be a finite number > 0", where, r, f);
      }
    }
  }
  // Every sample's factors first, so that the median sample can be replayed again.
  uint64_t state = jitter.seed;
  std::vector<std::vector<double>> speeds(jitter.samples, std::vector<double>(schedule.devices));
  for (auto& speed : speeds) {
    const std::vector<double>& row = jitter.factors[Next(state) % jitter.factors.size()];
    for (int d = 0; d < schedule.devices; ++d) speed[d] = row[row.size() == 1 ? 0 : d];
  }
  JitterResult result;
  SimOptions sample = options;
  sample.record_link_rates = false;
  for (const auto& speed : speeds) {
    sample.device_speed = speed;
    result.iteration_ns.push_back(Simulate(schedule, topology, cost, sample).iteration_time_ns);
  }
  std::vector<int> order(jitter.samples);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return result.iteration_ns[a] < result.iteration_ns[b]; });
  const auto rank = [&](double q) {  // nearest rank: the ceil(q n)-th smallest
    const auto k = static_cast<size_t>(std::ceil(q * static_cast<double>(order.size())));
    return order[std::clamp<size_t>(k, 1, order.size()) - 1];
  };
  const int middle = order[(order.size() - 1) / 2];
  result.median_ns = result.iteration_ns[middle];
  result.p10_ns = result.iteration_ns[rank(0.1)];
  result.p90_ns = result.iteration_ns[rank(0.9)];
  SimOptions median = options;
  median.device_speed = speeds[middle];
  result.median = Simulate(schedule, topology, cost, median);
  return result;
}

}  // namespace terasim

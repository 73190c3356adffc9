// Timing and tracing: the run clock, trace rows, gathered gradients (exec/stream_runner.h).
#include "exec/stream_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#ifdef __linux__
#include <sched.h>
#endif

#include <fmt/format.h>

#include "exec/model_params.h"
#include "exec/stop_flag.h"
#include "exec/tensor_id.h"
#include "exec/tensor_store.h"
#include "models/errors.h"

namespace terasim {

namespace run_detail {

TimeNs Runner::Now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - run_start_).count();
}

void Runner::Record(const DeviceState& dev, const Op& op, int iteration, TimeNs start,
                    std::vector<TraceRow>& rows) const {
  const TimeNs end = Now();
  TraceRow row;
  row.iteration = iteration;
  row.key = op.key;
  row.kind = op.kind;
  row.device = op.device;
  row.stream = op.stream;
  row.start_ns = start;
  row.end_ns = end;
  row.bytes = IsCompute(op.kind) ? 0 : op.bytes;
  row.flops = OpFlops(dev, op);
  rows.push_back(std::move(row));
}

}  // namespace run_detail

void MergeGathered(FullTensors& into, const FullTensors& from) {
  for (const auto& [name, values] : from.values) {
    auto& to_values = into.values[name];
    auto& to_covered = into.covered[name];
    const auto covered = from.covered.find(name);
    TERASIM_CHECK(covered != from.covered.end() && covered->second.size() == values.size(),
                  "gathered tensor {} without its coverage", name);
    if (to_values.empty()) {
      to_values.assign(values.size(), 0.0f);
      to_covered.assign(values.size(), 0);
    }
    TERASIM_CHECK(to_values.size() == values.size(), "gathered tensor {} has {} and {} values",
                  name, to_values.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      if (to_covered[i] || !covered->second[i]) continue;
      to_values[i] = values[i];
      to_covered[i] = 1;
    }
  }
}

double GradNorm(const FullTensors& tensors) {
  double squares = 0;
  for (const auto& [name, values] : tensors.values) {
    for (float v : values) squares += static_cast<double>(v) * v;
  }
  return std::sqrt(squares);
}

}  // namespace terasim

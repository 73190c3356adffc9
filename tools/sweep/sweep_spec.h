// SweepSpec: the what-if grid of `terasim sweep`, read from a JSON spec file (models x
// instance types x instance counts x NIC bandwidths x NIC latencies x batches x strategies).
//
//   {"models": ["gpt3-1b"], "instances": ["p3.16xlarge"], "counts": [1, 2],
//    "nic_gbps": [0, 100],          // 0: the instance's own; optional (default [0])
//    "nic_latency_us": [-1, 5],     // -1: the instance's own; optional (default [-1])
//    "batches": [8],                // global batch, sequences
//    "strategies": [{"strategy": "1f1b", "dp": 1, "pp": 4, "tp": 2, "microbatch_size": 1,
//                    "virtual_stages": 1, "slices": 0, "order": "flush",
//                    "boundary": "p2p"}],
//    "network": "analytic",         // optional: flow | analytic (default analytic)
//    "calib": ""}                   // optional calibration table
//
// Unknown fields are errors. Every integer is range-checked (a fraction or a value beyond the
// limits below is refused, never truncated); NIC rates and latencies are finite, rates >= 0
// and latencies >= 0 or -1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace terasim {

inline constexpr int64_t kMaxSweepInstanceCount = 1 << 20;  // instances of one cluster
inline constexpr int64_t kMaxSweepBatch = 1 << 30;          // sequences of a global batch
inline constexpr int64_t kMaxSweepDegree = 1 << 20;         // dp, pp, tp, micro-batch size, ...
inline constexpr int64_t kMaxSweepPoints = 1 << 24;         // points of the whole grid

struct StrategyPoint {
  std::string strategy;
  int dp = 1, pp = 1, tp = 1, microbatch_size = 1, virtual_stages = 1, slices = 0;
  std::string order = "flush", boundary = "p2p";
};

struct SweepSpec {
  std::vector<std::string> models, instances;
  std::vector<int> counts, batches;
  std::vector<double> nic_gbps = {0}, nic_latency_us = {-1};
  std::vector<StrategyPoint> strategies;
  std::string network = "analytic";
  std::string calib;

  // Points of the full product (before any is left out).
  int64_t Points() const;
};

// Reads the spec at `path`. Throws InputError "PATH: FIELD...: ..." for a missing, unknown,
// mistyped or out-of-range field, or a grid of more than kMaxSweepPoints points.
SweepSpec ParseSweepSpec(const std::string& path);
// The same from JSON text; `where` names it in errors.
SweepSpec ParseSweepSpecText(const std::string& text, const std::string& where);

}  // namespace terasim

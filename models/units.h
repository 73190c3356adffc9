// Units used across terasim. Time is integer nanoseconds everywhere in the simulator and
// in traces; sizes are bytes; FLOPs are counted as doubles (they exceed 2^63 for big runs).
#pragma once

#include <cstdint>

namespace terasim {

using TimeNs = int64_t;
using Bytes = int64_t;
using Flops = double;

inline constexpr TimeNs kNsPerUs = 1000;
inline constexpr TimeNs kNsPerMs = 1000 * 1000;
inline constexpr TimeNs kNsPerS = 1000 * 1000 * 1000;

inline double NsToSeconds(TimeNs t) { return static_cast<double>(t) / 1e9; }

}  // namespace terasim

// Reading and writing a Trace by file name: ".json" is Chrome / Perfetto trace JSON
// (traces/chrome_trace.h), ".csv" is trace CSV (traces/trace_csv.h). What
// `--trace OUT.json` and `--durations-from TRACE` use.
#pragma once

#include <string>
#include <vector>

#include "traces/chrome_trace.h"
#include "traces/trace.h"

namespace terasim {

// Reads a trace file. Throws InputError "PATH: unknown trace format (expected .json or
// .csv)", "PATH: cannot read", and the format's own errors.
Trace ReadTraceFile(const std::string& path);

// Writes a trace file in the format of its extension; `counters` go only into JSON. Throws
// InputError for an unknown extension or "PATH: cannot write".
void WriteTraceFile(const std::string& path, const Trace& trace,
                    const std::vector<CounterSeries>& counters = {});

}  // namespace terasim

// Chrome / Perfetto trace JSON (the "Trace Event Format") for a Trace: open the file in
// https://ui.perfetto.dev or chrome://tracing.
//
// Layout: one process per device (pid = device, named "GPU n"), one thread per stream (the
// same tid for a stream name on every device, named after the stream), one complete event
// (ph "X") per row with ts and dur in microseconds and the op's fields in args (key, kind,
// iteration, stream, bytes, flops). Optional counter series (e.g. link utilization) become
// counter events (ph "C") in one extra process named "counters". run_kind, label and metadata
// go to the top-level "otherData" object. Rows are written in the canonical order
// (traces/trace_order.h), one event per line: the same input gives byte-identical output.
//
// Given the schedule the trace ran (traces/trace_links.h pairs its rows):
// * a RECV keeps its one slice over its whole time (posted to data in), and gets two slices
//   nested in it: "wait" (cat "recv.wait", posted until its SEND is posted too) and
//   "transfer" (cat "recv.transfer", the data moving), args {"part": "wait"|"transfer",
//   "of": KEY}. A RECV posted after its SEND has only the transfer. Nesting keeps one slice
//   per op, so the reader gets back exactly the rows, and Perfetto shows the split under it.
// * flow events link each SEND to its RECV: ph "s" on the SEND's thread at its start, ph "f"
//   with bp "e" on the RECV's thread where the transfer begins (cat "p2p", name "SEND->RECV");
//   and the members of each collective instance in the order they arrive: "s" at the first
//   member's start, "t" at each middle member's, "f" (bp "e") at the last's (cat "collective",
//   name the kind). Ids count from 1, in the canonical order of the RECV / first member.
// Without a schedule neither is written.
//
// The reader takes back what the writer wrote (and the plain array form of the format); it
// uses only X events that are not RECV parts, and thread names, so counter, flow and other
// producers' extra events are skipped.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "models/units.h"
#include "schedule/schedule_ir.h"
#include "traces/trace.h"
#include "traces/trace_links.h"

namespace terasim {

struct CounterSample {
  TimeNs time_ns = 0;
  double value = 0;
};

// One counter track, e.g. name "link 0->3 (NVLink)", value_name "utilization", values in [0, 1].
struct CounterSeries {
  std::string name;
  std::string value_name = "value";
  std::vector<CounterSample> samples;  // written in this order
};

// Writes the trace as Chrome trace JSON to `out`; `schedule` (nullable, borrowed) is the
// schedule the trace ran, for the RECV split and the flows. Throws InternalError when a row
// has end_ns < start_ns or non-finite flops, or a counter sample is not finite.
void WriteChromeTrace(const Trace& trace, const std::vector<CounterSeries>& counters,
                      std::ostream& out, const Schedule* schedule = nullptr);
// The same, as a string.
std::string ChromeTraceJson(const Trace& trace, const std::vector<CounterSeries>& counters = {},
                            const Schedule* schedule = nullptr);
// The same, to a file, atomically (traces/atomic_file.h): the file is whole or untouched.
// Throws InputError "PATH: cannot write" or "PATH: is a symlink: ..." (not a regular file).
void WriteChromeTraceFile(const std::string& path, const Trace& trace,
                          const std::vector<CounterSeries>& counters = {},
                          const Schedule* schedule = nullptr);
// The same, with the rows' links through the schedule computed already
// (LinkTrace(schedule, trace)), for a caller that also draws them (gantt_svg.h).
void WriteChromeTraceFile(const std::string& path, const Trace& trace, const TraceLinks& links,
                          const std::vector<CounterSeries>& counters = {});

// Parses Chrome trace JSON. `origin` names the text in errors. Throws InputError
// "ORIGIN: traceEvents[i]: FIELD: what" for a malformed X event (e.g. an unknown op kind).
Trace ReadChromeTrace(const std::string& text, const std::string& origin);
// Reads and parses a file. Throws InputError "PATH: cannot read" and the errors above.
Trace ReadChromeTraceFile(const std::string& path);

}  // namespace terasim

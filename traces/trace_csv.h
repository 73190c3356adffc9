// A Trace as CSV, one row per op per iteration, for spreadsheets, pandas and diffing:
//
//   run,iteration,key,kind,device,stream,start_ns,end_ns,bytes,flops
//   sim-1,0,F.s0.m0.t0-256,FWD,0,compute,0,1450000,0,3.2e+12
//
// `run` names the run (a store run id or a label) so that files of several runs can be
// concatenated. Rows come in the canonical order (traces/trace_order.h); fields holding a
// comma, quote or line break are quoted (RFC 4180). Same trace -> same bytes.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "traces/trace.h"

namespace terasim {

inline constexpr std::string_view kTraceCsvHeader =
    "run,iteration,key,kind,device,stream,start_ns,end_ns,bytes,flops";

// Writes the header and the rows; `run` fills the run column (trace.label when empty).
// Throws InternalError for non-finite flops.
void WriteTraceCsv(const Trace& trace, std::string_view run, std::ostream& out);
// The same, as a string.
std::string TraceCsv(const Trace& trace, std::string_view run = {});
// The same, to a file, atomically (traces/atomic_file.h). Throws InputError "PATH: cannot write"
// or "PATH: is a directory: ..." (not a regular file).
void WriteTraceCsvFile(const std::string& path, const Trace& trace, std::string_view run = {});

// Parses trace CSV; the trace's label is the run column. `origin` names the text in errors.
// Throws InputError "ORIGIN:LINE: COLUMN: what" for a wrong header, a wrong number of fields,
// a malformed number, an unknown op kind, end_ns < start_ns, or a second run in one file.
Trace ReadTraceCsv(const std::string& text, const std::string& origin);
// Reads and parses a file. Throws InputError "PATH: cannot read" and the errors above.
Trace ReadTraceCsvFile(const std::string& path);

}  // namespace terasim

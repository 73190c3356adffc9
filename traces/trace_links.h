// TraceLinks: which rows of a trace talk to each other, from the schedule the trace ran: each
// SEND row with its RECV row (same tensor, the two devices each other's peer, same iteration)
// and the member rows of each collective instance (same kind, group and tensor, same
// iteration). The trace alone does not carry tensors or peers; the Perfetto writer
// (chrome_trace.h) and the timeline (gantt_svg.h) use these links to draw flows and to split a
// RECV into its wait and its transfer.
//
// A point-to-point transfer starts when both ends are posted (the simulator's rendezvous rule,
// sim/replay.cpp), so a RECV's data begins to move at max(SEND start, RECV start); before that
// the RECV waits. Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "models/units.h"
#include "schedule/schedule_ir.h"
#include "traces/trace.h"

namespace terasim {

struct TraceLinks {
  struct P2p {
    size_t send = 0;  // index into trace.rows
    size_t recv = 0;
  };
  std::vector<P2p> p2p;  // in the order of the RECV rows
  // Member row indexes of each collective instance, by start time then device; instances in
  // the order of their first member row.
  std::vector<std::vector<size_t>> collectives;
};

// Links the rows of `trace` through `schedule`. Rows whose key is not in the schedule, and
// ends whose partner has no row, are left out.
TraceLinks LinkTrace(const Schedule& schedule, const Trace& trace);

// When each linked RECV's data began to move: max(SEND start, RECV start), by RECV row index.
std::map<size_t, TimeNs> RecvTransferStarts(const Trace& trace, const TraceLinks& links);

}  // namespace terasim

// GanttSvg: one iteration of a trace as a pipeline timeline, in the style of the pipeline
// figures of the GPipe, Megatron-LM and TeraPipe papers, as a standalone SVG document.
//
// Layout: one row per device (or, with per_stream, one row per device and stream). A device
// row has a tall lane for its "compute" stream and a thin lane under it for each other stream
// (send, recv, dp, ...). Each op is one <rect class="op"> coloured by kind (forward, backward,
// point-to-point, collective, optimizer), except that a run of ops in one lane each narrower
// than 3 px (too narrow for the white edge that separates wider neighbours), at most half a
// pixel apart and all on (or all off) the critical path is one rect with data-ops="N", in the
// colour of the kind that takes most of its time, its tooltip counting the ops by kind and
// giving the first and last key, span and busy time: a large trace stays a small file. Runs
// of ops are labelled, where wide enough, with their micro-batch and, when the micro-batch is
// cut into token slices, the slice index ("3" or "3.1": micro-batch 3, slice 1, slices counted
// from the first token). A RECV whose transfer
// start is known (`recv_transfer_start`) is drawn as its wait (a pale rect, class "wait") and
// its transfer (the op rect). Idle time is the hatched background of the compute lane; the
// right margin prints each row's idle share of the iteration. The time axis starts at the
// iteration's first op, with ticks in ns, us, ms or s. The critical path (op keys) is
// outlined in black, one outline per run of its ops that touch in one lane, with a dashed link
// where it moves to another lane or device; its op rects carry data-critical="1". Labels sit
// on runs of ops of one kind and (micro-batch, slice); collectives between them (tensor
// parallelism's all-reduces) do not break a run.
//
// Devices whose rows are identical (same streams, kinds, start and end times: data-parallel
// replicas) share one row labelled "GPU 0 (+7 alike)" unless merge_identical is false; at most
// max_rows rows are drawn, the rest counted in a note. Deterministic: the same input gives the
// same bytes. Thread safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/units.h"
#include "traces/trace.h"

namespace terasim {

struct GanttOptions {
  std::string title;        // on top; empty: "pipeline timeline"
  std::string subtitle;     // under the title, e.g. the model and cluster
  int iteration = 0;        // the iteration drawn (rows of others are ignored)
  bool per_stream = false;  // one full row per (device, stream)
  bool merge_identical = true;
  int max_rows = 128;
  int plot_width_px = 1000;  // the time axis' length
  // The time the axis spans, when longer than the iteration's own (0: its own): timelines
  // drawn with one value share one scale, e.g. validate's measured, model and replay.
  TimeNs axis_span_ns = 0;
  // Op keys of the critical path, first to last; empty: CriticalPathFromChains.
  std::vector<std::string> critical_path;
  // RECV key -> when its data began to move (from RecvTransferStarts); RECVs not in it are
  // drawn whole.
  std::map<std::string, TimeNs> recv_transfer_start;
};

// The critical path recovered from the rows alone (no dependency information): from the op
// that ends last, step to the op that ended last at or before the current op started (on the
// same device first when several end at the same time, then on the same stream), until no op
// ended before it. In a simulated trace an op starts the instant its last dependency ends, so
// the chain follows real dependencies on the compute streams; a RECV that waited for its SEND
// is seen as waiting for whatever ended when it was posted (pass the schedule's path where
// there is one). Returns indexes into trace.rows of `iteration`, first to last.
std::vector<size_t> CriticalPathFromChains(const Trace& trace, int iteration = 0);

// The SVG document. Throws InputError "gantt: the trace has no rows for iteration N".
std::string GanttSvg(const Trace& trace, const GanttOptions& options);

}  // namespace terasim

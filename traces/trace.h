// Trace: what happened in one run, simulated or measured, as one row per op per iteration
// (DESIGN.md section 5). The simulator and the executor both produce a Trace; the writers
// (Perfetto / Chrome JSON, CSV), the SQLite store and the sim-vs-real comparison read it.
//
// traces/ depends only on models/ and schedule/, so that sim/ and exec/ can both write it
// without including each other.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/units.h"
#include "schedule/op.h"

namespace terasim {

struct TraceRow {
  int iteration = 0;
  std::string key;  // the op's key in the schedule
  OpKind kind = OpKind::kFwd;
  int device = 0;
  std::string stream;
  TimeNs start_ns = 0;  // from the start of the run
  TimeNs end_ns = 0;
  Bytes bytes = 0;  // communication payload (0 for compute)
  Flops flops = 0;  // model FLOPs of compute ops (0 for communication)
};

struct Trace {
  std::string run_kind;  // "sim" or "exec"
  std::string label;     // free text: schedule file, back end, ...
  std::vector<TraceRow> rows;
  // Extra facts for the trace viewer and the store (e.g. "model" -> "gpt3-1b"), sorted.
  std::map<std::string, std::string> metadata;
};

}  // namespace terasim

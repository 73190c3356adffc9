// traces/: what happened. The front door of the terasim_traces library: the trace schema
// shared by simulated and measured runs (trace.h), its Chrome / Perfetto JSON and CSV forms
// (chrome_trace.h, trace_csv.h, trace_file.h) and the SQLite results store
// (result_store.h). Other folders include this header.
#pragma once

#include "traces/atomic_file.h"
#include "traces/chrome_trace.h"
#include "traces/code_version.h"
#include "traces/query_result.h"
#include "traces/result_store.h"
#include "traces/trace.h"
#include "traces/trace_csv.h"
#include "traces/trace_file.h"
#include "traces/trace_order.h"

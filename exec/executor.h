// exec/: run a schedule for real (DESIGN.md section 1). The front door of the executor.
//
//   Schedule s = ReadPirFile("x.pir");  RequireValidSchedule(s);
//   ExecResult r = ExecuteInProcess(s, LoadModelCard("tiny"), ExecOptions{}, "cpu");
//
// Pieces: RunSchedule (exec/runner.h) drives one ComputeBackend per device
// (exec/compute_backend.h; CpuBackend in exec/cpu_backend.h) and a Transport
// (exec/transport.h; InProcessTransport in exec/inproc_transport.h).
#pragma once

#include <string>

#include "exec/compute_backend.h"
#include "exec/cpu_backend.h"
#include "exec/inproc_transport.h"
#include "exec/runner.h"
#include "exec/transport.h"

namespace terasim {

// The factory of back end `name` ("cpu"; "cuda" where that back end is built). Throws
// InputError "exec: --backend: ..." for an unknown name or a back end not built here.
BackendFactory MakeBackendFactory(const std::string& name, const ModelCard& card, uint64_t seed);

// Runs every device of `schedule` as threads of this process, over an InProcessTransport,
// with back end `backend`. Throws as RunSchedule and MakeBackendFactory.
ExecResult ExecuteInProcess(const Schedule& schedule, const ModelCard& card,
                            const ExecOptions& options, const std::string& backend = "cpu");

}  // namespace terasim

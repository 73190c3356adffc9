// exec/: run a schedule for real (DESIGN.md section 1). The front door of the executor.
//
//   Schedule s = ReadPirFile("x.pir");  RequireValidSchedule(s);
//   ExecResult r = ExecuteInProcess(s, LoadModelCard("tiny"), ExecOptions{}, "cpu");
//
// Pieces: RunSchedule (exec/runner.h) drives one ComputeBackend per device
// (exec/compute_backend.h; CpuBackend in exec/cpu_backend.h) and a Transport
// (exec/transport.h; InProcessTransport in exec/inproc_transport.h, MpiTransport in
// exec/mpi_transport.h for one process per device under mpirun: ExecuteMpi).
#pragma once

#include <optional>
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

// True when this process was started by mpirun / mpiexec (Open MPI's OMPI_COMM_WORLD_SIZE or
// the PMI_SIZE of MPICH-like launchers is set in the environment).
bool UnderMpirun();

// Whether this build has the MPI transport (exec/mpi_transport.h; TERASIM_HAVE_MPI).
bool MpiTransportBuilt();

// Runs the one device of this process under mpirun (device = MPI rank; the world size must
// equal schedule.devices) over an MpiTransport: initializes MPI with MPI_THREAD_MULTIPLE,
// runs, gathers every rank's losses (summed in rank order), gradients (merged in rank order,
// as MergeGathered), iteration times (the slowest rank's) and trace rows (each rank's clock
// from a common barrier) to rank 0, and finalizes MPI. Returns the combined result on rank 0
// and nullopt on the other ranks: the numbers equal ExecuteInProcess's bit for bit.
// Throws InputError when MPI is not built, provides a lower thread level, or the world size
// differs from the schedule's devices (on every rank alike). A failure while running on one
// rank cannot be reported by throwing (its peers would wait for it): that rank prints
// "terasim: rank R: ERROR" on stderr and ends the whole job with MPI_Abort (exit code 1).
std::optional<ExecResult> ExecuteMpi(const Schedule& schedule, const ModelCard& card,
                                     const ExecOptions& options,
                                     const std::string& backend = "cpu");

}  // namespace terasim

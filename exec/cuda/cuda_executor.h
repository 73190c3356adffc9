// The front door of the GPU executor (terasim_exec_cuda): the `cuda` back end factory and a
// one-GPU run of a whole schedule, every device a thread of this process on its own stream of
// one GPU, tensors exchanged through the LoopbackTransport. Built only where CUDA is found;
// users test TERASIM_HAVE_CUDA_BACKEND, which the target exports.
#pragma once

#include "exec/cuda/cuda_backend.h"
#include "exec/runner.h"
#include "schedule/schedule_ir.h"

namespace terasim {

// The factory of CudaBackends, every device on `options.device`.
BackendFactory MakeCudaBackendFactory(const ModelCard& card, uint64_t seed,
                                      const CudaBackendOptions& options);

// Runs every device of `schedule` on CUDA device `options.device`. Throws InputError when no
// CUDA device is usable ("exec: --backend cuda: no CUDA device (...)"), else as RunSchedule;
// CudaError on a CUDA failure.
ExecResult ExecuteOnGpu(const Schedule& schedule, const ModelCard& card,
                        const ExecOptions& exec_options, const CudaBackendOptions& options);

}  // namespace terasim

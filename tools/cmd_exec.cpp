// terasim exec: runs a .pir schedule for real (exec/executor.h): every device a thread of this
// process, or under mpirun one process per device (only rank 0 prints), the CPU back end by
// default; prints the loss, the first iteration's gradient norm and the iteration times, and
// optionally writes the measured trace as Chrome JSON.
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/executor.h"
#include "exec/profiler.h"
#ifdef TERASIM_HAVE_CUDA_BACKEND
#include "exec/cuda/cuda_executor.h"
#endif
#include "models/errors.h"
#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/pir_format.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "traces/chrome_trace.h"

namespace terasim::cli {

int RunExec(const Args& args) {
  po::options_description options("terasim exec");
  // clang-format off
  options.add_options()
      ("schedule", po::value<std::string>()->default_value(""), "the .pir file to run")
      ("model", po::value<std::string>()->default_value("", "the schedule's"),
       "model card name or path")
      ("backend", po::value<std::string>()->default_value("cpu"), "cpu | cuda")
      ("precision", po::value<std::string>()->default_value("fp32"),
       "cuda back end GEMMs: fp32 | bf16 (bf16 products, fp32 accumulation)")
      ("transport", po::value<std::string>()->default_value("auto"),
       "inproc (every device a thread) | mpi (one process per device, under mpirun) | auto "
       "(mpi when started by mpirun)")
      ("iterations", po::value<int>()->default_value(1), "training iterations to run")
      ("seed", po::value<uint64_t>()->default_value(1), "seed of the weights and the data")
      ("blas-threads", po::value<int>()->default_value(1),
       "OpenBLAS threads per call of the cpu back end (1: a device is one core, as the local "
       "topology models it)")
      ("exec-threads", po::value<std::string>()->default_value("auto"),
       "device (one thread per device runs its streams' ops as they become ready: a cpu device "
       "is one core) | stream (one thread per stream) | auto (device where the transport polls "
       "and no op is a collective)")
      ("trace", po::value<std::string>()->default_value(""),
       "write the measured trace as Chrome / Perfetto JSON to this file")
      ("json", po::bool_switch(), "print JSON");
  // clang-format on
  po::positional_options_description positional;
  positional.add("schedule", 1);
  po::variables_map vm;
  if (!Parse("exec", "FILE.pir [--model M] [--backend cpu] [options]", options, positional, args,
             vm)) {
    return 0;
  }
  const std::string path = vm["schedule"].as<std::string>();
  if (path.empty()) ThrowInput("terasim exec: a schedule FILE.pir is required");
  ExecOptions exec;
  exec.iterations = vm["iterations"].as<int>();
  if (exec.iterations < 1) ThrowInput("terasim exec: --iterations must be >= 1");
  exec.seed = vm["seed"].as<uint64_t>();
  exec.threads = ParseStreamThreads(vm["exec-threads"].as<std::string>(), "--exec-threads");
  const std::string backend = vm["backend"].as<std::string>();
#ifdef TERASIM_HAVE_CUDA_BACKEND
  // The cuda back end: every device a stream of one GPU (exec/cuda/cuda_executor.h).
  const bool on_gpu = backend == "cuda";
  const CudaBackendOptions gpu_options{
      0, ParseGemmPrecision(vm["precision"].as<std::string>(), "terasim exec")};
#else
  const bool on_gpu = false;
#endif
  if (!on_gpu) MakeBackendFactory(backend, ModelCard{}, exec.seed);  // unknown back ends fail
  const int blas_threads = vm["blas-threads"].as<int>();
  if (blas_threads < 1) ThrowInput("terasim exec: --blas-threads must be >= 1");
  if (backend == "cpu") SetBlasThreads(blas_threads);
  exec.threads_per_device = blas_threads;

  Schedule schedule = ReadPirFile(path);
  RequireValidSchedule(schedule);
  const std::string model = vm["model"].as<std::string>();
  const ModelCard card = LoadModelCard(model.empty() ? schedule.model : model);
  const std::string transport = vm["transport"].as<std::string>();
  if (transport != "auto" && transport != "inproc" && transport != "mpi") {
    ThrowInput("terasim exec: --transport: unknown transport '{}' (known: auto, inproc, mpi)",
               transport);
  }
  const bool use_mpi = transport == "mpi" || (transport == "auto" && UnderMpirun());
  std::optional<ExecResult> ran;
#ifdef TERASIM_HAVE_CUDA_BACKEND
  if (on_gpu && !use_mpi) ran = ExecuteOnGpu(schedule, card, exec, gpu_options);
#endif
  if (!ran) {
    ran = use_mpi ? ExecuteMpi(schedule, card, exec, backend)
                  : ExecuteInProcess(schedule, card, exec, backend);
  }
  if (!ran) return 0;  // an MPI rank other than 0: rank 0 reports for all
  ExecResult& result = *ran;

  const std::string trace_path = vm["trace"].as<std::string>();
  if (!trace_path.empty()) {
    result.trace.label = fmt::format("{} on {} ({})", path, card.name, backend);
    result.trace.metadata["backend"] = backend;
    result.trace.metadata["transport"] = use_mpi ? "mpi" : "inproc";
    result.trace.metadata["schedule"] = path;
    WriteChromeTraceFile(trace_path, result.trace, {}, &schedule);
  }
  if (vm["json"].as<bool>()) {
    // Per device run here: the model state its back end holds (ZeRO shards it over dp).
    nlohmann::json resident = nlohmann::json::array();
    for (const auto& [device, bytes] : result.resident_state) {
      resident.push_back({{"device", device},
                          {"parameters", bytes.parameters},
                          {"gradients", bytes.gradients},
                          {"moments", bytes.moments}});
    }
    PrintJson({{"schedule", path},
               {"model", card.name},
               {"backend", backend},
               {"seed", exec.seed},
               {"exec_threads", StreamThreadsName(result.threads)},
               {"loss", result.losses.front()},
               {"losses", result.losses},
               {"grad_norm", result.grad_norm},
               {"iteration_times_s", result.iteration_times_s},
               {"resident_state", resident}});
    return 0;
  }
  for (size_t i = 0; i < result.losses.size(); ++i) {
    std::cout << fmt::format("iteration {}: loss {:.6f}  time {:.3f} s\n", i, result.losses[i],
                             result.iteration_times_s[i]);
  }
  std::cout << fmt::format("grad_norm (first iteration) {:.6g}\n", result.grad_norm);
  return 0;
}

}  // namespace terasim::cli

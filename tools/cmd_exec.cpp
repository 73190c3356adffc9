// terasim exec: runs a .pir schedule for real (exec/executor.h): every device a thread of this
// process, the CPU back end by default; prints the loss, the first iteration's gradient norm
// and the iteration times, and optionally writes the measured trace as Chrome JSON.
#include <iostream>

#include <fmt/format.h>

#include "exec/executor.h"
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
      ("iterations", po::value<int>()->default_value(1), "training iterations to run")
      ("seed", po::value<uint64_t>()->default_value(1), "seed of the weights and the data")
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
  const std::string backend = vm["backend"].as<std::string>();
  MakeBackendFactory(backend, ModelCard{}, exec.seed);  // an unknown back end fails first

  Schedule schedule = ReadPirFile(path);
  RequireValidSchedule(schedule);
  const std::string model = vm["model"].as<std::string>();
  const ModelCard card = LoadModelCard(model.empty() ? schedule.model : model);
  ExecResult result = ExecuteInProcess(schedule, card, exec, backend);

  const std::string trace_path = vm["trace"].as<std::string>();
  if (!trace_path.empty()) {
    result.trace.label = fmt::format("{} on {} ({})", path, card.name, backend);
    result.trace.metadata["backend"] = backend;
    result.trace.metadata["schedule"] = path;
    WriteChromeTraceFile(trace_path, result.trace);
  }
  if (vm["json"].as<bool>()) {
    PrintJson({{"schedule", path},
               {"model", card.name},
               {"backend", backend},
               {"seed", exec.seed},
               {"loss", result.losses.front()},
               {"losses", result.losses},
               {"grad_norm", result.grad_norm},
               {"iteration_times_s", result.iteration_times_s}});
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

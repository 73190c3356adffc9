// terasim: the command-line front door. Dispatches to one subcommand; the only place that
// catches errors, prints one line on stderr and exits non-zero.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "models/errors.h"
#include "tools/commands.h"
#include "traces/code_version.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const terasim::cli::Args&);
};

// One line per subcommand, in the order `terasim --help` lists them.
const Command kCommands[] = {
    {"compare", "the main job: every strategy family ranked by simulated time",
     terasim::cli::RunCompare},
    {"plan", "the TeraPipe slicing DP and the strategy search", terasim::cli::RunPlan},
    {"models", "list the model cards", terasim::cli::RunModels},
    {"topo", "instance types, a node's GPU link matrix, cluster summary", terasim::cli::RunTopo},
    {"cost", "FLOPs, time and memory of one layer of a slice", terasim::cli::RunCost},
    {"collective", "nccl-tests-style table of one collective on a cluster",
     terasim::cli::RunCollective},
    {"memory", "peak memory per device of a strategy", terasim::cli::RunMemory},
    {"schedule", "generate a strategy's schedule as .pir", terasim::cli::RunSchedule},
    {"import", "a PyTorch pipelining action table (torch-csv) as a checked .pir",
     terasim::cli::RunImport},
    {"check", "check a .pir schedule", terasim::cli::RunCheck},
    {"show", "print a .pir schedule as a per-device grid", terasim::cli::RunShow},
    {"db", "list stored runs, run SQL, export a trace", terasim::cli::RunDb},
    {"exec", "run a .pir schedule for real (cpu back end)", terasim::cli::RunExec},
    {"simulate", "replay a .pir (or a strategy) on a modelled cluster", terasim::cli::RunSimulate},
    {"calibrate", "profile the executor's layer math into a calibration table",
     terasim::cli::RunCalibrate},
    {"validate", "run a schedule for real and in the simulator; report the error",
     terasim::cli::RunValidate},
    {"sweep", "what-if grid from a spec file: parallel, resumable, shardable",
     terasim::cli::RunSweep},
    {"plot", "pictures: a pipeline timeline (gantt) of a trace or stored run",
     terasim::cli::RunPlot},
};

void PrintUsage(std::FILE* out) {
  std::fprintf(out,
               "usage: terasim COMMAND [options]   (terasim help COMMAND, or terasim COMMAND "
               "--help, for its options)\n\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" ||
      (args[0] == "help" && args.size() == 1)) {
    PrintUsage(args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  // `terasim help CMD` is `terasim CMD --help`.
  if (args[0] == "help") args = {args[1], "--help"};
  if (args[0] == "--version") {
    std::printf("terasim %s+%s\n", TERASIM_VERSION, terasim::CodeVersion().c_str());
    return 0;
  }
  for (const Command& c : kCommands) {
    if (args[0] != c.name) continue;
    try {
      return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
    } catch (const terasim::InputError& e) {
      std::cerr << "terasim: " << e.what() << "\n";
      return 1;
    } catch (const std::exception& e) {
      std::cerr << "terasim: internal error: " << e.what() << "\n";
      return 3;
    }
  }
  std::cerr << "terasim: unknown command '" << args[0] << "'\n";
  PrintUsage(stderr);
  return 2;
}

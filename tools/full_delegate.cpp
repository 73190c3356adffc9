// The light `terasim` binary's executor commands (issue #12: start-up). `exec`, `calibrate`,
// `validate` and `sweep` may load CUDA, cuBLAS, NCCL, MPI and OpenBLAS; every other command
// needs none of them. The light binary links this file instead of their command files, so none
// of those libraries is loaded (linked --as-needed) and `terasim models` starts in a few ms;
// these four replace the process with `terasim-full` (the same CLI with every back end, built
// beside it) and the same arguments, so their behaviour, output and exit codes are unchanged,
// under mpirun too (the process, its rank and its environment stay the same).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "models/errors.h"
#include "tools/commands.h"

namespace terasim::cli {
namespace {

[[noreturn]] void RunInFull(const char* command, const Args& args) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::string full =
      (error ? std::filesystem::path(".") : self.parent_path()) / "terasim-full";
  std::vector<std::string> words = {full, command};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  execv(full.c_str(), argv.data());
  ThrowInput(
      "terasim {}: cannot start {} (the executor's binary, built and installed beside "
      "terasim): {}",
      command, full, std::strerror(errno));
}

}  // namespace

int RunExec(const Args& args) { RunInFull("exec", args); }
int RunCalibrate(const Args& args) { RunInFull("calibrate", args); }
int RunValidate(const Args& args) { RunInFull("validate", args); }
int RunSweep(const Args& args) { RunInFull("sweep", args); }

}  // namespace terasim::cli

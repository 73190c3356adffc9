// RunCommand: runs a shell command for the CLI tests and returns its exit status and stdout.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace terasim::testing {

// The exit status (128 + signal when the command was killed by a signal) and stdout.
inline int RunCommand(const std::string& command, std::string* out) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out->append(buffer, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace terasim::testing

// AtomicFile: outputs are whole or absent, only regular files are replaced, temporaries are
// unique and removed on failure and on SIGINT / SIGTERM.
#include "traces/atomic_file.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "models/errors.h"
#include "tests/traces/sample_trace.h"

namespace terasim {
namespace {

using testing::TempPath;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Files in `dir` whose names start with ".NAME." and end in ".tmp": AtomicFile's temporaries.
int CountTemporaries(const std::string& dir, const std::string& name) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string f = entry.path().filename().string();
    if (f.rfind("." + name + ".", 0) == 0 && f.size() > 4 && f.substr(f.size() - 4) == ".tmp") ++n;
  }
  return n;
}

struct TempDir {
  TempDir() {
    path = (std::filesystem::temp_directory_path() / ("terasim-atomic-" + std::to_string(getpid())))
               .string();
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

TEST_CASE("WriteFileAtomically creates and replaces a regular file and leaves no temporary") {
  TempDir dir;
  const std::string target = dir.path + "/out.json";
  WriteFileAtomically(target, "first");
  CHECK(ReadAll(target) == "first");
  WriteFileAtomically(target, "second, longer");
  CHECK(ReadAll(target) == "second, longer");
  CHECK(CountTemporaries(dir.path, "out.json") == 0);
}

TEST_CASE("AtomicFile never touches PATH.tmp") {
  TempDir dir;
  const std::string target = dir.path + "/run.pir";
  {
    std::ofstream other(target + ".tmp");
    other << "someone else's file";
  }
  WriteFileAtomically(target, "schedule");
  CHECK(ReadAll(target) == "schedule");
  CHECK(ReadAll(target + ".tmp") == "someone else's file");
}

TEST_CASE("AtomicFile refuses to replace anything but a regular file") {
  TempDir dir;
  const std::string real = dir.path + "/real.txt";
  WriteFileAtomically(real, "keep me");
  const std::string link = dir.path + "/link.txt";
  std::filesystem::create_symlink(real, link);
  CHECK_THROWS_WITH(WriteFileAtomically(link, "x"),
                    link + ": is a symlink: terasim replaces only regular files");
  CHECK(ReadAll(real) == "keep me");
  CHECK(std::filesystem::is_symlink(link));

  const std::string folder = dir.path + "/folder";
  std::filesystem::create_directories(folder);
  CHECK_THROWS_WITH(WriteFileAtomically(folder, "x"),
                    folder + ": is a directory: terasim replaces only regular files");
  CHECK_THROWS_WITH(WriteFileAtomically("/dev/null", "x"),
                    "/dev/null: is a character device: terasim replaces only regular files");
  CHECK_THROWS_AS(RequireReplaceableOutput(link), InputError);
  CHECK_NOTHROW(RequireReplaceableOutput(dir.path + "/absent.txt"));
  CHECK(CountTemporaries(dir.path, "link.txt") == 0);
}

TEST_CASE("An AtomicFile that is not committed leaves the target as it was") {
  TempDir dir;
  const std::string target = dir.path + "/table.json";
  WriteFileAtomically(target, "old");
  {
    AtomicFile file(target);
    file.stream() << "half a new ta";
    // an exception here: no Commit
  }
  CHECK(ReadAll(target) == "old");
  CHECK(CountTemporaries(dir.path, "table.json") == 0);
}

TEST_CASE("An output into a missing folder is an input error naming the path") {
  CHECK_THROWS_AS(WriteFileAtomically("/nonexistent-terasim-dir/x.json", "x"), InputError);
}

// A child writes half a file and is then sent `signal_number`: it must end by that signal,
// leave the old target and no temporary behind.
void CheckSignalCleanup(int signal_number) {
  TempDir dir;
  const std::string target = dir.path + "/trace.json";
  WriteFileAtomically(target, "old");
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // As in the terasim binary: no test framework handler in the way.
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    AtomicFile file(target);
    file.stream() << "partial";
    file.stream().flush();
    raise(signal_number);
    _exit(0);  // not reached
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  // Ends as killed by the signal (the shell reports 128 + signal).
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == signal_number);
  CHECK(ReadAll(target) == "old");
  CHECK(CountTemporaries(dir.path, "trace.json") == 0);
}

TEST_CASE("SIGTERM and SIGINT during a write remove the temporary and keep the old file") {
  CheckSignalCleanup(SIGTERM);
  CheckSignalCleanup(SIGINT);
}

}  // namespace
}  // namespace terasim

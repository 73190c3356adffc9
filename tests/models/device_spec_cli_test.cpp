// The terasim binary's handling of a malformed device spec: one line naming the file and the
// field on stderr, exit status 1.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

namespace {

struct Result {
  int status = -1;
  std::string err;
};

// Runs `terasim ARGS`, capturing stderr in a file beside `dir`.
Result RunTerasim(const std::string& args, const std::filesystem::path& dir) {
  const std::filesystem::path err = dir / "stderr.txt";
  const std::string command =
      std::string(TERASIM_BINARY) + " " + args + " >/dev/null 2>" + err.string();
  const int raw = std::system(command.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(err);
  std::stringstream text;
  text << in.rdbuf();
  r.err = text.str();
  return r;
}

}  // namespace

TEST_CASE("terasim cost rejects a malformed device spec with FILE: field and exit 1",
          "[models][device][cli]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("terasim_device_cli_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path spec = dir / "bad-gpu.json";
  std::ofstream(spec) << R"({"name": "bad-gpu", "product": "x", "peak_fp16_tensor_flops": 1e12,
    "peak_bf16_tensor_flops": 0, "peak_fp32_flops": 1e11, "memory_bytes": 1000,
    "memory_reserve_bytes": 10, "memory_bw_bytes_per_s": 0, "sm_count": 1,
    "compute_model": {}, "source": "test"})";
  Result r = RunTerasim("cost --device " + spec.string(), dir);
  // The first bad field in file order: a bandwidth of 0.
  CHECK(r.status == 1);
  CHECK(r.err == "terasim: " + spec.string() + ": memory_bw_bytes_per_s: must be > 0 (got 0)\n");

  Result ok = RunTerasim("cost --device v100-sxm2-16gb --tokens 64", dir);
  CHECK(ok.status == 0);
  std::filesystem::remove_all(dir);
}

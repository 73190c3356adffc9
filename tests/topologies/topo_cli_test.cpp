// `terasim topo` end to end: runs the built binary and reads its output.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

namespace {

struct Result {
  int exit_code = 0;
  std::string output;  // stdout and stderr
};

Result Run(const std::string& args) {
  std::string command = std::string(TERASIM_BINARY) + " " + args + " 2>&1";
  Result result;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace

TEST_CASE("terasim topo show prints the p3.16xlarge matrix as nvidia-smi topo -m does",
          "[topologies][cli]") {
  Result r = Run("topo show p3.16xlarge");
  REQUIRE(r.exit_code == 0);
  // header row GPU0 .. GPU7, then one row per GPU starting with its name
  CHECK(r.output.rfind("        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    GPU7    "
                       "NUMA Affinity\n",
                       0) == 0);
  // row 0: X, NV1 to 1 and 2, NV2 to 3 and 4, SYS to 5-7 (other socket, no NVLink)
  CHECK(r.output.find(
            "GPU0     X      NV1     NV1     NV2     NV2     SYS     SYS     SYS     0\n") !=
        std::string::npos);
  // row 7: GPUs 0-2 are on the other socket without NVLink
  CHECK(r.output.find(
            "GPU7    SYS     SYS     SYS     NV1     NV2     NV1     NV2      X      1\n") !=
        std::string::npos);
}

TEST_CASE("terasim topo show --json gives the matrix and a cluster summary", "[topologies][cli]") {
  Result m = Run("topo show p3.16xlarge --json");
  REQUIRE(m.exit_code == 0);
  auto matrix = nlohmann::json::parse(m.output);
  CHECK(matrix["matrix"][0][3] == "NV2");
  CHECK(matrix["nvlink_lanes"][5] == 6);
  Result s = Run("topo show p3.16xlarge:48 --json");
  REQUIRE(s.exit_code == 0);
  auto summary = nlohmann::json::parse(s.output);
  // 48 nodes x 8 GPUs; bisection 24 x 3.125 GB/s
  CHECK(summary["gpus"] == 384);
  CHECK(summary["nodes"] == 48);
  CHECK(summary["bisection_bytes_per_s"].get<double>() == Approx(75e9));
}

TEST_CASE("terasim topo list names every instance; bad specs exit 1 naming --cluster",
          "[topologies][cli]") {
  Result list = Run("topo list");
  REQUIRE(list.exit_code == 0);
  for (const char* name : {"p3.16xlarge", "p3dn.24xlarge", "p4d.24xlarge", "p5.48xlarge"}) {
    CHECK(list.output.find(name) != std::string::npos);
  }
  Result bad = Run("topo show p3.16xlarge:zero");
  CHECK(bad.exit_code == 1);
  CHECK(bad.output ==
        "terasim: --cluster: 'p3.16xlarge:zero': node count 'zero' is not a "
        "positive integer\n");
}

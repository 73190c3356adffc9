// The terasim binary's `cost --breakdown` and `collective` output: the per-operator table's
// FLOPs sum to the layer formula, and the collective table's bus bandwidth is nccl-tests'.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace {

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `terasim ARGS`, capturing stdout and stderr.
Result RunTerasim(const std::string& args) {
  const std::string base = "/tmp/terasim_cost_cli_" + std::to_string(getpid());
  const std::string command =
      std::string(TERASIM_BINARY) + " " + args + " >" + base + ".out 2>" + base + ".err";
  const int raw = std::system(command.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = Slurp(base + ".out");
  r.err = Slurp(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

}  // namespace

TEST_CASE("terasim cost --breakdown prints every operator of every pass", "[models][cli]") {
  const Result r = RunTerasim(
      "cost --model gpt3-1b --device v100-sxm2-16gb --tokens 64 --context 192 --breakdown --json");
  REQUIRE(r.status == 0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& b = doc.at("breakdown");
  // gpt3-1b (h 2048): forward 24 b l h^2 + 4 b l (c + l) h with l 64, c 192.
  const double h = 2048;
  const double forward = 24.0 * 64 * h * h + 4.0 * 64 * (192 + 64) * h;
  CHECK(b.at("forward").at("flops").get<double>() == Approx(forward));
  CHECK(b.at("recompute").at("flops").get<double>() == Approx(forward));
  CHECK(b.at("backward_input").at("flops").get<double>() +
            b.at("backward_weight").at("flops").get<double>() ==
        Approx(2 * forward));
  for (const auto& [pass, body] : b.items()) {
    double flops = 0;
    for (const nlohmann::json& op : body.at("operators")) {
      const std::string bound = op.at("bound");
      CHECK((bound == "compute" || bound == "memory" || bound == "launch"));
      // GEMMs name the tile they run on (one of the V100's 64..256-row tiles); others none.
      const int tile_m = op.at("tile").at(0).get<int>();
      if (op.at("kind") == "gemm") {
        CHECK((tile_m == 64 || tile_m == 128 || tile_m == 256));
      } else {
        CHECK(tile_m == 0);
      }
      flops += op.at("flops").get<double>();
    }
    INFO(pass);
    CHECK(flops == Approx(body.at("flops").get<double>()));
    CHECK(body.at("time_ns").get<int64_t>() > 0);
  }
  const Result text = RunTerasim("cost --model gpt3-1b --tokens 64 --breakdown --pass forward");
  CHECK(text.status == 0);
  CHECK(text.out.find("scores") != std::string::npos);
  CHECK(text.out.find("backward_input") == std::string::npos);
  const Result bad = RunTerasim("cost --breakdown --pass sideways");
  CHECK(bad.status == 1);
  CHECK(bad.err.find("--pass sideways") != std::string::npos);
}

TEST_CASE("terasim cost --no-kv-cache runs the eager layer without its cache", "[models][cli]") {
  // gpt3-1b at 1 token is launch-bound: the forward is its kernels' host time, so 24 kernels
  // (no cache) against 27 (a first slice with the cache) take 24 / 27 of the time (within the
  // last kernel's GPU time).
  const Result with = RunTerasim("cost --model gpt3-1b --tokens 1 --cost-model operator --json");
  const Result without = RunTerasim("cost --model gpt3-1b --tokens 1 --no-kv-cache --json");
  REQUIRE(with.status == 0);
  REQUIRE(without.status == 0);
  const double a = nlohmann::json::parse(with.out).at("fwd_time_ns").get<double>();
  const double b = nlohmann::json::parse(without.out).at("fwd_time_ns").get<double>();
  CHECK(b / a == Approx(24.0 / 27.0).epsilon(0.01));
  const Result bad = RunTerasim("cost --model gpt3-1b --tokens 64 --context 64 --no-kv-cache");
  CHECK(bad.status == 1);
  CHECK(bad.err.find("--no-kv-cache") != std::string::npos);
}

TEST_CASE("terasim cost --synchronized costs the op from an empty queue", "[models][cli]") {
  // gpt3-1b at 1024 tokens on the V100 (host_runs_ahead) is GPU-bound: inside a training loop
  // the host issues its kernels while the GPU runs the previous op's, so the forward is its GPU
  // work (about 2.40 ms); timed between two synchronizations it first waits for the kernels'
  // issue, which takes longer (about 2.51 ms, tools/fit/fit_v100.py --layer-synchronized's
  // figure).
  const Result ahead =
      RunTerasim("cost --model gpt3-1b --tokens 1024 --cost-model operator --json");
  const Result synced =
      RunTerasim("cost --model gpt3-1b --tokens 1024 --cost-model operator --synchronized --json");
  REQUIRE(ahead.status == 0);
  REQUIRE(synced.status == 0);
  const double a = nlohmann::json::parse(ahead.out).at("fwd_time_ns").get<double>();
  const double s = nlohmann::json::parse(synced.out).at("fwd_time_ns").get<double>();
  CHECK(s > a);
  CHECK(s == Approx(2.509e6).epsilon(0.005));
  // It implies the operator model (the device's default is the layer roofline), as the text
  // output's label says, and the label names the flag (the same model without it prints 2.403
  // ms).
  CHECK(nlohmann::json::parse(synced.out).at("cost_model") ==
        "operator v100-sxm2-16gb gpt3-1b, synchronized");
  CHECK(nlohmann::json::parse(ahead.out).at("cost_model") == "operator v100-sxm2-16gb gpt3-1b");
  const Result text = RunTerasim("cost --model gpt3-1b --tokens 1024 --synchronized");
  CHECK(text.status == 0);
  CHECK(text.out.find("(operator v100-sxm2-16gb gpt3-1b, synchronized)") != std::string::npos);
  CHECK(text.out.find("2.509 ms") != std::string::npos);
  // The layer roofline has no kernel queue to synchronize: naming it with the flag is refused,
  // as with the other operator-only flags, and the error names the flags.
  const Result layer =
      RunTerasim("cost --model gpt3-1b --tokens 1024 --cost-model layer --synchronized");
  CHECK(layer.status == 1);
  CHECK(layer.out.empty());
  CHECK(layer.err.find("--cost-model layer with --synchronized") != std::string::npos);
  const Result layer2 = RunTerasim(
      "cost --model gpt3-1b --tokens 1024 --cost-model layer --sequence-parallel --no-kv-cache");
  CHECK(layer2.status == 1);
  CHECK(layer2.err.find("--cost-model layer with --sequence-parallel --no-kv-cache") !=
        std::string::npos);
  // Without a flag the layer roofline answers, under its own name.
  const Result roofline = RunTerasim("cost --model gpt3-1b --tokens 1024 --cost-model layer");
  CHECK(roofline.status == 0);
  CHECK(roofline.out.find("operator") == std::string::npos);
  // The A100 has no host_runs_ahead: its queues start empty either way.
  const Result a100 = RunTerasim(
      "cost --model gpt3-1b --device a100-40gb --tokens 1024 --cost-model operator --json");
  const Result a100s = RunTerasim(
      "cost --model gpt3-1b --device a100-40gb --tokens 1024 --cost-model operator "
      "--synchronized --json");
  REQUIRE(a100.status == 0);
  REQUIRE(a100s.status == 0);
  CHECK(nlohmann::json::parse(a100.out).at("fwd_time_ns") ==
        nlohmann::json::parse(a100s.out).at("fwd_time_ns"));
}

TEST_CASE("terasim collective reports nccl-tests bus bandwidth", "[models][cli]") {
  const Result r = RunTerasim(
      "collective --op allreduce --cluster p3.16xlarge:1 --min-bytes 1024 --max-bytes 1048576 "
      "--json");
  REQUIRE(r.status == 0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  CHECK(doc.at("ranks") == 8);
  // Sizes 1 KiB, 2 KiB, ..., 1 MiB: 11 rows.
  REQUIRE(doc.at("rows").size() == 11);
  for (const nlohmann::json& row : doc.at("rows")) {
    // algbw = bytes / time; busbw = algbw x 2 (p - 1) / p = algbw x 1.75.
    const double algbw = row.at("bytes").get<double>() / (row.at("time_us").get<double>() * 1e-6);
    CHECK(row.at("algbw_gbytes_per_s").get<double>() == Approx(algbw / 1e9));
    CHECK(row.at("busbw_gbytes_per_s").get<double>() == Approx(algbw / 1e9 * 1.75));
  }
  const Result ag = RunTerasim(
      "collective --op allgather --cluster p4d.24xlarge:2 --min-bytes 1048576 --max-bytes 1048576 "
      "--json");
  REQUIRE(ag.status == 0);
  // 16 ranks: busbw = algbw x 15 / 16; NCCL runs all-gather as a ring.
  const nlohmann::json row = nlohmann::json::parse(ag.out).at("rows").at(0);
  CHECK(row.at("algorithm") == "ring");
  CHECK(row.at("busbw_gbytes_per_s").get<double>() ==
        Approx(row.at("algbw_gbytes_per_s").get<double>() * 15 / 16));
  const Result bad = RunTerasim("collective --op alltoall");
  CHECK(bad.status == 1);
  CHECK(bad.err.find("--op alltoall") != std::string::npos);
  const Result tree = RunTerasim("collective --op allgather --algorithm tree --max-bytes 64");
  CHECK(tree.status == 1);
  CHECK(tree.err.find("does not run allgather") != std::string::npos);
}

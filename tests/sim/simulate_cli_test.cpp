#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "models/errors.h"
#include "sim/collective_plan.h"

namespace terasim {
namespace {

// Runs a shell command; returns its exit status and stdout.
int RunCommand(const std::string& command, std::string* out) {
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out->append(buffer, n);
  const int status = pclose(pipe);
  return WEXITSTATUS(status);
}

TEST_CASE("terasim simulate --json reports the iteration of a generated schedule") {
  std::string out;
  const int status = RunCommand(std::string(TERASIM_BINARY) +
                                    " simulate --model tiny --cluster p3.16xlarge:1 --strategy "
                                    "1f1b --dp 1 --pp 2 --tp 2 --microbatches 4 --json",
                                &out);
  REQUIRE(status == 0);
  const nlohmann::json json = nlohmann::json::parse(out);
  // Every number the command promises is there and sane.
  REQUIRE(json.at("iteration_time_s").get<double>() > 0);
  REQUIRE(json.at("bubble_fraction").get<double>() >= 0);
  REQUIRE(json.at("bubble_fraction").get<double>() < 1);
  REQUIRE(json.at("tflops_per_gpu").get<double>() > 0);
  REQUIRE(json.at("peak_memory_bytes").get<int64_t>() > 0);
  REQUIRE(json.at("events").get<int64_t>() > 0);
  REQUIRE(json.at("wall_time_s").get<double>() >= 0);
  // 2 stages x 2 tp ranks.
  REQUIRE(json.at("devices").size() == 4);
}

TEST_CASE("terasim simulate says where the two network modes can differ") {
  // gpt3-1b at dp 8 x pp 24 on 24 p3.16xlarge with bucketed gradients: the data-parallel
  // all-reduces start while pipeline transfers hold the NICs (staggered contention), which
  // the analytic mode costs once at each start and the flow mode re-shares.
  const std::string simulate =
      std::string(TERASIM_BINARY) +
      " simulate --model gpt3-1b --cluster p3.16xlarge:24 --strategy gpipe --dp 8 --pp 24 --tp 1 "
      "--batch 128 --dp-step bucketed --network ";
  std::string analytic, flow;
  REQUIRE(RunCommand(simulate + "analytic", &analytic) == 0);
  CHECK_THAT(analytic, Catch::Matchers::Contains("of the link bytes met transfers started at "
                                                 "other instants, where the modes can differ"));
  // The flow mode re-shares, so it has nothing to say; its JSON reports no staggered bytes.
  REQUIRE(RunCommand(simulate + "flow", &flow) == 0);
  CHECK_THAT(flow, !Catch::Matchers::Contains("the modes can differ"));
  std::string json;
  REQUIRE(RunCommand(simulate + "analytic --json", &json) == 0);
  CHECK(nlohmann::json::parse(json).at("analytic_staggered_fraction").get<double>() > 0.05);
}

TEST_CASE("terasim simulate rejects an unknown network mode naming the flag") {
  std::string out;
  const int status = RunCommand(std::string(TERASIM_BINARY) +
                                    " simulate --model tiny --cluster p3.16xlarge:1 --strategy "
                                    "1f1b --pp 2 --network fast 2>&1",
                                &out);
  // Exit code 1 and one line naming --network.
  REQUIRE(status == 1);
  REQUIRE_THAT(out, Catch::Matchers::Contains("--network: 'fast' must be one of flow, analytic"));
}

TEST_CASE("terasim simulate --jitter-samples reports the median of jittered iterations") {
  const std::string data = std::string(TERASIM_TEST_DATA) + "/../../traces/data/";
  const std::string replay = std::string(TERASIM_BINARY) + " simulate " + data +
                             "terapipe_p2_m2_s4.pir --model " + data +
                             "cpu-small.json --cluster local:2 --durations-from " + data +
                             "terapipe_p2_m2_s4.trace.json --json";
  std::string out;
  REQUIRE(RunCommand(replay + " --jitter-samples 21", &out) == 0);
  const nlohmann::json jittered = nlohmann::json::parse(out);
  const nlohmann::json& spread = jittered.at("jitter");
  CHECK(spread.at("samples") == 21);
  // The reported iteration is the median sample: between the 10th and 90th percentiles.
  const double median = jittered.at("iteration_time_s").get<double>();
  CHECK(spread.at("p10_s").get<double>() <= median);
  CHECK(median <= spread.at("p90_s").get<double>());
  out.clear();
  REQUIRE(RunCommand(replay + " --jitter-samples 21", &out) == 0);
  // Same seed, same draws: the same answer.
  CHECK(nlohmann::json::parse(out).at("iteration_time_s").get<double>() == median);
  out.clear();
  REQUIRE(RunCommand(replay, &out) == 0);
  CHECK(nlohmann::json::parse(out).at("jitter").is_null());
  out.clear();
  // The roofline model has no speed factors to draw from.
  const int status = RunCommand(std::string(TERASIM_BINARY) + " simulate " + data +
                                    "terapipe_p2_m2_s4.pir --model " + data +
                                    "cpu-small.json --cluster local:2 --jitter-samples 5 2>&1",
                                &out);
  CHECK(status == 1);
  CHECK_THAT(out, Catch::Matchers::Contains("--jitter-samples: needs speed factors"));
}

TEST_CASE("Collective options load from the data file and bad files name the field") {
  const CollectiveOptions options = LoadCollectiveOptions(DefaultCollectiveOptionsPath());
  // sim/data/collectives.json: bidirectional rings, 512 KiB broadcast chunks.
  REQUIRE(options.bidirectional_rings);
  REQUIRE(options.broadcast_chunk_bytes == 512 * 1024);
  const std::string path = "/tmp/terasim_sim_bad_collectives.json";
  std::ofstream(path) << R"({"bidirectional_rings": true, "broadcast_chunk_bytes": 0})";
  REQUIRE_THROWS_WITH(LoadCollectiveOptions(path),
                      Catch::Matchers::Contains(path + ": broadcast_chunk_bytes"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace terasim

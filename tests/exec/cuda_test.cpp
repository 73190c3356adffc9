// The CUDA back end and the loopback transport against the CPU reference. Tests tagged [gpu]
// need a CUDA device and skip cleanly (with a warning, counted as passed) where there is none:
// on the build machines cudaGetDeviceCount reports "CUDA driver version is insufficient".
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

#include "exec/cpu_backend.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/loopback_transport.h"
#include "exec/executor.h"
#include "models/errors.h"
#include "schedule/checker.h"
#include "schedule/generator.h"

using namespace terasim;

namespace {

constexpr uint64_t kSeed = 5;
constexpr int kRows = 2;

// True (after a warning) when no CUDA device can be used here.
bool NoGpu() {
  if (CudaDeviceCount() > 0) return false;
  WARN("no CUDA device (no GPU or no driver on this machine): GPU test skipped");
  return true;
}

ShardSpec AllLayers(const ModelCard& card) {
  ShardSpec shard;
  for (int l = 0; l < card.layers; ++l) shard.layers.push_back(l);
  return shard;
}

// Forward and backward of the whole stack on one device for token slices `cuts` of one
// micro-batch of kRows sequences; returns the loss.
double RunStack(ComputeBackend& backend, const ModelCard& card, const std::vector<int>& cuts) {
  backend.BeginIteration();
  const int64_t global_tokens = static_cast<int64_t>(kRows) * card.sequence;
  std::vector<SliceRef> slices;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    SliceRef s;
    s.rows = kRows;
    s.t0 = cuts[i];
    s.t1 = cuts[i + 1];
    slices.push_back(s);
  }
  double loss = 0;
  std::vector<std::vector<float>> grads;
  for (const SliceRef& s : slices) {
    std::vector<float> x(s.Values(card.hidden));
    std::vector<float> y(x.size());
    backend.Input(s, x);
    for (int l = 0; l < card.layers; ++l) {
      backend.Forward(l, LayerPart::kWhole, s, x, y);
      std::swap(x, y);
    }
    std::vector<float> g(x.size());
    loss += backend.Loss(s, x, g, global_tokens);
    grads.push_back(std::move(g));
  }
  for (size_t i = slices.size(); i-- > 0;) {
    std::vector<float> g = grads[i];
    std::vector<float> gin(g.size());
    for (int l = card.layers - 1; l >= 0; --l) {
      backend.Backward(l, LayerPart::kWhole, slices[i], g, gin);
      std::swap(g, gin);
    }
    backend.InputBackward(slices[i], g);
  }
  return loss;
}

// ||a - b|| / ||b||.
double RelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0;
  double norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += std::pow(static_cast<double>(a[i]) - b[i], 2);
    norm += std::pow(static_cast<double>(b[i]), 2);
  }
  return std::sqrt(diff / norm);
}

}  // namespace

TEST_CASE("An unknown GEMM precision is rejected naming the option", "[exec][cuda]") {
  CHECK(ParseGemmPrecision("bf16", "exec") == gpu::GemmPrecision::kBf16);
  CHECK_THROWS_WITH(ParseGemmPrecision("fp16", "exec"),
                    Catch::Contains("exec: --precision: unknown 'fp16'"));
}

TEST_CASE("A failing CUDA call throws CudaError naming the call and file:line", "[exec][cuda]") {
  // No driver: "insufficient driver"; with a GPU: "invalid device ordinal". Either way, the
  // message names the call, this file and the rank.
  CHECK_THROWS_WITH(TERASIM_CUDA(cudaSetDevice(100000)),
                    Catch::Contains("cudaSetDevice(100000) failed at") &&
                        Catch::Contains("cuda_test.cpp:") && Catch::Contains("rank 0"));
}

TEST_CASE("The CUDA back end matches the CPU back end on the tiny models in fp32", "[gpu]") {
  if (NoGpu()) {
    SUCCEED("skipped: no CUDA device");
    return;
  }
  for (const std::string model : {"tiny", "tiny-lm"}) {
    INFO(model);
    const ModelCard card = LoadModelCard(model);
    // Uneven token slices exercise the key/value buffer and its gradient across slices.
    const std::vector<int> cuts = {0, 5, 16, card.sequence};
    CpuBackend cpu(card, AllLayers(card), kSeed);
    CudaBackend gpu(card, AllLayers(card), kSeed, CudaBackendOptions{});
    const double cpu_loss = RunStack(cpu, card, cuts);
    const double gpu_loss = RunStack(gpu, card, cuts);
    // Same math in fp32, different summation order: relative 1e-4.
    CHECK(gpu_loss == Approx(cpu_loss).epsilon(1e-4));
    const Range all{0, card.layers};
    // ||g_gpu - g_cpu|| <= 1e-4 ||g_cpu|| over every weight gradient.
    CHECK(RelativeError(gpu.Gradients(all), cpu.Gradients(all)) <= 1e-4);
    // One Adam step then a forward again: the updated weights agree too.
    cpu.OptimizerStep(all, AdamOptions{});
    gpu.OptimizerStep(all, AdamOptions{});
    CHECK(RunStack(gpu, card, cuts) == Approx(RunStack(cpu, card, cuts)).epsilon(1e-4));
  }
}

TEST_CASE("bf16 GEMMs with fp32 accumulation stay near the fp32 loss", "[gpu]") {
  if (NoGpu()) {
    SUCCEED("skipped: no CUDA device");
    return;
  }
  const ModelCard card = LoadModelCard("tiny-lm");
  CudaBackend fp32(card, AllLayers(card), kSeed, CudaBackendOptions{});
  CudaBackend bf16(card, AllLayers(card), kSeed, CudaBackendOptions{0, gpu::GemmPrecision::kBf16});
  const std::vector<int> cuts = {0, card.sequence};
  // bf16 keeps 8 significant bits (relative 2^-8 = 0.4% per product); the loss, an average
  // over many products, stays within 1%.
  CHECK(RunStack(bf16, card, cuts) == Approx(RunStack(fp32, card, cuts)).epsilon(1e-2));
}

TEST_CASE("The loopback transport delivers messages and sums collectives in rank order", "[gpu]") {
  if (NoGpu()) {
    SUCCEED("skipped: no CUDA device");
    return;
  }
  LoopbackTransport transport(3, 0, std::chrono::seconds(20));
  const std::vector<int> ranks = {0, 1, 2};
  std::vector<std::vector<float>> sums(3), gathered(3), scattered(3), received(3);
  std::vector<std::thread> threads;
  for (int d = 0; d < 3; ++d) {
    threads.emplace_back([&, d] {
      CollectiveCall call{"g", ranks, d, "t"};
      std::vector<float> data = {1.0f * (d + 1), 10.0f * (d + 1), 0.5f, 2.0f, 3.0f, -1.0f};
      transport.Send(d, (d + 1) % 3, "msg", std::vector<float>{static_cast<float>(d)});
      received[d] = transport.Recv(d, (d + 2) % 3, "msg");
      sums[d] = data;
      transport.AllReduce(call, sums[d]);
      call.tensor = "gather";
      gathered[d] = transport.AllGather(call, std::vector<float>{static_cast<float>(d)});
      call.tensor = "scatter";
      scattered[d] = transport.ReduceScatter(call, data);
    });
  }
  for (auto& t : threads) t.join();
  for (int d = 0; d < 3; ++d) {
    // Device d receives what device d - 1 sent: its index.
    CHECK(received[d] == std::vector<float>{static_cast<float>((d + 2) % 3)});
    // Sums over d = 0..2: (1+2+3), 10 (1+2+3), 3 x 0.5, 3 x 2, 3 x 3, 3 x -1.
    CHECK(sums[d] == std::vector<float>{6.0f, 60.0f, 1.5f, 6.0f, 9.0f, -3.0f});
    CHECK(gathered[d] == std::vector<float>{0.0f, 1.0f, 2.0f});
    // Device d's 2-value chunk of the sum.
    CHECK(scattered[d] == std::vector<float>(sums[d].begin() + 2 * d, sums[d].begin() + 2 * d + 2));
  }
}

TEST_CASE("The GPU executor over the loopback transport matches the CPU executor", "[gpu]") {
  if (NoGpu()) {
    SUCCEED("skipped: no CUDA device");
    return;
  }
  GenerateOptions o;
  o.model = LoadModelCard("tiny-lm");
  o.strategy = Strategy::kTeraPipe;
  o.dp = 2;
  o.pp = 2;
  o.tp = 2;
  o.microbatches = 1;
  o.microbatch_size = 2;
  o.uniform_slices = 2;
  Schedule s = Generate(o);
  RequireValidSchedule(s);
  ExecOptions options;
  options.iterations = 2;
  options.seed = 3;
  options.stall_timeout_s = 60;
  const ExecResult cpu = ExecuteInProcess(s, o.model, options, "cpu");
  const ExecResult gpu = ExecuteOnGpu(s, o.model, options, CudaBackendOptions{});
  // dp 2 x pp 2 x tp 2 with token slicing: the same numbers up to fp32 rounding, also after an
  // optimizer step.
  CHECK(gpu.losses.at(0) == Approx(cpu.losses.at(0)).epsilon(1e-4));
  CHECK(gpu.losses.at(1) == Approx(cpu.losses.at(1)).epsilon(1e-4));
  CHECK(gpu.grad_norm == Approx(cpu.grad_norm).epsilon(1e-4));
}

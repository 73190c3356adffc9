// terasim_exec_bench: the CPU back end's layer forward + backward throughput as a fraction of
// OpenBLAS sgemm throughput on the same GEMM shapes (a benchmark, not a test).
//
//   terasim_exec_bench [--hidden 1024] [--heads 16] [--tokens 512] [--repeats 5] [--json]
//
// The layer runs one slice of `tokens` tokens (no context) through one transformer layer
// (CpuBackend, tp 1), forward then backward. Its FLOPs are the model FLOPs CpuBackend reports
// (GEMMs plus the l x l score block). The reference times the same sequence of sgemm calls
// that the layer's projections and MLP make (forward: 4, backward: 8, with the same shapes and
// transposes) and reports their FLOP/s. The ratio says how much of sgemm's speed the layer
// keeps after LayerNorm, GeLU, softmax, attention and copies. Best of `repeats`.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "exec/cpu_backend.h"
#include "models/model_card.h"

using namespace terasim;
namespace po = boost::program_options;

namespace {

double BestSeconds(int repeats, const std::function<void()>& body) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description options("terasim_exec_bench");
  // clang-format off
  options.add_options()
      ("hidden", po::value<int>()->default_value(1024), "hidden size h")
      ("heads", po::value<int>()->default_value(16), "attention heads")
      ("tokens", po::value<int>()->default_value(512), "tokens in the slice")
      ("repeats", po::value<int>()->default_value(5), "timed repeats (best is reported)")
      ("json", po::bool_switch(), "print JSON")
      ("help,h", "show this help");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "terasim_exec_bench: %s\n", e.what());
    return 2;
  }
  if (vm.count("help")) {
    std::printf("usage: terasim_exec_bench [options]\n");
    options.print(std::cout);
    return 0;
  }
  ModelCard card;
  card.name = "bench";
  card.layers = 1;
  card.hidden = vm["hidden"].as<int>();
  card.heads = vm["heads"].as<int>();
  card.ffn = 4 * card.hidden;
  const int tokens = vm["tokens"].as<int>();
  const int repeats = vm["repeats"].as<int>();
  card.sequence = tokens;
  card.vocab = 2;
  if (card.hidden <= 0 || card.heads <= 0 || card.hidden % card.heads != 0 || tokens <= 0 ||
      repeats <= 0) {
    std::fprintf(stderr, "terasim_exec_bench: need positive sizes and heads dividing hidden\n");
    return 2;
  }
  const int h = card.hidden;
  const int f = card.ffn;
  const int n = tokens;

  ShardSpec shard;
  shard.layers = {0};
  CpuBackend backend(card, shard, 1);
  SliceRef slice;
  slice.rows = 1;
  slice.t0 = 0;
  slice.t1 = n;
  std::vector<float> x(slice.Values(h));
  std::vector<float> y(x.size());
  std::vector<float> grad(x.size(), 1e-3f);
  std::vector<float> grad_in(x.size());
  backend.BeginIteration();
  backend.Input(slice, x);
  const double layer_s = BestSeconds(repeats, [&] {
    backend.BeginIteration();
    backend.Forward(0, LayerPart::kWhole, slice, x, y);
    backend.Backward(0, LayerPart::kWhole, slice, grad, grad_in);
  });
  const double layer_flops = backend.LayerFlops(LayerPart::kWhole, slice, false) +
                             backend.LayerFlops(LayerPart::kWhole, slice, true);

  // The same projection and MLP GEMMs, alone: {m, n, k, trans_a, trans_b} per call.
  struct Shape {
    int m, n, k;
    bool ta, tb;
  };
  const std::vector<Shape> shapes = {
      {n, 3 * h, h, false, false}, {n, h, h, false, false},      // forward QKV, out-proj
      {n, f, h, false, false},     {n, h, f, false, false},      // forward fc1, fc2
      {n, f, h, false, true},      {f, h, n, true, false},       // backward fc2: dX, dW
      {h, f, n, true, false},      {n, h, f, false, true},       // backward fc1: dW, dX
      {n, h, h, false, true},      {h, h, n, true, false},       // backward out-proj: dX, dW
      {h, 3 * h, n, true, false},  {n, h, 3 * h, false, true}};  // backward QKV: dW, dX
  const size_t big = static_cast<size_t>(std::max(n, f)) * std::max(3 * h, f);
  std::vector<float> a(big, 0.5f), b(big, 0.25f), c(big, 0.0f);
  double gemm_flops = 0;
  for (const Shape& s : shapes) gemm_flops += 2.0 * s.m * s.n * s.k;
  const double gemm_s = BestSeconds(repeats, [&] {
    for (const Shape& s : shapes) {
      const int lda = s.ta ? s.m : s.k;
      const int ldb = s.tb ? s.k : s.n;
      cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans,
                  s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.n);
    }
  });
  const double layer_flops_per_s = layer_flops / layer_s;
  const double gemm_flops_per_s = gemm_flops / gemm_s;
  const double fraction = layer_flops_per_s / gemm_flops_per_s;
  if (vm["json"].as<bool>()) {
    nlohmann::json out = {{"hidden", h},
                          {"heads", card.heads},
                          {"tokens", n},
                          {"layer_fwd_bwd_s", layer_s},
                          {"layer_flops", layer_flops},
                          {"layer_flops_per_s", layer_flops_per_s},
                          {"sgemm_s", gemm_s},
                          {"sgemm_flops_per_s", gemm_flops_per_s},
                          {"fraction_of_sgemm", fraction}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("layer fwd+bwd  h=%d heads=%d tokens=%d: %.3f ms, %.2f GFLOP/s\n", h, card.heads, n,
              layer_s * 1e3, layer_flops_per_s / 1e9);
  std::printf("sgemm, same projection/MLP shapes:        %.3f ms, %.2f GFLOP/s\n", gemm_s * 1e3,
              gemm_flops_per_s / 1e9);
  std::printf("fraction of sgemm throughput: %.1f%%\n", 100.0 * fraction);
  return 0;
}

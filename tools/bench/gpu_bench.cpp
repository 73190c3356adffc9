// terasim_gpu_bench: the CUDA back end's layer forward + backward throughput as a fraction of
// cuBLAS GEMM throughput on the same GEMM shapes, in fp32 and in bf16 (fp32 accumulation) (a
// benchmark, not a test; tools/gpu_check.sh runs it on the GPU machine).
//
//   terasim_gpu_bench [--hidden 2048] [--heads 16] [--tokens 1024] [--repeats 10] [--json]
//
// The layer runs one slice of `tokens` tokens (no context) through one transformer layer
// (CudaBackend, tp 1), forward then backward, through the ComputeBackend interface: its time
// includes the host <-> device copies of the slice's activations that the interface implies.
// Its FLOPs are the model FLOPs the back end reports. The reference times the twelve GEMMs the
// layer's projections and MLP make (same shapes and transposes) back to back on the device.
// Best of `repeats` after one warm-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "exec/cuda/cuda_backend.h"
#include "models/model_card.h"

using namespace terasim;
namespace po = boost::program_options;

namespace {

double BestSeconds(int repeats, const std::function<void()>& body) {
  body();  // warm-up: cuBLAS heuristics, allocator pools
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

struct Measure {
  double layer_s = 0;
  double layer_flops = 0;
  double gemm_s = 0;
  double gemm_flops = 0;
};

Measure Run(const ModelCard& card, int tokens, int repeats, gpu::GemmPrecision precision) {
  const int h = card.hidden;
  const int f = card.ffn;
  const int n = tokens;
  ShardSpec shard;
  shard.layers = {0};
  CudaBackend backend(card, shard, 1, CudaBackendOptions{0, precision});
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
  Measure m;
  m.layer_s = BestSeconds(repeats, [&] {
    backend.BeginIteration();
    backend.Forward(0, LayerPart::kWhole, slice, x, y);
    backend.Backward(0, LayerPart::kWhole, slice, grad, grad_in);
    backend.Synchronize();
  });
  m.layer_flops = backend.LayerFlops(LayerPart::kWhole, slice, false) +
                  backend.LayerFlops(LayerPart::kWhole, slice, true);

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
  const int64_t big = static_cast<int64_t>(std::max(n, f)) * std::max(3 * h, f);
  CudaStream stream;
  CublasHandle cublas(stream.get());
  auto a = DeviceBuffer<float>::Zeros(big, stream.get());
  auto b = DeviceBuffer<float>::Zeros(big, stream.get());
  auto c = DeviceBuffer<float>::Zeros(big, stream.get());
  for (const Shape& s : shapes) m.gemm_flops += 2.0 * s.m * s.n * s.k;
  m.gemm_s = BestSeconds(repeats, [&] {
    for (const Shape& s : shapes) {
      const int lda = s.ta ? s.m : s.k;
      const int ldb = s.tb ? s.k : s.n;
      gpu::Gemm(cublas.get(), precision, s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(),
                ldb, 0.0f, c.data(), s.n);
    }
    stream.Synchronize();
  });
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description options("terasim_gpu_bench");
  // clang-format off
  options.add_options()
      ("hidden", po::value<int>()->default_value(2048), "hidden size h")
      ("heads", po::value<int>()->default_value(16), "attention heads")
      ("tokens", po::value<int>()->default_value(1024), "tokens in the slice")
      ("repeats", po::value<int>()->default_value(10), "timed repeats (best is reported)")
      ("json", po::bool_switch(), "print JSON")
      ("help,h", "show this help");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "terasim_gpu_bench: %s\n", e.what());
    return 2;
  }
  if (vm.count("help")) {
    std::printf("usage: terasim_gpu_bench [options]\n");
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
    std::fprintf(stderr, "terasim_gpu_bench: need positive sizes and heads dividing hidden\n");
    return 2;
  }
  if (CudaDeviceCount() == 0) {
    std::fprintf(stderr, "terasim_gpu_bench: no CUDA device\n");
    return 1;
  }
  try {
    nlohmann::json out = {{"hidden", card.hidden}, {"heads", card.heads}, {"tokens", tokens}};
    for (const auto& [name, precision] :
         {std::pair{"fp32", gpu::GemmPrecision::kFp32}, {"bf16", gpu::GemmPrecision::kBf16}}) {
      const Measure m = Run(card, tokens, repeats, precision);
      const double layer_rate = m.layer_flops / m.layer_s;
      const double gemm_rate = m.gemm_flops / m.gemm_s;
      out[name] = {{"layer_fwd_bwd_s", m.layer_s},    {"layer_flops", m.layer_flops},
                   {"layer_flops_per_s", layer_rate}, {"gemm_s", m.gemm_s},
                   {"gemm_flops_per_s", gemm_rate},   {"fraction_of_gemm", layer_rate / gemm_rate}};
      if (!vm["json"].as<bool>()) {
        std::printf("%s layer fwd+bwd h=%d heads=%d tokens=%d: %.3f ms, %.1f TFLOP/s\n", name,
                    card.hidden, card.heads, tokens, m.layer_s * 1e3, layer_rate / 1e12);
        std::printf("%s cuBLAS GEMMs, same projection/MLP shapes: %.3f ms, %.1f TFLOP/s\n", name,
                    m.gemm_s * 1e3, gemm_rate / 1e12);
        std::printf("%s fraction of GEMM throughput: %.1f%%\n", name,
                    100.0 * layer_rate / gemm_rate);
      }
    }
    if (vm["json"].as<bool>()) std::printf("%s\n", out.dump(2).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "terasim_gpu_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

#include "exec/profiler.h"

#include <chrono>
#include <exception>
#include <thread>

#include <cblas.h>

#include "models/errors.h"

namespace terasim {
namespace {

using Clock = std::chrono::steady_clock;

double ElapsedNs(Clock::time_point start) {
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

// A deterministic, non-trivial input (values in [-1, 1)).
std::vector<float> Pattern(int64_t n, uint32_t salt) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t x = 2463534242u ^ salt;
  for (float& f : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    f = static_cast<float>(x % 2048) / 1024.0f - 1.0f;
  }
  return v;
}

struct Timing {
  double forward_ns = 0;
  double backward_ns = 0;
  double optimizer_ns = 0;
};

// One point on a shard of `layers` layers (0 .. layers - 1), run as a stage runs them: the
// forward through the stack, the backward back down; times per layer (the stack's / layers).
Timing RunPoint(ComputeBackend& backend, const ModelCard& card, int layers, int in_flight, int rows,
                int64_t tokens, int64_t context, bool optimizer) {
  backend.BeginIteration();
  if (context > 0) {
    SliceRef prefix{0, rows, 0, static_cast<int>(context), 0};
    std::vector<float> x = Pattern(prefix.Values(card.hidden), 1);
    std::vector<float> y(x.size());
    for (int l = 0; l < layers; ++l) {
      backend.Forward(l, LayerPart::kWhole, prefix, x, y);
      std::swap(x, y);
    }
  }
  SliceRef slice{0, rows, static_cast<int>(context), static_cast<int>(context + tokens), 0};
  std::vector<float> x = Pattern(slice.Values(card.hidden), 2);
  std::vector<float> y(x.size());
  Timing t;
  auto start = Clock::now();
  for (int l = 0; l < layers; ++l) {
    backend.Forward(l, LayerPart::kWhole, slice, x, y);
    std::swap(x, y);
  }
  t.forward_ns = ElapsedNs(start) / layers;
  // In a pipeline other slices' forwards come between a slice's forward and its backward (the
  // weights stay warm, the slice's saved activations leave the core's cache, and as many
  // slices' activations are held as the stage holds): untimed forwards of other micro-batches'
  // slices of the same length.
  for (int m = 1; m < in_flight; ++m) {
    SliceRef other{m, rows, 0, static_cast<int>(tokens), static_cast<int64_t>(m) * rows};
    std::vector<float> ox = Pattern(other.Values(card.hidden), 4);
    std::vector<float> oy(ox.size());
    for (int l = 0; l < layers; ++l) {
      backend.Forward(l, LayerPart::kWhole, other, ox, oy);
      std::swap(ox, oy);
    }
  }
  std::vector<float> dy = Pattern(slice.Values(card.hidden), 3);
  std::vector<float> dx(dy.size());
  start = Clock::now();
  for (int l = layers - 1; l >= 0; --l) {
    backend.Backward(l, LayerPart::kWhole, slice, dy, dx);
    std::swap(dy, dx);
  }
  t.backward_ns = ElapsedNs(start) / layers;
  if (optimizer) {
    start = Clock::now();
    backend.OptimizerStep(Range{0, layers}, AdamOptions{});
    t.optimizer_ns = ElapsedNs(start) / layers;
  }
  return t;
}

}  // namespace

std::vector<ProfilePoint> ProfileLayer(const ModelCard& card, const ProfileGrid& grid,
                                       const BackendFactory& make_backend,
                                       const std::function<void(int, int)>& progress) {
  for (int r : grid.rows) {
    if (r < 1) ThrowInput("calibrate: --rows: {} must be >= 1", r);
  }
  for (int64_t l : grid.tokens) {
    if (l < 1) ThrowInput("calibrate: --tokens: {} must be >= 1", l);
  }
  for (int64_t c : grid.contexts) {
    if (c < 0) ThrowInput("calibrate: --contexts: {} must be >= 0", c);
  }
  if (grid.repetitions < 1) ThrowInput("calibrate: --repetitions must be >= 1");
  struct Cell {
    int rows;
    int64_t tokens, context;
  };
  std::vector<Cell> cells;
  for (int r : grid.rows) {
    for (int64_t c : grid.contexts) {
      for (int64_t l : grid.tokens) {
        if (c + l <= card.sequence) cells.push_back({r, l, c});
      }
    }
  }
  if (cells.empty()) {
    ThrowInput("calibrate: --tokens: no (context, length) point fits the sequence of {} ({})",
               card.name, card.sequence);
  }
  if (grid.in_flight < 1) ThrowInput("calibrate: --in-flight: {} must be >= 1", grid.in_flight);
  if (grid.layers < 1 || grid.layers > card.layers) {
    ThrowInput("calibrate: --layers: {} must be in 1..{} (the layers of {})", grid.layers,
               card.layers, card.name);
  }
  ShardSpec shard;
  for (int l = 0; l < grid.layers; ++l) shard.layers.push_back(l);
  std::unique_ptr<ComputeBackend> backend = make_backend(0, shard);
  // Warm-up of every cell first, then the repetitions in rounds over all cells, so that each
  // cell's samples spread over the whole measurement: a slow spell of the machine (other
  // processes, a busy host) then shifts every cell alike instead of bending the curve.
  for (const Cell& cell : cells) {
    for (int w = 0; w < grid.warmup; ++w) {
      RunPoint(*backend, card, grid.layers, grid.in_flight, cell.rows, cell.tokens, cell.context,
               grid.optimizer);
    }
  }
  std::vector<ProfilePoint> points;
  const int all = static_cast<int>(cells.size()) * grid.repetitions;
  for (int rep = 0; rep < grid.repetitions; ++rep) {
    for (size_t i = 0; i < cells.size(); ++i) {
      const Cell& cell = cells[i];
      // The optimizer is timed at the first cell of each round: its cost does not depend on
      // the slice.
      const bool optimizer = grid.optimizer && i == 0;
      const Timing t = RunPoint(*backend, card, grid.layers, grid.in_flight, cell.rows, cell.tokens,
                                cell.context, optimizer);
      points.push_back(
          {Pass::kForward, cell.rows, cell.tokens, cell.context, t.forward_ns, grid.round + rep});
      points.push_back(
          {Pass::kBackward, cell.rows, cell.tokens, cell.context, t.backward_ns, grid.round + rep});
      if (optimizer) {
        points.push_back({Pass::kOptimizer, 1, 0, 0, t.optimizer_ns, grid.round + rep});
      }
      if (progress) progress(rep * static_cast<int>(cells.size()) + static_cast<int>(i) + 1, all);
    }
  }
  return points;
}

std::vector<ProfilePoint> ProfileLayerOnThreads(const ModelCard& card, const ProfileGrid& grid,
                                                const BackendFactory& make_backend, int threads,
                                                const std::function<void(int, int)>& progress) {
  if (threads < 1) ThrowInput("calibrate: --threads: {} must be >= 1", threads);
  std::vector<std::vector<ProfilePoint>> per_thread(threads);
  std::vector<std::exception_ptr> errors(threads);
  {
    std::vector<std::jthread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        try {
          per_thread[t] = ProfileLayer(card, grid, make_backend,
                                       t == 0 ? progress : std::function<void(int, int)>());
          for (ProfilePoint& p : per_thread[t]) p.thread = t;
        } catch (...) {
          errors[t] = std::current_exception();
        }
      });
    }
  }
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  std::vector<ProfilePoint> points;
  for (const auto& p : per_thread) points.insert(points.end(), p.begin(), p.end());
  return points;
}

void SetBlasThreads(int threads) { openblas_set_num_threads(threads); }

}  // namespace terasim

// Profiler: measures the layer math of one device's back end for `terasim calibrate`: the
// forward and the backward of ONE transformer layer over a grid of (rows, slice length,
// context), and the optimizer step of one layer. The fit into a calibration table is
// models/calibration_fit.h; exec/ produces the measurements, it does not fit them.
//
// A point (rows r, length l, context c) runs on a fresh iteration of a shard of `layers`
// layers (1 by default; a stage's count makes the caches hold what a stage's do): the forward
// of the context slice [0, c) through the stack (untimed, it fills the key/value buffers), then
// the timed forward of [c, c + l) through the stack, untimed forwards of `in_flight` - 1 other
// micro-batches' slices of length l (what a pipeline stage does between a slice's forward and
// its backward: the weights stay warm, the slice's activations leave the core's cache), and the
// timed backward of [c, c + l) back down. Each time is divided by the layers, so a point is
// always ONE layer's time. Every point first runs `warmup` untimed times; then the grid is measured
// `repetitions` times over, round by round (so that a slow spell of a shared machine shifts every
// point alike); every repetition is returned (the fit takes medians). Timing is the steady clock
// around the back-end call.
//
// Thread safety: ProfileLayer is reentrant; SetBlasThreads changes process-wide state.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exec/runner.h"
#include "models/calibration_fit.h"
#include "models/model_card.h"

namespace terasim {

struct ProfileGrid {
  std::vector<int> rows = {1};
  std::vector<int64_t> tokens;    // slice lengths; each point needs context + tokens <= sequence
  std::vector<int64_t> contexts;  // 0 gives the base curve; > 0 the context term
  int layers = 1;  // the shard's layers: each point runs the stack, as a stage of that many does
  // Slices whose activations a stage holds at once (the point's and in_flight - 1 others),
  // as a pipeline stage does between a slice's forward and its backward.
  int in_flight = 2;
  int repetitions = 5;
  int warmup = 1;
  bool optimizer = true;  // also time the optimizer step of one layer
  int round = 0;          // the first repetition's ProfilePoint::round (callers that profile
                          // round by round themselves number their rounds with it)
};

// Measures `grid` with back ends from `make_backend` (device 0, a shard holding layer 0, tp 1).
// Points whose context + tokens exceed the card's sequence are skipped. `progress` (may be
// empty) is called after each measurement with (measurements done, measurements in all).
// Throws InputError "calibrate: --tokens: ..." when no point fits the sequence or a value is < 1
// (tokens, rows) or < 0 (contexts), and what the back end throws.
std::vector<ProfilePoint> ProfileLayer(const ModelCard& card, const ProfileGrid& grid,
                                       const BackendFactory& make_backend,
                                       const std::function<void(int, int)>& progress = {});

// ProfileLayer on `threads` threads at once (each with its own back end, as `threads` devices
// of a run share the machine's cores, caches and memory); every thread's points, thread 0's
// first, with ProfilePoint::thread set. `progress` follows thread 0. Throws InputError when threads
// < 1, and the first error any thread threw, after all have finished.
std::vector<ProfilePoint> ProfileLayerOnThreads(const ModelCard& card, const ProfileGrid& grid,
                                                const BackendFactory& make_backend, int threads,
                                                const std::function<void(int, int)>& progress = {});

// Sets the threads OpenBLAS uses per call (the CPU back end's matrix products). `terasim
// calibrate` and `terasim validate` set 1, so that each device thread is one core, as the
// `local` topology (topologies/data/local.json) models it.
void SetBlasThreads(int threads);

}  // namespace terasim

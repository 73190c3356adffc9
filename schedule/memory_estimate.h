// EstimateMemory: the peak memory of every device over a whole Schedule (DESIGN.md section 4:
// a strategy that does not fit is reported as such, never silently simulated).
//
// Each device's program is walked in issue order. A forward compute op allocates, for every
// layer (or block) it covers, the activations its (micro-batch, slice) keeps until the
// backward, plus the slice's key/value cache when the micro-batch's sequence is cut into
// several slices (models/memory_model.h); the matching backward op frees them (BWD, or
// BWD_WEIGHT when the device splits its backward, since the weight gradients still need the
// saved inputs). The peak of the live bytes over the program is added to:
//   * the static training state of the layers (and blocks) the device computes, sharded over
//     the op's tp group: 16 bytes per parameter (fp16 weights and gradients, fp32 master
//     weights and Adam moments); the embedding (or an untied LM head) counts on the device
//     holding the first (last) layer when the model card puts it in the stack;
//   * boundary buffers: one inbound and one outbound stage-boundary tensor in flight, i.e.
//     2 x the largest SEND / RECV / BROADCAST on the device.
// Today's recipes (models/memory_model.h, FACTS.md):
//   * a forward keeps its activations by its recompute and sp fields; a RECOMPUTE op rebuilds
//     one layer's activations (its range is recomputed layer by layer with the backward),
//     freed by the backward that frees the unit;
//   * an OPTIMIZER op with zero=Z over a data-parallel group of N shards the training state
//     as ZeRO stage Z (TrainingState(params, Z, N));
//   * ZeRO-3's all-gathered parameters (ALLGATHER ops whose tensor starts with "param."):
//     one layer in use and the next prefetched, 2 x the largest such all-gather.
// When a device does not fit, its reason ends with its largest term ("; largest term:
// activations 41.20 GiB").
// The capacity is the device's memory less its reserve (models/device_spec.h). A schedule
// holding only representatives' ops (Schedule::symmetry) gives every other device its
// image's estimate.
//
// Thread safety: a pure function.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "models/device_spec.h"
#include "models/memory_model.h"
#include "models/model_card.h"
#include "schedule/schedule_ir.h"

namespace terasim {

struct DeviceMemory {
  int device = 0;
  std::vector<int> stages;   // pipeline stages whose compute runs here, ascending
  int64_t params = 0;        // parameters held (this device's shard)
  TrainingStateBytes state;  // static: weights, gradients, optimizer state
  Bytes activations = 0;     // activations live at the peak
  Bytes kv_cache = 0;        // key/value cache live at the peak
  Bytes boundary = 0;        // stage-boundary buffers
  Bytes gathered = 0;        // ZeRO-3 all-gathered parameters
  int zero_stage = 0;        // the ZeRO stage of its optimizer (0: plain data parallelism)
  Bytes peak = 0;            // state + activations + kv_cache + boundary + gathered
  std::string peak_key;      // the op after which the peak is reached ("" if none)
  Bytes capacity = 0;        // device memory less the reserve
  bool fits = true;          // peak <= capacity
  std::string reason;        // one line with the numbers, e.g. "device 3 (stage 0): peak ..."

  // The largest of the terms above (activations, optimizer state, weights, gradients, kv
  // cache, gathered parameters, boundary buffers) and its bytes; the first on ties.
  std::pair<std::string, Bytes> LargestTerm() const;
};

struct MemoryEstimate {
  std::vector<DeviceMemory> devices;  // one per device, by rank
  int peak_device = 0;                // the device with the largest peak
  Bytes peak_bytes = 0;               // its peak
  Bytes capacity_bytes = 0;
  bool fits = true;    // every device fits
  std::string reason;  // "fits: ..." or "does not fit: ..." naming the largest device
};

// The estimate for `schedule` running `model` on devices of `spec`. Precondition: the
// schedule passed CheckSchedule and was generated for `model` (its layer and token ranges lie
// within the model's). Throws nothing on valid input.
MemoryEstimate EstimateMemory(const Schedule& schedule, const ModelCard& model,
                              const DeviceSpec& spec);

// "12.34 GiB" (two decimals of 2^30 bytes), the unit of every reason string.
std::string FormatGiB(Bytes bytes);

}  // namespace terasim

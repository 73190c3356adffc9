// RunSchedule: executes a checked Schedule for real, for N iterations.
//
// Threads per (device, stream) or per device (ExecOptions::threads): ops of a stream run in
// order, `after` deps wait on completion flags of the same device, SEND/RECV and collectives go
// through the Transport, layer math through one ComputeBackend per device. Activations and
// gradients live in a per-device TensorStore keyed by identity. Tensor-parallel all-reduces of
// tpf/tpb tensors are followed by the block's finish (bias, residual, LayerNorm backward);
// the dp all-reduce of wgrad.s{stage} sums the stage shard's weight gradients; OPTIMIZER runs
// Adam over its layers. BWD_INPUT runs the whole backward (input and weight gradients) and
// BWD_WEIGHT is then a no-op: the numbers are those of BWD, only the timing differs.
//
// Every op's start and end (steady clock, ns from the start of the run) go into the Trace.
// Thread safety: RunSchedule is reentrant; it owns its threads and joins them before it
// returns or throws.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/compute_backend.h"
#include "exec/transport.h"
#include "models/model_card.h"
#include "schedule/schedule_ir.h"
#include "traces/trace.h"

namespace terasim {

// One process runs at most this many devices (each at least one thread); a larger schedule
// runs under mpirun, one rank per device.
inline constexpr int kMaxDevicesPerProcess = 256;
// ... and starts at most this many threads (kStream: one per (device, stream)).
inline constexpr int kMaxThreadsPerProcess = 1024;

// How the streams of a device get threads.
//   kStream: one thread per (device, stream): streams run at once, as a GPU's do.
//   kDevice: one thread per device, running whichever of its streams' next op can go
//     (communication first): a cpu device is one core, and its streams share it. Needs a
//     transport that polls (Transport::Polls) and only compute, OPTIMIZER, SEND and RECV ops
//     (a collective blocks its caller, which here would block every stream of the device).
//     The numbers are those of kStream as long as a device has one compute stream (with
//     several, their order follows the messages' arrival, as on a GPU).
//   kAuto: kDevice where it can run, else kStream.
enum class StreamThreads { kAuto, kStream, kDevice };

// "auto", "stream", "device"; and back (InputError naming `where` for anything else).
std::string StreamThreadsName(StreamThreads threads);
StreamThreads ParseStreamThreads(const std::string& name, const std::string& where);

struct ExecOptions {
  int iterations = 1;
  uint64_t seed = 1;
  AdamOptions adam;
  double stall_timeout_s = 120;  // a wait longer than this is reported as a stall
  StreamThreads threads = StreamThreads::kAuto;
  // Cores each device's back end computes on (the cpu back end's BLAS threads). kDevice threads
  // wait for messages spinning only while devices x this fits the cores, else sleeping.
  int threads_per_device = 1;
};

struct ExecResult {
  // Per iteration: the loss over the global batch (summed over the devices run here that
  // compute it: tp rank 0 of a stage holding the last layer), and the wall time.
  std::vector<double> losses;
  std::vector<double> iteration_times_s;
  // The first iteration's weight gradients (after the dp all-reduce, before the optimizer),
  // assembled into full tensors from the devices run here, each element from the lowest
  // device holding it; and their global L2 norm (each parameter counted once).
  FullTensors gradients;
  double grad_norm = 0;
  // Per device run here, after the last iteration: the model state its back end holds
  // (ComputeBackend::ResidentState; ZeRO shards it over the data-parallel group).
  std::map<int, StateBytes> resident_state;
  StreamThreads threads = StreamThreads::kStream;  // what ran: kStream or kDevice
  Trace trace;                                     // metadata["threads"] says it too
};

// Makes the back end of one device for its shard.
using BackendFactory =
    std::function<std::unique_ptr<ComputeBackend>(int device, const ShardSpec& shard)>;

// Runs `schedule` (already checked with RequireValidSchedule) on `devices` (all of
// 0..schedule.devices-1 in one process; one rank under MPI). Throws InputError when the
// schedule does not fit the card (layers, sequence, tp degree), an op is not executable (a kind
// this executor does not run yet is named), `devices` or their threads exceed the limits above, or
// when options.threads is kDevice and cannot be;
// InternalError on a stall (a wait longer than options.stall_timeout_s); rethrows the first
// error of any device thread after stopping the others.
ExecResult RunSchedule(const Schedule& schedule, const ModelCard& card, const ExecOptions& options,
                       const BackendFactory& make_backend, Transport& transport,
                       const std::vector<int>& devices);

// Adds to `into` the elements of `from` that `from` covers and `into` does not yet (tensors
// missing in `into` are created): merging the gathers of devices in rank order gives every
// element from the lowest device holding it, as one process gathering them all would.
void MergeGathered(FullTensors& into, const FullTensors& from);

// The global L2 norm of every value in `tensors` (accumulated in double, by name order).
double GradNorm(const FullTensors& tensors);

}  // namespace terasim

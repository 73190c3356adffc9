// The largest sizes terasim accepts from any input: a .pir file, a model card, an instance
// description, a command-line flag. Every parser checks a number against its limit here BEFORE
// anything is allocated in proportion to it, and the error names the limit, e.g.
//   "run.pir:5: devices: 2147483647 exceeds the limit 1048576 (kMaxDevices, models/limits.h)".
// Each value is far above what a real run needs (the reason is beside it) and far below what
// would exhaust the memory of a workstation. Raise one here, with its reason, when a real
// study needs more. Header only, in models/ (the first library of the data flow, DESIGN.md
// section 1) so that every library may include it.
#pragma once

#include <cstdint>

namespace terasim::limits {

// Devices (GPU ranks) of one schedule or cluster. The largest cluster a spec can name is 65536
// nodes x 8 GPUs = 524288 (topologies/cluster_options.h); per-device state (queues, indices,
// memory estimates) is a few hundred bytes, so a million devices cost a few hundred MB at most.
inline constexpr int64_t kMaxDevices = int64_t{1} << 20;

// Ops of one schedule, read or generated. A .pir op line is about 100 bytes and an op in
// memory a few hundred: 16.7 M ops is a multi-GB file and a few GB of IR, beyond which a
// schedule must be folded (DESIGN.md section 7), not spelt out.
inline constexpr int64_t kMaxOps = int64_t{1} << 24;

// Micro-batches per data-parallel replica. Real pipelines run tens to a few thousand (one per
// sequence of a 2048-sequence batch); the generators allocate per micro-batch and per slice.
inline constexpr int64_t kMaxMicrobatches = int64_t{1} << 16;

// Global batch in sequences (and rows of one micro-batch). The largest published batches are a
// few thousand sequences (GPT-3: 1536 x 2048 tokens; Llama 3: 2048 x 8192); 65536 leaves 32x
// headroom while keeping batch x sequence x hidden products inside 64 bits.
inline constexpr int64_t kMaxBatch = int64_t{1} << 16;

// Layers of a model. Production models have at most a few hundred layers; the deepest
// published transformer (DeepNet) has 1000.
inline constexpr int64_t kMaxLayers = int64_t{1} << 14;

// Tokens of one sequence (context length). Today's longest training contexts are about 1 M
// tokens; token ranges are stored as int, and the slicing planner allocates per token.
inline constexpr int64_t kMaxSequence = int64_t{1} << 22;

// Hidden size (and heads, which divide it) of a model card. The largest models have hidden sizes
// near 2^15; with kMaxLayers, 16 bytes x 12 h^2 x layers (the weights and optimizer state)
// stays below 2^56, inside int64 with room for sums over devices.
inline constexpr int64_t kMaxHidden = int64_t{1} << 17;

// FFN size of a model card: usually 4 h (8/3 h with SwiGLU), so 8 x kMaxHidden.
inline constexpr int64_t kMaxFfn = int64_t{1} << 20;

// Vocabulary of a model card: today's largest are near 2^18.
inline constexpr int64_t kMaxVocab = int64_t{1} << 24;

// Bytes of one message or buffer (SEND/RECV, collective, device memory): 1 PiB, far above any
// device's memory, so that sums over ops of a schedule stay inside int64.
inline constexpr int64_t kMaxBytes = int64_t{1} << 50;

// GPUs and NICs of one instance description; today's largest nodes hold 8-72 GPUs.
inline constexpr int64_t kMaxGpusPerNode = 1024;

// A duration in nanoseconds: 10^15 ns is 11.6 days, far above any op or iteration, and keeps
// sums of many durations inside int64 (9.2 x 10^18).
inline constexpr int64_t kMaxDurationNs = int64_t{1000000000000000};

}  // namespace terasim::limits

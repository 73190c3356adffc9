// NcclModel: the time of one collective as NCCL plans it: ring and tree algorithms, the LL,
// LL128 and Simple protocols, and NCCL's own choice of the fastest pair; plus a hierarchical
// decomposition across nodes (not NCCL's: reduce-scatter inside the node, the collective
// across nodes on every GPU's shard at once, all-gather inside the node) for comparison.
//
// The structure follows NCCL's tuning model (src/graph/tuning.cc; the constants are data in
// models/data/nccl/nccl.json). For p ranks on N nodes of g = p / N GPUs, C channels of B_ch bytes/s
// inside a node and a node's network bandwidth B_net (every NIC of the instance, shared by
// its GPUs and channels):
//   bus bandwidth   ring    C x min(B_ch, B_net / C) (N > 1), C x B_ch (N = 1)
//                   LL: min(ll_max, 0.5 x busbw)   LL128: min(0.92 x busbw, C x ll128_cap)
//                   tree    min(0.92 x busbw, C x tree_cap); LL / 3.8; LL128 x 7/9 or 120/128
//   algorithm bw    ring: busbw x p / steps (steps: 2 (p - 1) all-reduce, p - 1 all-gather and
//                   reduce-scatter, p broadcast); tree all-reduce: busbw / 2
//   latency         ring: base + (steps - s_net) x max(lat_intra, net_overhead) + s_net x lat_net
//                   with s_net = 2 (N - 1) (all-reduce) or N - 1 network steps and lat_net the
//                   protocol's network step plus the network's own latency (twice for Simple,
//                   which flushes); x 1.9 (Volta) or 1.4 for a multi-node Simple ring
//                   all-reduce; broadcast pays one step. Tree all-reduce:
//                   base + 2 ((g - 1) lat_intra + log2(N) lat_net).
//   time            latency + bytes / algbw (tree all-reduce: algbw x a size correction)
// Tree is all-reduce only; LL128 is on when every path is NVLink and, across nodes, the NIC
// is reached by GPUDirect RDMA. Bytes n are counted as nccl-tests counts them (the whole vector
// for all-reduce and broadcast, the gathered output for all-gather, the input for
// reduce-scatter).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/collective_cost.h"
#include "models/units.h"

namespace terasim {

enum class NcclAlgorithm { kRing, kTree, kHierarchical };
enum class NcclProtocol { kLL, kLL128, kSimple };

// "ring", "tree", "hierarchical"; "LL", "LL128", "Simple".
const char* NcclAlgorithmName(NcclAlgorithm algorithm);
const char* NcclProtocolName(NcclProtocol protocol);

// NCCL's tuning constants (models/data/nccl/nccl.json "tuning"). Arrays are indexed by protocol
// (LL, LL128, Simple) or by node count (1, 2, more).
struct NcclConstants {
  struct PerProtocol {
    double v[3] = {0, 0, 0};
  };
  PerProtocol base_latency_us[2];        // [tree, ring]
  PerProtocol hw_latency_us[3][2];       // [nvlink, pci, net][tree, ring]
  double ll_max_bw[3] = {0, 0, 0};       // GB/s by node count; for this system's GPU or CPU
  double ring_ll128_cap[3] = {0, 0, 0};  // GB/s per channel by node count
  double tree_ll128_cap[3] = {0, 0, 0};
  double tree_cap[3] = {0, 0, 0};
  double ring_ll_factor = 0.5;
  double ring_ll128_factor = 0.92;
  double tree_allreduce_factor = 0.92;
  double tree_ll_factor = 1 / 3.8;
  double tree_ll128_factor_one_node = 7.0 / 9.0;
  double tree_ll128_factor_nodes = 120.0 / 128.0;
  double ring_simple_plateau_factor = 1.9;
  double net_overhead_us = 1.0;
  double net_overhead_simple_multiplier = 3.0;
  std::vector<double> tree_correction[3];  // by protocol, index log2(bytes / 64)
};

// One communicator's hardware as NCCL sees it.
struct NcclSystem {
  int nodes = 1;
  int gpus_per_node = 1;
  bool intra_nvlink = true;            // NVLink inside the node (else PCI)
  int channels = 1;                    // NCCL channels (rings / trees) inside a node
  double channel_bw_bytes_per_s = 0;   // bandwidth of one channel inside a node
  double node_net_bw_bytes_per_s = 0;  // every NIC of a node, achieved rate, one direction
  double net_latency_us = 0;           // the network's own one-way latency
  bool gpudirect = false;              // NIC reached without staging through the host
  NcclConstants constants;             // with the per-generation rows already picked
  int Ranks() const { return nodes * gpus_per_node; }
};

// Loads models/data/nccl/nccl.json (or `path`) and builds the NcclSystem of `instance` for a
// communicator of `nodes` x `gpus_per_node`; the network numbers come from the caller (the
// instance's topology). Throws InputError naming the file and field, or the instance when
// nccl.json does not describe it.
NcclSystem LoadNcclSystem(const std::string& path, const std::string& instance, int nodes,
                          int gpus_per_node, double node_net_bw_bytes_per_s, double net_latency_us,
                          bool gpudirect);

// The same in two steps: read and parse the file once (an immutable, shareable table; throws
// InputError on an unreadable file), then build systems from it (throws as LoadNcclSystem).
struct NcclTable;
std::shared_ptr<const NcclTable> LoadNcclTable(const std::string& path);
// Whether the table describes `instance`.
bool NcclTableHas(const NcclTable& table, const std::string& instance);
NcclSystem NcclSystemFrom(const NcclTable& table, const std::string& instance, int nodes,
                          int gpus_per_node, double node_net_bw_bytes_per_s, double net_latency_us,
                          bool gpudirect);

struct NcclEstimate {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  double latency_s = 0;
  double algbw_bytes_per_s = 0;  // the model's algorithm bandwidth (before size corrections)
  double time_s = 0;
  bool valid = false;  // false when NCCL would not run this pair (e.g. tree all-gather)
};

// The time of one (algorithm, protocol) pair; valid = false where NCCL offers no such pair.
// Hierarchical is costed phase by phase with NCCL's best choice in each (protocol ignored).
NcclEstimate NcclPairTime(const NcclSystem& system, Collective collective, Bytes n,
                          NcclAlgorithm algorithm, NcclProtocol protocol);

// NCCL's choice: the fastest valid ring or tree pair (all protocols). p = 1 costs 0.
NcclEstimate NcclBestTime(const NcclSystem& system, Collective collective, Bytes n);

// The fastest protocol of one algorithm (kHierarchical: its phases' best).
NcclEstimate NcclAlgorithmTime(const NcclSystem& system, Collective collective, Bytes n,
                               NcclAlgorithm algorithm);

// The parts of the model that a step-by-step simulation takes over (sim/collective_plan.h),
// for algorithm kRing or kTree:
// Where a step runs: over NVLink, PCI (inside a node) or the network.
enum class NcclHop { kNvlink, kPci, kNet };
// The latency NCCL charges once per collective (base_latency_us).
double NcclBaseLatencyUs(const NcclSystem& system, NcclAlgorithm algorithm, NcclProtocol protocol);
// The latency NCCL charges per step over `hop` (hw_latency_us; across nodes with one GPU per
// node NCCL charges the tree's network step for the ring too). Without the network's own
// latency, which the simulator's routes carry.
double NcclStepLatencyUs(const NcclSystem& system, NcclAlgorithm algorithm, NcclProtocol protocol,
                         NcclHop hop);
// The fraction of the links' bandwidth that the pair reaches for n bytes, before the per-channel
// caps: ring LL 0.5, LL128 0.92, Simple 1; tree 0.92 x (LL 1 / 3.8, LL128 7/9 on one node or
// 120/128, Simple 1) x the tree's size correction.
double NcclBandwidthFactor(const NcclSystem& system, NcclAlgorithm algorithm, NcclProtocol protocol,
                           Bytes n);
// The links' bandwidth NCCL plans with: channels x per-channel bandwidth (across nodes each
// channel's share of the node's network, if smaller).
double NcclLinkBandwidth(const NcclSystem& system);
// NCCL's bus bandwidth of the pair: the links' times the protocol's factor, capped per channel
// by protocol and algorithm (ring LL128, tree, tree LL128: channels x the generation's
// per-channel maximum) and, for LL, in all (the GPU's or, across nodes, the host's limit):
// e.g. ring LL128 busbw = min(0.92 x link, channels x ring_ll128_cap).
double NcclBusBandwidth(const NcclSystem& system, NcclAlgorithm algorithm, NcclProtocol protocol);
// The fraction of the protocol's bandwidth that the caps leave: NcclBusBandwidth /
// (NcclLinkBandwidth x the protocol's factor), in (0, 1]; 1 where no cap binds.
double NcclCapFactor(const NcclSystem& system, NcclAlgorithm algorithm, NcclProtocol protocol);

}  // namespace terasim

// Alpha-beta cost of point-to-point transfers and collectives (FACTS.md "Collective cost
// references"): the analytic fast path of the network model and its cross-check.
//
// Every function takes n = bytes, p = ranks, alpha_ns = the latency of one step (one hop of
// a ring, tree or chain) and bw_bytes_per_s = the bandwidth of the slowest link each rank
// sends over, and returns the time rounded to whole nanoseconds. n is the buffer as
// nccl-tests counts it: the whole vector for all-reduce and broadcast, the gathered output for
// all-gather, the input for reduce-scatter. A collective over p = 1 rank costs 0.
//
// Thread safety: pure functions.
#pragma once

#include "models/units.h"

namespace terasim {

enum class Collective {
  kSendRecv,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
};

// "sendrecv", "allreduce", "allgather", "reducescatter", "broadcast".
const char* CollectiveName(Collective collective);

// alpha + n / B.
TimeNs SendRecvTimeNs(Bytes n, double alpha_ns, double bw_bytes_per_s);

// Ring all-reduce (reduce-scatter then all-gather around a ring):
// 2 (p - 1) alpha + 2 (p - 1) / p * n / B.
TimeNs RingAllReduceTimeNs(Bytes n, int p, double alpha_ns, double bw_bytes_per_s);

// All-reduce as a pipelined binary tree (reduce up, broadcast down, the message cut into
// small chunks): 2 ceil(log2 p) alpha + 2 n / B. Cheaper than the ring when alpha dominates
// (small n, many ranks).
TimeNs TreeAllReduceTimeNs(Bytes n, int p, double alpha_ns, double bw_bytes_per_s);

// Ring all-gather and reduce-scatter: (p - 1) alpha + (p - 1) / p * n / B.
TimeNs AllGatherTimeNs(Bytes n, int p, double alpha_ns, double bw_bytes_per_s);
TimeNs ReduceScatterTimeNs(Bytes n, int p, double alpha_ns, double bw_bytes_per_s);

// Broadcast along a pipelined chain (NCCL's ring broadcast) with the message cut into chunks
// fine enough that each hop's latency is paid once and the bytes stream once:
// (p - 1) alpha + n / B.
TimeNs BroadcastTimeNs(Bytes n, int p, double alpha_ns, double bw_bytes_per_s);

// The ring algorithm of `collective` (SendRecvTimeNs for kSendRecv, p ignored).
TimeNs CollectiveTimeNs(Collective collective, Bytes n, int p, double alpha_ns,
                        double bw_bytes_per_s);

// Hierarchical all-reduce over `nodes` nodes of `ranks_per_node` ranks each: reduce-scatter
// inside each node (ring over g = ranks_per_node), ring all-reduce of the n / g bytes each
// rank holds across the nodes, all-gather inside the node:
//     ReduceScatter(n, g, intra) + RingAllReduce(n / g, nodes, inter) + AllGather(n, g, intra).
TimeNs HierarchicalAllReduceTimeNs(Bytes n, int ranks_per_node, int nodes, double intra_alpha_ns,
                                   double intra_bw_bytes_per_s, double inter_alpha_ns,
                                   double inter_bw_bytes_per_s);

// NCCL's bus-bandwidth factor (busbw = algbw x factor, algbw = n / time), which makes figures
// comparable across rank counts: 2 (p - 1) / p for all-reduce, (p - 1) / p for all-gather and
// reduce-scatter, 1 for broadcast and send/recv. Precondition: p >= 1.
double BusBandwidthFactor(Collective collective, int p);

// algbw = n / time, bytes per second. Precondition: time_ns > 0.
double AlgorithmBandwidth(Bytes n, TimeNs time_ns);

}  // namespace terasim

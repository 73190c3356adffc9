#include "models/collective_cost.h"

#include <cmath>

#include "models/errors.h"

namespace terasim {
namespace {

TimeNs ToNs(double ns) { return std::llround(ns); }

// Seconds -> ns of moving n bytes at bw.
double TransferNs(double n, double bw_bytes_per_s) { return n / bw_bytes_per_s * 1e9; }

}  // namespace

const char* CollectiveName(Collective collective) {
  switch (collective) {
    case Collective::kSendRecv:
      return "sendrecv";
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kBroadcast:
      return "broadcast";
  }
  return "?";
}

TimeNs SendRecvTimeNs(Bytes n, double alpha_ns, double bw_bytes_per_s) {
  return ToNs(alpha_ns + TransferNs(static_cast<double>(n), bw_bytes_per_s));
}

TimeNs RingAllReduceTimeNs(Bytes n, int p, double alpha_ns, double bw_bytes_per_s) {
  TERASIM_CHECK(p >= 1, "ranks {}", p);
  if (p == 1) return 0;
  const double steps = 2.0 * (p - 1);
  return ToNs(steps * alpha_ns + TransferNs(steps / p * static_cast<double>(n), bw_bytes_per_s));
}

TimeNs TreeAllReduceTimeNs(Bytes n, int p, double alpha_ns, double bw_bytes_per_s) {
  TERASIM_CHECK(p >= 1, "ranks {}", p);
  if (p == 1) return 0;
  const double depth = std::ceil(std::log2(static_cast<double>(p)));
  return ToNs(2 * depth * alpha_ns + TransferNs(2.0 * static_cast<double>(n), bw_bytes_per_s));
}

TimeNs AllGatherTimeNs(Bytes n, int p, double alpha_ns, double bw_bytes_per_s) {
  TERASIM_CHECK(p >= 1, "ranks {}", p);
  if (p == 1) return 0;
  const double steps = p - 1.0;
  return ToNs(steps * alpha_ns + TransferNs(steps / p * static_cast<double>(n), bw_bytes_per_s));
}

TimeNs ReduceScatterTimeNs(Bytes n, int p, double alpha_ns, double bw_bytes_per_s) {
  return AllGatherTimeNs(n, p, alpha_ns, bw_bytes_per_s);
}

TimeNs BroadcastTimeNs(Bytes n, int p, double alpha_ns, double bw_bytes_per_s) {
  TERASIM_CHECK(p >= 1, "ranks {}", p);
  if (p == 1) return 0;
  return ToNs((p - 1.0) * alpha_ns + TransferNs(static_cast<double>(n), bw_bytes_per_s));
}

TimeNs CollectiveTimeNs(Collective collective, Bytes n, int p, double alpha_ns,
                        double bw_bytes_per_s) {
  switch (collective) {
    case Collective::kSendRecv:
      return SendRecvTimeNs(n, alpha_ns, bw_bytes_per_s);
    case Collective::kAllReduce:
      return RingAllReduceTimeNs(n, p, alpha_ns, bw_bytes_per_s);
    case Collective::kAllGather:
      return AllGatherTimeNs(n, p, alpha_ns, bw_bytes_per_s);
    case Collective::kReduceScatter:
      return ReduceScatterTimeNs(n, p, alpha_ns, bw_bytes_per_s);
    case Collective::kBroadcast:
      return BroadcastTimeNs(n, p, alpha_ns, bw_bytes_per_s);
  }
  return 0;
}

TimeNs HierarchicalAllReduceTimeNs(Bytes n, int ranks_per_node, int nodes, double intra_alpha_ns,
                                   double intra_bw_bytes_per_s, double inter_alpha_ns,
                                   double inter_bw_bytes_per_s) {
  TERASIM_CHECK(ranks_per_node >= 1 && nodes >= 1, "ranks_per_node {} nodes {}", ranks_per_node,
                nodes);
  const Bytes shard = (n + ranks_per_node - 1) / ranks_per_node;
  return ReduceScatterTimeNs(n, ranks_per_node, intra_alpha_ns, intra_bw_bytes_per_s) +
         RingAllReduceTimeNs(shard, nodes, inter_alpha_ns, inter_bw_bytes_per_s) +
         AllGatherTimeNs(n, ranks_per_node, intra_alpha_ns, intra_bw_bytes_per_s);
}

double BusBandwidthFactor(Collective collective, int p) {
  TERASIM_CHECK(p >= 1, "ranks {}", p);
  switch (collective) {
    case Collective::kAllReduce:
      return 2.0 * (p - 1) / p;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return static_cast<double>(p - 1) / p;
    case Collective::kBroadcast:
    case Collective::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

double AlgorithmBandwidth(Bytes n, TimeNs time_ns) {
  TERASIM_CHECK(time_ns > 0, "time {}", time_ns);
  return static_cast<double>(n) / NsToSeconds(time_ns);
}

}  // namespace terasim

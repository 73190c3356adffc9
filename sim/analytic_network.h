// Alpha-beta communication times, without contention from other transfers: the fast path of
// `--network analytic` and the cross-check of the flow network.
//
// A transfer costs its route's latency plus bytes over the route's narrowest link. A
// collective plan (sim/collective_plan.h) costs, phase after phase, the slowest of its runs:
// steps x (alpha + bytes_per_flow / B), where alpha is the largest route latency of the run's
// hops and B its narrowest link bandwidth divided by how many of the phase's own transfers
// cross that link in one step (the contention a collective causes itself, e.g. the 8 GPUs of a
// node sharing one NIC in a hierarchical all-reduce). For a flat ring this is the textbook
// 2(p-1) alpha + 2(p-1)/p n/B.
#pragma once

#include "models/units.h"
#include "sim/collective_plan.h"
#include "sim/route_cache.h"

namespace terasim {

// Time of one transfer of `bytes` from src_gpu to dst_gpu (0 when they are equal).
TimeNs AnalyticTransferNs(int src_gpu, int dst_gpu, Bytes bytes, RouteCache& routes);

// Time of a whole collective plan.
TimeNs AnalyticPlanNs(const CollectivePlan& plan, RouteCache& routes);

}  // namespace terasim

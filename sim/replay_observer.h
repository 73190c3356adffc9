// ReplayObserver: what the replay reports as it runs, for tracing and statistics. Observers
// watch; they never change the simulation. Callbacks come in simulated-time order.
#pragma once

#include <utility>
#include <vector>

#include "models/units.h"

namespace terasim {

class ReplayObserver {
 public:
  virtual ~ReplayObserver() = default;
  // Op `op` (index into Schedule::ops) heads its stream with every dependency done.
  virtual void OnOpStart(int op, TimeNs now_ns) {}
  // The data of communication op `op` begins to move (its peer or every group member has
  // arrived): once per communication op, between its OnOpStart and its OnOpEnd.
  virtual void OnCommStart(int op, TimeNs now_ns) {}
  // Op `op` finished. For communication, comm_start_ns is when its data began to move (after
  // the peer or every group member arrived); for compute it equals start_ns.
  virtual void OnOpEnd(int op, TimeNs start_ns, TimeNs comm_start_ns, TimeNs end_ns) {}
  // `bytes` were sent over network link `link` (reported when the transfer is issued).
  virtual void OnLinkBytes(int link, double bytes) {}
  // (link, bytes) pairs issued together (a collective's): OnLinkBytes for each, in order. One
  // call per collective instead of one per link.
  virtual void OnLinkBytesList(const std::vector<std::pair<int, double>>& list) {
    for (const auto& [link, bytes] : list) OnLinkBytes(link, bytes);
  }
};

}  // namespace terasim

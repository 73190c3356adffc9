// ExclusiveLinks: which collective groups of a replay own the links their collectives use, so
// that each phase of their collectives can run as one timed event (sim/replay.h) instead of as
// flows in the shared flow network.
//
// A group is exclusive when
//   (a) no channel (network link, as the flow network sees it: folded routes with a fold) that
//       a flow of one of its collective plans crosses is crossed by a flow of another group's
//       plans or by a point-to-point transfer's route, anywhere in the replay, and
//   (b) its instances never overlap in time: some member device that runs (a representative
//       with a fold) issues an op of every instance of the group, all on one stream. A stream
//       runs its ops in order and an instance begins only once every member has reached it,
//       so instance k + 1 begins after that member's op of instance k has completed, which is
//       when instance k has finished.
// Compute channels (a GPU's processor sharing) are separate channels and never on a route.
//
// Why a phase of an exclusive group then runs as if alone (the exactness argument). The flow
// network re-solves each connected component of flows and channels on its own; the phase's
// flows cross only the group's channels, on which nothing else ever runs while it does, so
// their component holds them alone, and their rates at each instant are those they would have
// alone (the solve reads capacities, crossings and route identities, never the time). Their
// remaining amounts advance by rate x (now - last update), a difference of integer ns, and a
// finish is scheduled at now + ceil(remaining / rate): every quantity depends on time only
// through differences, so the phase started at t ends at t + (its end started alone at 0), bit
// for bit, and keeps each link busy for the same spans. Within one instant the order of other
// components' events does not reach the phase's: every recomputation at an instant is
// scheduled at that instant, after every event that was scheduled for it beforehand (the
// phase's activations and finishes), and a re-solve with no time elapsed leaves remaining
// amounts unchanged. What does change is where the phase's end falls among other events due
// at the same ns (it is scheduled when the phase starts, not when its last flow's rate was
// last set), and the flow network's recomputations that the phase's flows no longer schedule:
// two ops completing at one ns then complete in another order, which can change which of two
// simultaneous predecessors an op records as its critical predecessor. sim/replay.h says how
// the replay keeps that order.
//
// Plain bookkeeping; no global state.
#pragma once

#include <string>
#include <vector>

namespace terasim {

class ExclusiveLinks {
 public:
  ExclusiveLinks(int num_groups, int num_channels);

  // A flow of one of `group`'s collectives crosses `channels` (repeats allowed).
  void ClaimGroup(int group, const std::vector<int>& channels);
  // A flow that is not a collective's (a point-to-point transfer) crosses `channels`.
  void ClaimShared(const std::vector<int>& channels);
  // `device`'s op of one instance of `group`, on `stream` (borrowed: it must outlive Finish).
  void AddMemberOp(int group, int device, const std::string& stream);
  // One instance of `group` that runs.
  void AddInstance(int group);

  // Per group: whether it is exclusive ((a) and (b) above). Call once, after every claim.
  std::vector<char> Finish() const;

 private:
  static constexpr int kNone = -1;
  static constexpr int kShared = -2;
  struct Member {
    int device;
    const std::string* stream;
    int ops;
    bool one_stream;
  };
  std::vector<int> owner_;  // per channel: kNone, a group, or kShared
  std::vector<std::vector<int>> group_channels_;
  std::vector<std::vector<Member>> members_;  // per group: its members that issue its ops
  std::vector<int> instances_;                // per group
};

}  // namespace terasim

// ExclusiveLinks: which collective groups of a replay own the links their collectives use, so
// that each phase of their collectives can run as one timed event (sim/replay.h) instead of as
// flows in the shared flow network.
//
// A group is exclusive when
//   (a) no channel (network link, as the flow network sees it: folded routes with a fold) that
//       a flow of one of its collective plans crosses is crossed by a flow of another group's
//       plans or by a point-to-point transfer's route, anywhere in the replay, and
//   (b) its instances never overlap in time: a member device that runs (a representative with
//       a fold; the first whose op is listed) issues an op of every instance of the group, all
//       on one stream. A stream
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
// amounts unchanged.
//
// What is not kept: the place of the phase's end among other events due at the same ns. The
// flow path ends a phase inside its last flow's finish event (placed when that flow's rate was
// last set); the closed form ends it in an event placed when the phase starts. Both finish the
// collective in an event of their own placed at that ns, after every event scheduled for that ns
// beforehand (finishing it at once moved it before a transfer ending at the same ns, and the
// op waiting for both then recorded the transfer as its critical predecessor: a TeraPipe case
// of tests/sim/closed_form_collectives_test.cpp). Two phases (or a phase and a transfer's
// zero-delay completion) ending at one ns may still end in another order. Times do not depend
// on that order (processor sharing and max-min rates do not depend on the order flows joined;
// ties go to the lowest channel id) but for two effects: an op with two predecessors ending at
// that ns may record the other one as its critical predecessor, and a recomputation at that ns
// may fall between two changes instead of after both, and a flow whose rate then goes
// r -> r' -> r has its finish recomputed from its remaining amount (equal up to one ns of
// rounding). Every terasim_sim_bench row's digest (critical path, link busy time, device
// times) is unchanged, and tests/sim/closed_form_collectives_test.cpp checks on == off on
// generated schedules; CollectiveOptions::closed_form = false restores the flows.
//
// Plain bookkeeping; no global state.
#pragma once

#include <vector>

namespace terasim {

class ExclusiveLinks {
 public:
  ExclusiveLinks(int num_groups, int num_channels);

  // A flow of one of `group`'s collectives crosses `channels` (repeats allowed).
  void ClaimGroup(int group, const std::vector<int>& channels);
  // A flow that is not a collective's (a point-to-point transfer) crosses `channels`.
  void ClaimShared(const std::vector<int>& channels);
  // `device`'s op of one instance of `group`, on `stream` (its number on the device: equal
  // numbers for equal streams, ReplayGraph::stream). Inline: called once per collective op.
  void AddMemberOp(int group, int device, int stream) {
    // Only the first member seen is watched: (b) asks for one such member, and the generators
    // put every member's ops of a group on one stream (another member's would pass alike).
    Member& member = members_[group];
    if (member.ops == 0) member = Member{device, stream, 0, true};
    if (member.device != device) return;
    ++member.ops;
    if (member.stream != stream) member.one_stream = false;
  }
  // What AddMemberOp over every op of `group` in order would leave, from a caller that watched
  // them itself (ReplayGraph::group_member): the first member seen, on `stream`, issuing `ops`
  // of the group's ops, all on that stream or not (`one_stream`). Replaces what was added.
  void SetMember(int group, int device, int stream, int ops, bool one_stream) {
    members_[group] = Member{device, stream, ops, one_stream};
  }
  // One instance of `group` that runs.
  void AddInstance(int group) { ++instances_[group]; }

  // Per group: whether it is exclusive ((a) and (b) above). Call once, after every claim.
  std::vector<char> Finish() const;

 private:
  static constexpr int kNone = -1;
  static constexpr int kShared = -2;
  struct Member {
    int device = -1;
    int stream = -1;
    int ops = 0;
    bool one_stream = false;
  };
  std::vector<int> owner_;  // per channel: kNone, a group, or kShared
  std::vector<std::vector<int>> group_channels_;
  std::vector<Member> members_;  // per group: the first member seen issuing its ops
  std::vector<int> instances_;   // per group
};

}  // namespace terasim

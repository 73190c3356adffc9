// SymmetryFold: the symmetry of a replay that lets it simulate one device of each class of
// identical devices (data-parallel replicas, tensor-parallel ranks of one group) and count the
// others' traffic by multiplicity on the links they share.
//
// A candidate symmetry is a permutation sigma of the schedule's devices (a shift by one
// data-parallel replica; a rotation of the tp ranks inside every tp group by 1, or else by 2,
// 4, ..., where the rotation by 1 loads some links unevenly; ranks are dp * (P * T) +
// pipeline_rank * T + tp_rank). Where no rotation by 1 passes, Find also tries the other
// permutations tau of the tp ranks (applied in every tp group) that keep the routes between
// the first tp group's GPUs and to the next group's link by link (sim/fold_permutations.h) and
// takes the largest group of passing ones that moves every rank (when larger than the
// rotation's). On p3.16xlarge the NIC hangs off socket 0, so GPUs 4-7 reach it across the
// inter-socket link: no permutation swapping the sockets keeps the routes, hence no rotation;
// within the sockets the NVLink cube-mesh allows only (0 1)(2 3)(4 5)(6 7), which maps each
// NVLink ring onto itself reversed (a run of the plan: the rings also run reversed) and each
// PCIe switch onto itself: order 2, tp ranks 0, 2, 4 and 6 simulated. It is accepted only when
// it is an automorphism of the whole replay:
//   - ops: the p-th op of device d and the p-th op of sigma(d) have the same kind, stream, stage,
//     work (layers, part, rows, tokens, recipes, tp degree), bytes, measured duration and device
//     speed; their successors map onto each other; SEND/RECV partners map to partners, peers to
//     sigma(peer); collectives on group H map to collectives on one group sigma(H) whose ranks
//     are sigma of H's;
//   - collectives: the plan of sigma(H) is the plan of H with every GPU mapped (rings equal up to
//     rotation, chains equal), for every (group, kind, bytes, root) the schedule uses;
//   - network: the GPU map pi(placement[d]) = placement[sigma(d)] is a bijection, and the
//     route of every transfer's image crosses, position by position, links of the same bandwidth
//     and latency as the transfer's route; with the links loaded evenly (below). So a placement
//     or a topology that breaks the symmetry, a slow device or jitter, refuses the fold.
// The accepted candidates generate a group G (every element moves every device). Each device
// orbit is simulated by its lowest device (the representative); every group H holding a
// representative must hold its members' representatives, and every g(H) is H or disjoint
// from it.
//
// Multiplicity: a simulated flow f stands for its |G| images, which by symmetry all move at
// the same rate. Link classes: the links that the same position of a transfer's route and of
// its images' routes join (the orbits of the links where G permutes them; where GPUs share a
// link, such as the NIC of a GPU pair or of a whole node, G need not permute the links: a
// rotation of a pair's GPUs maps the NIC onto itself for one GPU and onto the next pair's for
// the other). The fold requires even loads: the |G| images of every transfer that crosses class
// c n times cross each link of c exactly n x |G| / |c| times (|c| dividing |G|), so every link
// of a class carries the same flows at any time. Each link of f in c then counts |G| / |c| on
// the class's representative link: the folded route lists the representative that many times
// (FlowNetwork counts a channel listed k times as a crossing of weight k: k shares, k x the
// flow's rate; sim/max_min_fair.h), so the max-min fair rates are those of the full replay: a
// flow's bottleneck class is saturated with the same crossings on every one of its links. A
// collective step simulates one flow per orbit of its transfers and one run per orbit of the
// phase's runs.
//
// Results: the tests find every op's start and end, the iteration time, per-device fractions
// and link busy times equal to the full replay's to the ns; link bytes agree to 1e-9 (summed
// as multiplicity x bytes). A channel's capacity is shared out by subtractions in another
// order than the full replay's, so a rate may differ in its last bit on other inputs. The
// critical path runs through the representatives' ops: where the full replay's path passes
// from a collective's last arrival on another device to the member it released, the folded
// one has the member alone (one op shorter, the same times).
//
// Immutable after Find or Declared. Not thread-safe while being built.
// The checks of collective plans and the folded plans are in sim/folded_plan.h, the link
// classes in sim/link_classes.h.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "models/units.h"
#include "schedule/schedule_ir.h"
#include "sim/collective_plan.h"
#include "sim/folded_plan.h"
#include "sim/network_topology.h"
#include "sim/replay_graph.h"
#include "sim/route_cache.h"

namespace terasim {

class PlanCache;  // sim/plan_cache.h

// The replay's view of the schedule that a fold is checked against (all borrowed).
struct FoldGraph {
  const Schedule& schedule;
  const std::vector<int>& placement;   // GPU of each device
  const std::vector<int>& work_tp;     // per op: the tp degree of its compute work
  const std::vector<int>& partner;     // per op: SEND <-> RECV, or -1
  const std::vector<int>& group;       // per op: the group index of a collective, or -1
  const std::vector<int>& succ_begin;  // CSR successors (every edge joins ops of one device)
  const std::vector<int>& succ;
  const std::vector<TimeNs>& compute_ns;    // ReplayOptions::compute_ns
  const std::vector<double>& device_speed;  // ReplayOptions::device_speed
  // The collectives' plan keys and the SENDs' pairs (ReplayGraph::comm_keys) where the caller
  // kept them: Declared then reads no op, nor `partner` and `group` (which may be empty); else
  // it collects them from the ops and `group`. Find reads the ops either way.
  const CommKeys* comm_keys = nullptr;
  // The simulation's shared collective plans (sim/plan_cache.h), or nullptr: plan here.
  PlanCache* plans = nullptr;
};

// How SymmetryFold::Declared's refusals begin (and the InputError a replay of such a schedule
// throws contains).
inline constexpr const char* kDeclaredRefusal = "the declared symmetry does not hold: ";

class SymmetryFold {
 public:
  // The identity (nothing folded).
  SymmetryFold() = default;

  // The largest fold the candidates above allow; the identity (with WhyNot) when none passes.
  static SymmetryFold Find(const FoldGraph& graph, const NetworkTopology& topology,
                           RouteCache& routes, const CollectiveOptions& collectives);

  // The symmetry the schedule declares (Schedule::symmetry, a representatives-only schedule
  // from the generator): the same checks of speeds, groups, placement, collective plans and
  // links as Find, over the plan keys and transfers of the whole iteration (the present ops'
  // images under the declared renamings), but no op is compared: the generator guarantees
  // them. The replica shift and a tp rotation by a step dividing the tp ranks present must
  // both pass (1, else 2, ...). Refuses (the identity, WhyNot starting "the declared symmetry
  // does not hold: ") a slow device, measured durations, an asymmetric placement or network:
  // the caller must then generate the whole schedule. Every op stands for itself (RepOp).
  // A schedule declaring its tp ranks as a set (DeclaredSymmetry::tp_set) is folded by Find's
  // choice instead (DeclaredLargest) and refused when a representative is not present.
  // With the comm keys and a PlanCache that keeps declared folds, a call on inputs equal to an
  // earlier one's returns that fold (DeclaredFoldMemo below).
  static SymmetryFold Declared(const FoldGraph& graph, const NetworkTopology& topology,
                               RouteCache& routes, const CollectiveOptions& collectives);
  // The largest fold the declared symmetry allows whatever devices the schedule holds: the
  // replica shift and the rotations, or the other tp-rank permutations where their group is
  // larger (Find's choice, ops not compared). Its representatives are those a schedule must
  // hold for Declared to fold it the same way (RepresentativeTpSet, sim/simulator.h).
  static SymmetryFold DeclaredLargest(const FoldGraph& graph, const NetworkTopology& topology,
                                      RouteCache& routes, const CollectiveOptions& collectives);

  // |G|: how many devices each simulated device stands for (1: nothing folded).
  int Order() const { return order_; }
  bool Folded() const { return order_ > 1; }
  // Why each refused candidate was refused ("" when none was tried or all passed).
  const std::string& WhyNot() const { return why_not_; }

  int RepDevice(int device) const { return Folded() ? rep_device_[device] : device; }
  bool IsRep(int device) const { return RepDevice(device) == device; }
  // The representative's op that `op` is the image of (op itself on a representative).
  int RepOp(int op) const { return rep_op_.empty() ? op : rep_op_[op]; }
  int LinkRep(int link) const { return Folded() ? link_rep_[link] : link; }
  // |G| / |class of link|: the images of one flow crossing `link` that cross its representative.
  int LinkMultiplicity(int link) const { return Folded() ? link_mult_[link] : 1; }
  // The folded route of a real route (representatives repeated by multiplicity).
  void FoldRoute(const std::vector<int>& links, std::vector<int>* out) const;
  // Devices of group `group` that are representatives.
  int RepMembers(int group) const { return rep_members_[group]; }
  // The folded plan of a collective (group, kind, bytes, root GPU); nullptr when not folded.
  const FoldedPlan* Plan(int group, OpKind kind, Bytes bytes, int root_gpu) const;

 private:
  int order_ = 1;
  std::string why_not_;
  std::vector<int> rep_device_;
  std::vector<int> rep_op_;
  std::vector<int> link_rep_;
  std::vector<int> link_mult_;
  std::vector<int> rep_members_;
  std::map<std::tuple<int, int, Bytes, int>, FoldedPlan> plans_;

  friend class FoldBuilder;
};

// A SymmetryFold::Declared (or DeclaredLargest) result with everything it was computed from:
// the schedule's devices, declared symmetry and groups, the placement, measured durations and
// speeds, the comm keys (FoldGraph::comm_keys) and the topology. Declared reads nothing else
// when it has the comm keys and a PlanCache (no op: sim/symmetry_fold.h), and it is a pure
// function of these, so a later call on equal inputs gets this fold, bit for bit, without
// checking again. SimulateGenerated's probe (fewer micro-batches: the same groups, collective
// keys and transfers, hence mostly equal inputs) leaves its folds in the simulation's PlanCache
// (PlanCache::KeepDeclaredFolds) for the replay's Declared; where an input differs, the replay
// checks its own schedule.
struct DeclaredFoldMemo {
  const NetworkTopology* topology = nullptr;
  bool largest = false;
  int devices = 0;
  DeclaredSymmetry symmetry;
  std::vector<Group> groups;
  std::vector<int> placement;
  std::vector<TimeNs> compute_ns;
  std::vector<double> device_speed;
  CommKeys comm_keys;
  SymmetryFold fold;
};

}  // namespace terasim

// PlanCache: the CollectivePlans of one simulation, each planned once and shared by every step
// that needs them: SymmetryFold's checks (FoldGraph::plans), the replay's collectives
// (Replay::PlanFor) and its closed-form analysis, and SimulateGenerated's probe of the declared
// symmetry, whose plans its replay then reuses (ReplayOptions::plans). It also holds the
// simulation's RouteCache (Routes()), so that the probe's routes serve its replay too: a route
// is a pure function of the topology, the same object for every user of the cache (Serves).
//
// A plan is a pure function of (kind, GPUs in group order, root GPU, bytes) for one topology
// and the planning fields of CollectiveOptions (PlanCollective), so a shared plan is the plan
// the step would have computed, bit for bit. The NCCL communicator of a GPU set is computed
// once, when a plan first needs it, and NCCL's system of each (nodes, GPUs per node) shape once
// (NcclShapeSystem: the costly part of NcclCommunicator, the same for every group of that
// shape). Where the topology's nodes are node 0 shifted (NetworkTopology::LinksPerNode, and
// NetworkLinksPerNode for routes across nodes), the plan of a group whose lowest node is n > 0
// is the plan of its image n nodes down with its GPUs and links shifted up: PlanCollective's
// plan, as it reads nothing of a group but its nodes' rings, routes and links (checked as fast
// as node 0's), their order and the instance. One plan per class of groups (the tp groups of
// every stage and replica, the dp groups of every stage), not per group.
//
// Where marked (KeepDeclaredFolds: SimulateGenerated), it also keeps SymmetryFold::Declared's
// folds with their inputs, so that the replay's Declared of inputs equal to its probe's returns
// the probe's fold instead of checking again (DeclaredFoldMemo, sim/symmetry_fold.h).
//
// Borrows the topology (it must outlive the cache). Not thread-safe: one cache per simulation
// (or per thread); nothing in it is global.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "models/nccl_model.h"
#include "models/units.h"
#include "schedule/op.h"
#include "sim/collective_plan.h"
#include "sim/network_topology.h"
#include "sim/route_cache.h"

namespace terasim {

struct DeclaredFoldMemo;  // sim/symmetry_fold.h

class PlanCache {
 public:
  PlanCache(const NetworkTopology& topology, const CollectiveOptions& options);

  // Whether the cache plans as `topology` (the same object) and `options` would: the fields a
  // plan depends on are equal (algorithms, NCCL table, rings, broadcast chunk, channels per NIC).
  bool Serves(const NetworkTopology& topology, const CollectiveOptions& options) const;

  // PlanCollective(kind, gpus, root_gpu, bytes, topology, options). The reference stays valid
  // for the cache's lifetime.
  const CollectivePlan& Plan(OpKind kind, const std::vector<int>& gpus, int root_gpu, Bytes bytes);
  // NcclCommunicator(gpus, topology, options).
  const std::optional<NcclSystem>& Communicator(const std::vector<int>& gpus);
  // The routes of the topology, computed once for every user of the cache (the probe's checks
  // and the replay, Replay::routes_).
  RouteCache& Routes() { return routes_; }

  // Whether SymmetryFold::Declared keeps its results here for a later call on equal inputs
  // (DeclaredFoldMemo, sim/symmetry_fold.h): set where one simulation checks a probe first.
  void KeepDeclaredFolds() { keep_declared_folds_ = true; }
  bool KeepsDeclaredFolds() const { return keep_declared_folds_; }
  // The kept folds, and how many Declared calls one of them answered.
  std::vector<std::shared_ptr<const DeclaredFoldMemo>>& DeclaredFolds() { return declared_folds_; }
  int DeclaredFoldHits() const { return declared_fold_hits_; }
  void CountDeclaredFoldHit() { ++declared_fold_hits_; }

  // Distinct plans, GPU sets and NCCL shapes computed so far.
  int Plans() const { return static_cast<int>(plans_.size()); }
  int GpuSets() const { return static_cast<int>(systems_.size()); }
  int Shapes() const { return static_cast<int>(shapes_.size()); }
  // Of Plans(), those shifted from node 0's (no PlanCollective).
  int ShiftedPlans() const { return shifted_plans_; }

 private:
  // The id of a GPU set (registered on first use).
  int GpuSetOf(const std::vector<int>& gpus);
  // The set's communicator, computed on first use.
  const std::optional<NcclSystem>& SystemOf(int set, const std::vector<int>& gpus);
  // The lowest node n of `gpus` (and the root, if any) where their plan is that of their image
  // n nodes down shifted (n > 0, every node of the group like node 0; across nodes only where
  // the network links shift too); else 0.
  int ShiftedNode(const std::vector<int>& gpus, int root_gpu);
  // Whether node n's links have node 0's bandwidths and latencies (checked once per node).
  bool NodeLikeNodeZero(int node);

  const NetworkTopology& topology_;
  CollectiveOptions options_;
  RouteCache routes_;
  std::map<std::vector<int>, int> gpu_sets_;        // GPUs in group order -> id
  std::vector<std::optional<NcclSystem>> systems_;  // per GPU set: its communicator
  std::vector<char> system_known_;                  // per GPU set: systems_ computed
  std::vector<signed char> node_alike_;             // per node: NodeLikeNodeZero (-1: not yet)
  int shifted_plans_ = 0;
  std::map<std::pair<int, int>, NcclSystem> shapes_;
  std::map<std::tuple<int, int, Bytes, int>, int> plan_of_;  // (GPU set, kind, bytes, root)
  std::deque<CollectivePlan> plans_;  // a deque: references stay valid as it grows
  bool keep_declared_folds_ = false;
  std::vector<std::shared_ptr<const DeclaredFoldMemo>> declared_folds_;
  int declared_fold_hits_ = 0;
};

}  // namespace terasim

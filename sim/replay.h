// Replay: one iteration of a Schedule on a modelled cluster, as a discrete-event simulation.
//
// Devices: every (device, stream) of the IR is an in-order queue; an op starts when it heads
// its stream and its `after` deps are done. Compute ops of one GPU share its compute by
// processor sharing (two busy streams each run at half speed: sim/compute_sharing.h).
// Communication runs alongside
// compute: a SEND and its RECV (same tensor, matching peers) move their bytes as one network
// flow once both have started; a collective starts when every member of its group has reached
// it (the k-th collective on a group on each member is one instance) and runs as the flows of
// its CollectivePlan, or, with NetworkMode::kAnalytic, as one alpha-beta delay
// (sim/analytic_network.h: links shared by what starts together).
//
// Network flows share links max-min fairly (FlowNetwork). In flow mode a collective group
// whose links carry nothing else and whose instances never overlap (sim/exclusive_links.h)
// runs each phase of its collectives as one timed event: the phase's duration alone, from a
// private flow network, computed once per distinct (plan, phase) and kept in the replay
// (CollectiveOptions::closed_form turns this off). The result is the same, but for the order
// of completions at one ns (sim/exclusive_links.h). The replay records, per op, its
// start and end and the op whose completion last held it back (CriticalPredecessor), from
// which the critical path follows. A replay that stops before every op is done throws
// InputError listing every blocked device and the op it waits on.
//
// Borrows the schedule, topology and cost model (they must outlive it). Single use: Run once.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "models/compute_cost.h"
#include "models/units.h"
#include "schedule/schedule_ir.h"
#include "sim/collective_plan.h"
#include "sim/compute_sharing.h"
#include "sim/engine.h"
#include "sim/flow_network.h"
#include "sim/network_topology.h"
#include "sim/op_work.h"
#include "sim/plan_cache.h"
#include "sim/replay_graph.h"
#include "sim/replay_observer.h"
#include "sim/replay_stats.h"
#include "sim/route_cache.h"
#include "sim/symmetry_fold.h"

namespace terasim {

class AnalyticNetwork;  // sim/analytic_network.h

enum class NetworkMode {
  kFlow,      // flows over links, max-min fair sharing, collectives as aggregate ring runs
  kAnalytic,  // alpha-beta per transfer and per collective, links shared by what starts together
};

// "flow" / "analytic"; ParseNetworkMode throws InputError "--network: ..." on anything else.
const char* NetworkModeName(NetworkMode mode);
NetworkMode ParseNetworkMode(const std::string& text);

struct ReplayOptions {
  NetworkMode network = NetworkMode::kFlow;
  // GPU of each schedule device (rank); empty: device d runs on GPU d.
  std::vector<int> placement;
  CollectiveOptions collectives;
  // Per op (by position): a duration >= 0 replaces cost.Time for that compute op (measured
  // durations, sim/trace_durations.h); empty or -1: the cost model.
  std::vector<TimeNs> compute_ns;
  // Per schedule device: its compute op durations (cost model or compute_ns) are multiplied by
  // this (a slow or fast device; sim/jitter.h draws them). Empty: 1 for every device.
  std::vector<double> device_speed;
  // Simulate one device of each class of identical devices (sim/symmetry_fold.h) when the
  // replay is symmetric; observers then see only the representatives' ops and link bytes on
  // each link class's representative (Fold() maps the rest). A schedule that holds only the
  // representatives (Schedule::symmetry) is always folded by its declared symmetry; the
  // constructor throws InputError when that does not hold.
  bool fold = false;
  // The collective plans to share (sim/plan_cache.h), for a caller that planned some already
  // (SimulateGenerated's probe); it must serve the topology and `collectives` (an InternalError
  // otherwise). nullptr: the replay plans into a cache of its own. Either way the fold's checks,
  // the closed-form analysis and the collectives share one cache, and the replay's routes are
  // the cache's (PlanCache::Routes: those of the probe's checks, where it had one).
  std::shared_ptr<PlanCache> plans;
  // Compute as flows on per-GPU channels of the flow network instead of ComputeSharing (the
  // same results; a reference for tests).
  bool compute_as_flows = false;
  // Queue the end of every collective as an event, also where the replay handles it in place
  // (Engine::TakeNextInPlace: the same results, more events; a reference for tests).
  bool queue_collective_ends = false;
};

class Replay : public EventHandler, public FlowListener {
 public:
  // Throws InputError when the schedule uses more devices than the placement or the topology
  // has GPUs, or names an unknown `after` key or group.
  Replay(const Schedule& schedule, const NetworkTopology& topology, const ComputeCostModel& cost,
         ReplayOptions options);
  ~Replay() override;

  // Borrowed; must outlive Run().
  void AddObserver(ReplayObserver* observer) { observers_.push_back(observer); }
  // Borrowed, nullable; must outlive Run(). Fed directly (no virtual call per op), with what
  // the ReplayObserver callbacks carry plus the op's device and class.
  void SetStats(ReplayStats* stats) { stats_ = stats; }
  // Registers an engine observer (sees every event).
  void AddEventObserver(EventObserver* observer) { engine_.AddObserver(observer); }
  // Rate samples of every link (time, link, bytes/s) go to `sampler` (flow mode only).
  void SetLinkRateSampler(std::function<void(TimeNs, int, double)> sampler);

  // Runs the iteration to the end. Throws InputError "replay stalled at T ns: ..." naming each
  // blocked device and the op it waits on when some op can never run.
  void Run();

  TimeNs EndNs() const { return end_ns_; }  // when the last op finished
  int64_t Events() const { return engine_.EventsProcessed(); }
  // Flows started in the flow network (transfers, collective steps; not those of the phases
  // run in closed form; compute only with ReplayOptions::compute_as_flows).
  int64_t Flows() const { return network_->FlowsStarted(); }
  // Collective phases run as one timed event (their links exclusive).
  int64_t ClosedFormPhases() const { return closed_form_phases_; }
  // With a fold, an op's times are its representative's.
  TimeNs StartNs(int op) const { return ops_[fold_.RepOp(op)].start_ns; }
  TimeNs EndNs(int op) const { return ops_[fold_.RepOp(op)].end_ns; }
  // The symmetry the replay folded (the identity unless ReplayOptions::fold found one).
  const SymmetryFold& Fold() const { return fold_; }
  // The op whose completion (or arrival, for communication) let `op` start, or -1.
  int CriticalPredecessor(int op) const { return ops_[op].critical_pred; }
  // The chain of ops ending at the op that finished last, first op first.
  std::vector<int> CriticalPath() const;
  // Per op (by position): the tp degree of its work (WorkTpDegrees, sim/op_work.h).
  const std::vector<int>& WorkTp() const { return work_tp_; }
  // Per op (by position): the number of its compute work in Works(), -1 for an op that is not
  // compute (ReplayGraph::work); the distinct works.
  const std::vector<int>& WorkOf() const { return work_of_; }
  const std::vector<SliceWork>& Works() const { return works_; }
  // Op::device of op `op`.
  int DeviceOf(int op) const { return ops_[op].device; }
  // GPU of schedule device `device`.
  int GpuOf(int device) const { return placement_[device]; }
  // Time the flow network kept each link busy (flow mode; all zero in analytic mode; with a
  // fold, every link of a class as its representative).
  std::vector<TimeNs> LinkBusyNs() const;
  // Analytic mode: the fraction of the bytes moved over links whose transfer shared a link with
  // one started at another instant (contention the analytic mode cannot re-share; see
  // sim/analytic_network.h). 0 in flow mode.
  double StaggeredFraction() const;

  void Handle(const Event& event) override;
  void OnFlowDone(int64_t tag) override;

 private:
  enum class State : uint8_t { kWaiting, kArrived, kMoving, kDone };
  enum EventKind { kTransferDone = 0, kCollectiveDone = 1, kPhaseDone = 2 };

  // Everything the hot path reads of an op (the Op itself, with its strings, is not touched
  // there but for a compute op's work).
  struct OpState {
    State state = State::kWaiting;
    OpClass cls = OpClass::kOther;
    int gpu = -1;     // placement of its device
    int pending = 0;  // unfinished predecessors (stream order + after deps)
    int critical_pred = -1;
    int partner = -1;   // SEND <-> RECV
    int instance = -1;  // collective instance
    int device = 0;     // Op::device
    TimeNs start_ns = -1;
    TimeNs comm_start_ns = -1;
    TimeNs end_ns = -1;
  };
  struct RunProgress {
    int step = 0;
    int flows_left = 0;
  };
  struct Instance {
    int group = -1;
    OpKind kind = OpKind::kAllReduce;
    Bytes bytes = 0;
    int root_gpu = -1;
    int member_begin = 0;  // its arrived ops, in arrival order: members_[begin, begin + arrived)
    int arrived = 0;
    int expected = 0;
    int plan = -1;                       // index into plans_, once known
    const FoldedPlan* folded = nullptr;  // with a fold
    int phase = 0;
    int runs_left = 0;
    std::vector<RunProgress> runs;  // from run_pool_ while it runs
  };
  // (kind, bytes, root GPU) on one group: the instances that share a CollectivePlan.
  struct PlanKey {
    OpKind kind;
    Bytes bytes;
    int root_gpu;
    int plan;  // index into plans_
  };
  // A phase of a plan run alone from time 0: when its last run ends, and how long it keeps each
  // channel it crosses busy.
  struct PhaseAlone {
    TimeNs duration_ns = -1;  // -1: not computed yet
    std::vector<std::pair<int, TimeNs>> busy_ns;
    // How many times StartPhase ran it in closed form: LinkBusyNs adds busy_ns x starts (integer
    // ns, so the same sums as adding busy_ns at each start).
    int64_t starts = 0;
  };
  struct CachedPlan {
    CollectivePlan plan;
    const FoldedPlan* folded = nullptr;  // with a fold: its folded plan
    // Its bytes over each link, as reported to observers per instance: (the link's class
    // representative, bytes x images x the link's multiplicity) (P2pRoute::link_bytes' figures).
    std::vector<std::pair<int, double>> link_bytes;
    // Per phase, per run: the FlowNetwork route of its aggregate flow (folded with a fold), -1
    // until first started.
    std::vector<std::vector<int>> run_route;
    // Per phase: the runs StartPhase starts (all, or one per orbit with a fold), in order, less
    // those without steps; a phase without any is skipped.
    std::vector<std::vector<int>> phase_runs;
    std::vector<PhaseAlone> alone;  // per phase, computed when first needed
  };

  // A point-to-point route from one GPU: its RouteCache entry and its FlowNetwork route id
  // (folded with a fold; -1 in analytic mode), found once per GPU pair.
  struct P2pRoute {
    int dst = -1;
    int network_route = -1;
    const RouteCache::Entry* entry = nullptr;
    // What its transfers of `link_bytes_of` bytes report to observers: per link, (its class
    // representative, bytes x its multiplicity); kept for the next transfer of as many bytes.
    std::vector<std::pair<int, double>> link_bytes;
    Bytes link_bytes_of = -1;
    int list_number = -1;  // link_bytes' number for ReplayStats::OnLinkBytesRepeat (odd)
  };

  void BuildGraph();
  void ApplyFold();
  // `pred`: the predecessor whose completion started it (CriticalPredecessor), or -1.
  void StartOp(int op, int pred);
  void CompleteOp(int op);
  // StartOp's parts out of line: the observers' calls, a compute op's start, the second of a
  // SEND / RECV pair arriving, and an arrival at a collective.
  void NotifyOpStart(int op, TimeNs now);
  void StartCompute(int op);
  void ArriveSecondOfPair(int op);
  void ArriveAtCollective(int op);
  void NotifyOpEnd(int op);  // CompleteOp's observers' calls
  void BeginTransfer(int send, int recv);
  P2pRoute& P2pRouteOf(int src_gpu, int dst_gpu);
  void BeginCollective(int instance);
  // BeginCollective's uncommon parts: the observers' calls, then an empty plan's end, the
  // analytic network's start or the first phase.
  void BeginCollectiveRest(int instance);
  // last: the handler calling it does nothing after it (Handle of kPhaseDone), so the end of
  // the collective may be handled in place instead of queued.
  void StartPhase(int instance, bool last = false);
  void StartPhaseSlow(int instance, bool last);  // StartPhase but for its common case
  // After the last phase: FinishCollective now (in place, `last` permitting) or as an event now.
  void EndCollective(int instance, bool last);
  void QueueCollectiveEnd(int instance);  // EndCollective's event, out of line
  void StartRunStep(int instance, int run);
  // The channels of run r of phase `phase` of a plan as its aggregate flow crosses them (the
  // folded hops' routes with a fold; in fold_route_ then).
  const std::vector<int>& RunChannels(const CachedPlan& cached, int phase, int r);
  // Finds the groups that run in closed form (closed_form_group_).
  void FindExclusiveGroups();
  // Whether every device with ops is a representative (no fold, or a fold whose schedule holds
  // only representatives): every op then runs, and stands for itself.
  bool EveryDeviceRuns() const;
  PhaseAlone& Alone(int plan, int phase);
  void FinishCollective(int instance);
  // The index into plans_ of `instance`'s plan, planned when new.
  int PlanFor(const Instance& instance);
  int FindOrAddPlan(const Instance& instance);  // PlanFor's search and planning
  [[noreturn]] void ThrowStall() const;
  std::string WaitReason(int op) const;

  const Schedule& schedule_;
  const NetworkTopology& topology_;
  const ComputeCostModel& cost_;
  WorkTimeCache work_times_;  // cost_.Time per distinct work
  ReplayOptions options_;
  std::vector<int> placement_;
  Engine engine_;
  int handler_id_;
  std::shared_ptr<PlanCache> plan_cache_;  // options_.plans, or the replay's own
  RouteCache& routes_;                     // plan_cache_->Routes(): shared with the probe's
  std::unique_ptr<FlowNetwork> network_;
  std::unique_ptr<ComputeSharing> compute_;    // null with ReplayOptions::compute_as_flows
  std::unique_ptr<AnalyticNetwork> analytic_;  // kAnalytic only
  int num_links_ = 0;
  std::vector<ReplayObserver*> observers_;
  ReplayStats* stats_ = nullptr;
  // Point-to-point link lists built so far (P2pRoute::list_number); a plan's list is number
  // 2 x its index, the k-th point-to-point one 2k + 1.
  int p2p_lists_ = 0;

  std::vector<OpState> ops_;
  std::vector<int> work_tp_;  // per op: the tp degree of its compute work
  std::vector<int> work_of_;  // per op: its compute work in works_, -1 none
  std::vector<SliceWork> works_;
  std::vector<int> compute_route_;  // compute_as_flows: per GPU, its compute channel's route
  std::vector<int> succ_begin_;     // CSR successor lists
  std::vector<int> succ_;
  std::vector<std::vector<int>> group_gpus_;
  // Per op: its stream's number on its device where the graph read the strings (ReplayGraph::
  // stream; read by FindExclusiveGroups, then freed); empty where Op::stream_id numbers them.
  std::vector<int> stream_of_;
  CommKeys comm_keys_;  // ReplayGraph::comm_keys, for ApplyFold
  // ReplayGraph::group_member, paired_sends and has_ops, for FindExclusiveGroups.
  std::vector<ReplayGraph::Member> group_member_;
  std::vector<std::pair<int, int>> paired_sends_;
  std::vector<char> has_ops_;
  std::vector<Instance> instances_;
  std::vector<int> members_;  // the instances' arrived ops (Instance::member_begin)
  std::vector<std::vector<RunProgress>> run_pool_;  // Instance::runs of finished instances
  std::vector<CachedPlan> plans_;
  std::vector<double> link_sum_;                   // PlanFor's scratch: per link, 0 between calls
  std::vector<int> link_touched_;                  // PlanFor's scratch
  std::vector<std::vector<P2pRoute>> p2p_routes_;  // per source GPU: its destinations (a few)
  std::vector<std::vector<PlanKey>> group_plans_;  // per group: its plans (a handful)
  SymmetryFold fold_;
  std::vector<int> fold_route_;   // scratch
  std::vector<double> capacity_;  // per channel, as the flow network has it
  // Per group: whether its phases run in closed form; empty: none does.
  std::vector<char> closed_form_group_;
  int64_t closed_form_phases_ = 0;
  int active_ops_ = 0;  // ops to simulate (the representatives')
  int done_ = 0;
  TimeNs end_ns_ = 0;
  // The first op (by position) of those that finished at end_ns_; INT_MAX before any did.
  int last_op_ = std::numeric_limits<int>::max();
  bool ran_ = false;
};

}  // namespace terasim

#include "sim/replay.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "models/errors.h"
#include "sim/analytic_network.h"
#include "sim/exclusive_links.h"
#include "sim/op_work.h"
#include "sim/replay_graph.h"

namespace terasim {
namespace {

// Flow tags: the low two bits say what the flow belongs to.
constexpr int64_t kTagCompute = 0;
constexpr int64_t kTagP2p = 1;
constexpr int64_t kTagCollective = 2;
constexpr int64_t kTagAnalyticCollective = 3;  // a whole collective in the analytic network
constexpr int kRunBits = 20;

int64_t CollectiveTag(int instance, int run) {
  return (((static_cast<int64_t>(instance) << kRunBits) | run) << 2) | kTagCollective;
}

}  // namespace

const char* NetworkModeName(NetworkMode mode) {
  return mode == NetworkMode::kFlow ? "flow" : "analytic";
}

NetworkMode ParseNetworkMode(const std::string& text) {
  if (text == "flow") return NetworkMode::kFlow;
  if (text == "analytic") return NetworkMode::kAnalytic;
  ThrowInput("--network: '{}' must be one of flow, analytic", text);
}

Replay::Replay(const Schedule& schedule, const NetworkTopology& topology,
               const ComputeCostModel& cost, ReplayOptions options)
    : schedule_(schedule),
      topology_(topology),
      cost_(cost),
      work_times_(cost),
      options_(std::move(options)),
      handler_id_(engine_.AddHandler(this)),
      plan_cache_(options_.plans != nullptr
                      ? options_.plans
                      : std::make_shared<PlanCache>(topology, options_.collectives)),
      routes_(plan_cache_->Routes()) {
  const std::string where = schedule.source.empty() ? "schedule" : schedule.source;
  // The shared cache's routes are the routes of this topology (the same object), so the ones
  // the probe computed are the ones this replay would compute.
  TERASIM_CHECK(
      plan_cache_->Serves(topology, options_.collectives) && &routes_.Topology() == &topology,
      "{}: the shared collective plans are for another topology or options", where);
  placement_ = options_.placement;
  if (placement_.empty()) {
    if (schedule.devices > topology.NumGpus()) {
      ThrowInput("{}: needs {} devices but the cluster has {} GPUs", where, schedule.devices,
                 topology.NumGpus());
    }
    for (int d = 0; d < schedule.devices; ++d) placement_.push_back(d);
  }
  if (static_cast<int>(placement_.size()) < schedule.devices) {
    ThrowInput("placement: covers {} devices but the schedule has {}", placement_.size(),
               schedule.devices);
  }
  for (size_t d = 0; d < placement_.size(); ++d) {
    if (placement_[d] < 0 || placement_[d] >= topology.NumGpus()) {
      ThrowInput("placement: device {} -> GPU {} is outside the cluster's {} GPUs", d,
                 placement_[d], topology.NumGpus());
    }
  }
  num_links_ = static_cast<int>(topology.Links().size());
  std::vector<double> capacity;
  for (const NetLink& link : topology.Links()) capacity.push_back(link.bw_bytes_per_s);
  if (options_.compute_as_flows) {
    // One compute channel per GPU: capacity in ns of work per second (processor sharing).
    for (int g = 0; g < topology.NumGpus(); ++g) capacity.push_back(1e9);
  }
  capacity_ = capacity;
  network_ = std::make_unique<FlowNetwork>(engine_, std::move(capacity), *this);
  if (options_.compute_as_flows) {
    for (int g = 0; g < topology.NumGpus(); ++g) {
      compute_route_.push_back(network_->InternRoute({num_links_ + g}));
    }
  } else {
    compute_ = std::make_unique<ComputeSharing>(engine_, topology.NumGpus(), *this);
  }
  if (options_.network == NetworkMode::kAnalytic) {
    analytic_ = std::make_unique<AnalyticNetwork>(engine_, topology.Links(), *this, fold_);
  }
  BuildGraph();
  active_ops_ = static_cast<int>(ops_.size());
  if (options_.fold || schedule.symmetry.representatives_only) ApplyFold();
  if (!analytic_ && !options_.collectives.step_by_step && options_.collectives.closed_form) {
    FindExclusiveGroups();
  }
}

bool Replay::EveryDeviceRuns() const {
  if (!fold_.Folded()) return true;
  for (size_t d = 0; d < has_ops_.size(); ++d) {
    if (has_ops_[d] && !fold_.IsRep(static_cast<int>(d))) return false;
  }
  return true;
}

void Replay::FindExclusiveGroups() {
  const int num_groups = static_cast<int>(group_gpus_.size());
  ExclusiveLinks links(num_groups, static_cast<int>(capacity_.size()));
  // The instances that run (a representative issues an op of them), their members' streams,
  // and the point-to-point routes (each GPU pair once).
  std::vector<char> runs(instances_.size(), 0);
  std::vector<std::vector<int>> destinations(topology_.NumGpus());  // per source GPU
  const int n = static_cast<int>(ops_.size());
  const OpState* const states = ops_.data();
  // Each op's stream's number on its device: the graph's from the names, or the generator's.
  const int* const stream_of = stream_of_.empty() ? nullptr : stream_of_.data();
  // A point-to-point route from GPU src to GPU dst, claimed once per pair.
  const auto claim_route = [&](int src, int dst) {
    std::vector<int>& known = destinations[src];
    if (std::find(known.begin(), known.end(), dst) != known.end()) return;
    known.push_back(dst);
    const std::vector<int>& route = routes_.Get(src, dst).links;
    if (fold_.Folded()) {
      fold_.FoldRoute(route, &fold_route_);
      links.ClaimShared(fold_route_);
    } else {
      links.ClaimShared(route);
    }
  };
  const bool every_device_runs = EveryDeviceRuns();
  if (every_device_runs) {
    // Every op runs: the loop below would watch each group's first member as the graph did
    // (ReplayGraph::group_member), count every instance, and claim the route of every paired
    // SEND (a RECV's SEND runs, so the RECV is skipped): the same claims without the pass.
    for (int g = 0; g < num_groups; ++g) {
      const ReplayGraph::Member& m = group_member_[g];
      if (m.ops > 0) links.SetMember(g, m.device, m.stream, m.ops, m.one_stream);
    }
    for (const Instance& instance : instances_) links.AddInstance(instance.group);
    std::fill(runs.begin(), runs.end(), 1);
    for (const auto& [device, peer] : paired_sends_) {
      claim_route(placement_[device], placement_[peer]);
    }
  }
  for (int i = 0; i < (every_device_runs ? 0 : n); ++i) {
    const OpState& s = states[i];
    if (s.cls == OpClass::kCompute || !fold_.IsRep(s.device)) continue;
    if (s.instance >= 0) {
      const int group = instances_[s.instance].group;
      const int stream = stream_of != nullptr ? stream_of[i] : schedule_.ops[i].stream_id;
      links.AddMemberOp(group, s.device, stream);
      if (!runs[s.instance]) {
        links.AddInstance(group);
        runs[s.instance] = 1;
      }
    } else if (s.cls == OpClass::kPointToPoint && s.partner >= 0) {
      const Op& op = schedule_.ops[i];
      // BeginTransfer's route: from the SEND's GPU to its peer's; each transfer seen at its SEND,
      // or at its RECV where that SEND is not visited here (on a device folded away).
      const bool is_send = op.kind == OpKind::kSend;
      if (!is_send) {
        const OpState& send = ops_[s.partner];
        if (send.cls == OpClass::kPointToPoint && send.instance < 0 && send.partner >= 0 &&
            fold_.IsRep(send.device)) {
          continue;
        }
      }
      const Op& send = is_send ? op : schedule_.ops[s.partner];
      claim_route(placement_[send.device], placement_[send.peer]);
    }
  }
  std::vector<int>().swap(stream_of_);  // read
  // Every plan's runs' channels, per group: each distinct plan once (consecutive instances of a
  // group mostly repeat its last key, which then needs no lookup). Each instance that runs keeps
  // its plan (BeginCollective then looks up none).
  std::vector<std::vector<int>> group_plans(num_groups);
  std::vector<int> last(num_groups, -1);  // per group: its last instance looked up
  for (size_t k = 0; k < instances_.size(); ++k) {
    if (!runs[k]) continue;
    Instance& instance = instances_[k];
    int& previous = last[instance.group];
    if (previous >= 0) {
      const Instance& seen = instances_[previous];
      if (seen.kind == instance.kind && seen.bytes == instance.bytes &&
          seen.root_gpu == instance.root_gpu) {
        instance.plan = seen.plan;
        continue;
      }
    }
    previous = static_cast<int>(k);
    const int plan = PlanFor(instance);
    instance.plan = plan;
    std::vector<int>& known = group_plans[instance.group];
    if (std::find(known.begin(), known.end(), plan) == known.end()) known.push_back(plan);
  }
  for (int g = 0; g < num_groups; ++g) {
    for (int plan : group_plans[g]) {
      const CachedPlan& cached = plans_[plan];
      for (size_t p = 0; p < cached.phase_runs.size(); ++p) {
        for (int r : cached.phase_runs[p]) {
          links.ClaimGroup(g, RunChannels(cached, static_cast<int>(p), r));
        }
      }
    }
  }
  closed_form_group_ = links.Finish();
}

const std::vector<int>& Replay::RunChannels(const CachedPlan& cached, int phase, int r) {
  const RingRun& run = cached.plan.phases[phase].runs[r];
  if (cached.folded == nullptr) return run.links;
  // Folded: the run stands for its images, so its route is its folded hops' routes (one per
  // orbit of hops, representatives repeated by multiplicity: sim/symmetry_fold.h).
  const std::vector<FoldedRun>& runs = cached.folded->phases[phase];
  const FoldedRun& folded_run =
      *std::find_if(runs.begin(), runs.end(), [r](const FoldedRun& f) { return f.run == r; });
  fold_route_.clear();
  for (const FoldedFlow& flow : folded_run.flows) {
    fold_route_.insert(fold_route_.end(), flow.route.begin(), flow.route.end());
  }
  return fold_route_;
}

namespace {

// Hears when the last flow of a phase run alone ends.
class LastFlowDone : public FlowListener {
 public:
  explicit LastFlowDone(const Engine& engine) : engine_(engine) {}
  void OnFlowDone(int64_t /*tag*/) override { last_ns_ = engine_.Now(); }
  TimeNs LastNs() const { return last_ns_; }

 private:
  const Engine& engine_;
  TimeNs last_ns_ = 0;
};

}  // namespace

Replay::PhaseAlone& Replay::Alone(int plan, int phase) {
  CachedPlan& cached = plans_[plan];
  if (cached.alone.empty()) cached.alone.resize(cached.plan.phases.size());
  PhaseAlone& alone = cached.alone[phase];
  if (alone.duration_ns >= 0) return alone;
  // The runs exactly as StartRunStep starts them, from time 0 in a network of their own: of
  // their channels only, numbered in the same order (the solver breaks ties by channel id).
  std::vector<int> channels;
  for (int r : cached.phase_runs[phase]) {
    const std::vector<int>& route = RunChannels(cached, phase, r);
    channels.insert(channels.end(), route.begin(), route.end());
  }
  std::sort(channels.begin(), channels.end());
  channels.erase(std::unique(channels.begin(), channels.end()), channels.end());
  std::vector<double> capacity;
  for (int c : channels) capacity.push_back(capacity_[c]);
  Engine engine;
  LastFlowDone done(engine);
  FlowNetwork network(engine, std::move(capacity), done);
  std::vector<int> local;
  for (int r : cached.phase_runs[phase]) {
    const RingRun& run = cached.plan.phases[phase].runs[r];
    local.clear();
    for (int c : RunChannels(cached, phase, r)) {
      local.push_back(static_cast<int>(std::lower_bound(channels.begin(), channels.end(), c) -
                                       channels.begin()));
    }
    network.StartFlow(local, run.steps * run.bytes_per_flow,
                      run.steps * run.alpha_ns + run.latency_ns, r);
  }
  engine.Run();
  alone.duration_ns = done.LastNs();
  for (size_t k = 0; k < channels.size(); ++k) {
    const TimeNs busy_ns = network.BusyNs(static_cast<int>(k));
    if (busy_ns > 0) alone.busy_ns.emplace_back(channels[k], busy_ns);
  }
  return alone;
}

void Replay::ApplyFold() {
  const int n = static_cast<int>(ops_.size());
  // A declared fold reads the comm keys, not the ops (sim/symmetry_fold.h).
  const bool declared = schedule_.symmetry.representatives_only;
  std::vector<int> partner(declared ? 0 : n), group(declared ? 0 : n, -1);
  for (int i = 0; i < static_cast<int>(partner.size()); ++i) {
    partner[i] = ops_[i].partner;
    if (ops_[i].instance >= 0) group[i] = instances_[ops_[i].instance].group;
  }
  FoldGraph graph{
      schedule_,           placement_,           work_tp_, partner, group, succ_begin_, succ_,
      options_.compute_ns, options_.device_speed};
  graph.comm_keys = &comm_keys_;
  graph.plans = plan_cache_.get();
  if (schedule_.symmetry.representatives_only) {
    // Only the representatives' ops are in the schedule: fold by its declared symmetry or not
    // at all.
    fold_ = SymmetryFold::Declared(graph, topology_, routes_, options_.collectives);
    if (!fold_.Folded()) {
      ThrowInput("{}: holds only representative devices' ops: {}",
                 schedule_.source.empty() ? "schedule" : schedule_.source, fold_.WhyNot());
    }
  } else {
    fold_ = SymmetryFold::Find(graph, topology_, routes_, options_.collectives);
  }
  if (!fold_.Folded()) return;
  // The representatives' ops run; a partner or group member on another device is stood for
  // by its representative's image. A declared fold's ops are the representatives' and stand
  // for themselves (SymmetryFold::Declared): all run, with their partners.
  const bool every_op_runs = declared && EveryDeviceRuns();
  active_ops_ = every_op_runs ? n : 0;
  for (int i = 0; i < (every_op_runs ? 0 : n); ++i) {
    if (!fold_.IsRep(ops_[i].device)) continue;
    ++active_ops_;
    if (ops_[i].partner >= 0) ops_[i].partner = fold_.RepOp(ops_[i].partner);
  }
  for (Instance& instance : instances_) instance.expected = fold_.RepMembers(instance.group);
}

Replay::~Replay() = default;

double Replay::StaggeredFraction() const {
  return analytic_ && analytic_->TotalBytes() > 0
             ? analytic_->StaggeredBytes() / analytic_->TotalBytes()
             : 0;
}

void Replay::SetLinkRateSampler(std::function<void(TimeNs, int, double)> sampler) {
  // The samples are the flow network's rate changes: every phase runs as flows.
  closed_form_group_.clear();
  const int num_links = num_links_;
  network_->SetRateSampler([num_links, sampler = std::move(sampler)](TimeNs t, int c, double r) {
    if (c < num_links) sampler(t, c, r);
  });
}

void Replay::BuildGraph() {
  // Every string resolved once, into integers (sim/replay_graph.h).
  ReplayGraph graph = BuildReplayGraph(schedule_, placement_);
  const int n = static_cast<int>(schedule_.ops.size());
  ops_.assign(n, OpState{});
  OpState* const to = ops_.data();
  for (int i = 0; i < n; ++i) {
    to[i].pending = graph.pending[i];
    to[i].partner = graph.partner[i];
    to[i].instance = graph.instance[i];
    to[i].cls = graph.op_class[i];
    to[i].gpu = graph.gpu[i];
    to[i].device = graph.device[i];
  }
  work_tp_ = std::move(graph.work_tp);
  work_of_ = std::move(graph.work);
  works_ = std::move(graph.works);
  succ_begin_ = std::move(graph.succ_begin);
  succ_ = std::move(graph.succ);
  group_gpus_ = std::move(graph.group_gpus);
  stream_of_ = std::move(graph.stream);
  comm_keys_ = std::move(graph.comm_keys);
  group_member_ = std::move(graph.group_member);
  paired_sends_ = std::move(graph.paired_sends);
  has_ops_ = std::move(graph.has_ops);
  // Room for each instance's ops: as many as the schedule maps to it.
  instances_.resize(graph.instances.size());
  int offset = 0;
  for (size_t k = 0; k < graph.instances.size(); ++k) {
    const ReplayGraph::Instance& from = graph.instances[k];
    Instance& instance = instances_[k];
    instance.group = from.group;
    instance.kind = from.kind;
    instance.bytes = from.bytes;
    instance.root_gpu = from.root_gpu;
    instance.expected = from.expected;
    instance.member_begin = offset;
    offset += from.members;
  }
  members_.assign(offset, -1);
}

void Replay::Run() {
  TERASIM_CHECK(!ran_, "Replay::Run called twice");
  ran_ = true;
  const int n = static_cast<int>(ops_.size());
  for (int i = 0; i < n; ++i) {
    if (ops_[i].pending == 0 && fold_.IsRep(ops_[i].device)) StartOp(i, -1);
  }
  engine_.Run();
  if (done_ < active_ops_) ThrowStall();
}

[[gnu::always_inline]] inline void Replay::StartOp(int i, int pred) {
  // Small enough to inline into CompleteOp (its caller for nearly every op): the class-specific
  // work is out of line.
  OpState& s = ops_[i];
  const TimeNs now = engine_.Now();
  s.state = State::kArrived;
  s.start_ns = now;
  s.critical_pred = pred;
  if (!observers_.empty()) [[unlikely]] {
    NotifyOpStart(i, now);
  }
  if (s.cls == OpClass::kCompute) {
    StartCompute(i);
  } else if (s.cls == OpClass::kPointToPoint) {
    if (s.partner >= 0 && ops_[s.partner].state == State::kArrived) ArriveSecondOfPair(i);
  } else if (s.cls == OpClass::kCollective) {
    ArriveAtCollective(i);
  }
}

[[gnu::noinline]] void Replay::NotifyOpStart(int i, TimeNs now) {
  for (ReplayObserver* o : observers_) o->OnOpStart(i, now);
}

[[gnu::noinline]] void Replay::StartCompute(int i) {
  OpState& s = ops_[i];
  const TimeNs now = s.start_ns;
  if (stats_ != nullptr) stats_->OnComputeStart(s.device, now);
  s.state = State::kMoving;
  s.comm_start_ns = now;
  TimeNs work_ns = i < static_cast<int>(options_.compute_ns.size()) && options_.compute_ns[i] >= 0
                       ? options_.compute_ns[i]
                       : work_times_.Time(work_of_[i], works_);
  if (s.device < static_cast<int>(options_.device_speed.size())) {
    work_ns = std::llround(static_cast<double>(work_ns) * options_.device_speed[s.device]);
  }
  const int64_t tag = static_cast<int64_t>(i) * 4 + kTagCompute;
  if (compute_) {
    compute_->Start(s.gpu, static_cast<double>(work_ns), tag);
  } else {
    network_->StartFlowOn(compute_route_[s.gpu], static_cast<double>(work_ns), 0, tag);
  }
}

[[gnu::noinline]] void Replay::ArriveSecondOfPair(int i) {
  const int partner = ops_[i].partner;
  ops_[partner].critical_pred = i;  // the partner waited for this op
  if (schedule_.ops[i].kind == OpKind::kSend) {
    BeginTransfer(i, partner);
  } else {
    BeginTransfer(partner, i);
  }
}

[[gnu::noinline]] void Replay::ArriveAtCollective(int i) {
  const int id = ops_[i].instance;
  Instance& instance = instances_[id];
  members_[instance.member_begin + instance.arrived++] = i;
  if (instance.arrived == instance.expected) BeginCollective(id);
}

void Replay::CompleteOp(int i) {
  OpState* const ops = ops_.data();
  OpState& s = ops[i];
  const TimeNs now = engine_.Now();
  s.state = State::kDone;
  s.end_ns = now;
  ++done_;
  // Time only grows: the op that finished last, the lowest numbered of those at end_ns_.
  if (now > end_ns_ || i < last_op_) {
    end_ns_ = now;
    last_op_ = i;
  }
  if (stats_ != nullptr) stats_->OnOpEnd(s.device, s.cls == OpClass::kCompute, now);
  if (!observers_.empty()) NotifyOpEnd(i);
  // Nothing resizes these while running: held in locals across the starts' calls.
  const int* const succ = succ_.data();
  const int end = succ_begin_[i + 1];
  for (int k = succ_begin_[i]; k < end; ++k) {
    const int next = succ[k];
    if (--ops[next].pending == 0) StartOp(next, i);  // this op held it back last
  }
}

[[gnu::noinline]] void Replay::NotifyOpEnd(int i) {
  const OpState& s = ops_[i];
  for (ReplayObserver* o : observers_) o->OnOpEnd(i, s.start_ns, s.comm_start_ns, s.end_ns);
}

void Replay::BeginTransfer(int send, int recv) {
  const TimeNs now = engine_.Now();
  for (int i : {send, recv}) {
    ops_[i].state = State::kMoving;
    ops_[i].comm_start_ns = now;
    if (stats_ != nullptr) stats_->OnCommStart(ops_[i].device, now);
    for (ReplayObserver* o : observers_) o->OnCommStart(i, now);
  }
  const int src = placement_[schedule_.ops[send].device];
  // The SEND's peer: with a fold, `recv` may be the image of the real RECV on another device.
  const int dst = placement_[schedule_.ops[send].peer];
  const Bytes bytes = schedule_.ops[send].bytes;
  P2pRoute& p2p = P2pRouteOf(src, dst);
  const RouteCache::Entry& route = *p2p.entry;
  if (!observers_.empty() || stats_ != nullptr) {
    // Its bytes over each link of its route, by class with a fold.
    if (p2p.link_bytes_of != bytes) {
      p2p.link_bytes.clear();
      p2p.link_bytes.reserve(route.links.size());
      for (int link : route.links) {
        p2p.link_bytes.emplace_back(fold_.LinkRep(link),
                                    static_cast<double>(bytes) * fold_.LinkMultiplicity(link));
      }
      p2p.link_bytes_of = bytes;
      p2p.list_number = 2 * p2p_lists_++ + 1;
    }
    if (stats_ != nullptr) stats_->OnLinkBytesRepeat(p2p.list_number, p2p.link_bytes);
    for (ReplayObserver* o : observers_) o->OnLinkBytesList(p2p.link_bytes);
  }
  if (analytic_) {
    analytic_->StartTransfer(route, bytes, static_cast<int64_t>(send) * 4 + kTagP2p);
  } else {
    network_->StartFlowOn(p2p.network_route, static_cast<double>(bytes), route.latency_ns,
                          static_cast<int64_t>(send) * 4 + kTagP2p);
  }
}

Replay::P2pRoute& Replay::P2pRouteOf(int src, int dst) {
  if (p2p_routes_.empty()) p2p_routes_.resize(topology_.NumGpus());
  std::vector<P2pRoute>& known = p2p_routes_[src];
  for (P2pRoute& p2p : known) {
    if (p2p.dst == dst) return p2p;
  }
  P2pRoute p2p;
  p2p.dst = dst;
  p2p.entry = &routes_.Get(src, dst);
  if (!analytic_) {
    // The flow network's route, folded with a fold (class representatives by multiplicity).
    const std::vector<int>* links = &p2p.entry->links;
    if (fold_.Folded()) {
      fold_.FoldRoute(p2p.entry->links, &fold_route_);
      links = &fold_route_;
    }
    p2p.network_route = network_->InternRoute(*links);
  }
  known.push_back(std::move(p2p));
  return known.back();
}

int Replay::PlanFor(const Instance& instance) {
  // Consecutive instances on a group mostly repeat its newest plan: that test inline, the rest
  // out of line.
  if (!group_plans_.empty()) {
    const std::vector<PlanKey>& known = group_plans_[instance.group];
    if (!known.empty()) {
      const PlanKey& key = known.back();
      if (key.kind == instance.kind && key.bytes == instance.bytes &&
          key.root_gpu == instance.root_gpu) {
        return key.plan;
      }
    }
  }
  return FindOrAddPlan(instance);
}

int Replay::FindOrAddPlan(const Instance& instance) {
  if (group_plans_.empty()) group_plans_.resize(group_gpus_.size());
  std::vector<PlanKey>& known = group_plans_[instance.group];
  // Newest first: consecutive instances on a group mostly repeat a recent plan.
  for (auto it = known.rbegin(); it != known.rend(); ++it) {
    const PlanKey& key = *it;
    if (key.kind == instance.kind && key.bytes == instance.bytes &&
        key.root_gpu == instance.root_gpu) {
      return key.plan;
    }
  }
  CachedPlan cached;
  // Shared with the fold's checks and the closed-form analysis (sim/plan_cache.h).
  cached.plan = plan_cache_->Plan(instance.kind, group_gpus_[instance.group], instance.root_gpu,
                                  instance.bytes);
  // Its bytes per link: each link's sum in the order of the plan's transfers (phase, run, step,
  // hop), links ascending.
  link_sum_.resize(num_links_, 0.0);
  link_touched_.clear();
  std::vector<const std::vector<int>*> hops;
  for (const CollectivePhase& phase : cached.plan.phases) {
    for (const RingRun& run : phase.runs) {
      if (run.steps <= 0) continue;
      // StepTransfers' hops: gpus[e] -> gpus[e + 1] (a ring's last to its first), every one on
      // every step of a ring, hop e on steps e .. e + chunks - 1 of a chain.
      const int p = static_cast<int>(run.gpus.size());
      hops.clear();
      for (int e = 0; e < (run.closed ? p : p - 1); ++e) {
        hops.push_back(&routes_.Get(run.gpus[e], run.gpus[(e + 1) % p]).links);
      }
      for (int step = 0; step < run.steps; ++step) {
        const int first = run.closed ? 0 : std::max(0, step - run.chunks + 1);
        const int last = run.closed ? p : std::min(p - 1, step + 1);
        for (int e = first; e < last; ++e) {
          for (int link : *hops[e]) {
            if (link_sum_[link] == 0.0) link_touched_.push_back(link);
            link_sum_[link] += run.bytes_per_flow;
          }
        }
      }
    }
  }
  std::sort(link_touched_.begin(), link_touched_.end());
  link_touched_.erase(std::unique(link_touched_.begin(), link_touched_.end()), link_touched_.end());
  if (fold_.Folded()) {
    cached.folded = fold_.Plan(instance.group, instance.kind, instance.bytes, instance.root_gpu);
    TERASIM_CHECK(cached.folded != nullptr, "no folded plan for group {}",
                  schedule_.groups[instance.group].name);
  }
  // With a fold the instance stands for its images outside its group's stabilizer.
  const double images = cached.folded != nullptr ? 1.0 / cached.folded->stabilizer : 1.0;
  for (int link : link_touched_) {
    const double scaled = link_sum_[link] * images;
    link_sum_[link] = 0.0;
    cached.link_bytes.emplace_back(fold_.LinkRep(link), scaled * fold_.LinkMultiplicity(link));
  }
  for (size_t p = 0; p < cached.plan.phases.size(); ++p) {
    const CollectivePhase& phase = cached.plan.phases[p];
    cached.run_route.emplace_back(phase.runs.size(), -1);
    // The runs to simulate: all, or one per orbit with a fold; those with steps.
    std::vector<int>& runs = cached.phase_runs.emplace_back();
    if (cached.folded != nullptr) {
      for (const FoldedRun& folded : cached.folded->phases[p]) {
        if (phase.runs[folded.run].steps > 0) runs.push_back(folded.run);
      }
    } else {
      for (size_t r = 0; r < phase.runs.size(); ++r) {
        if (phase.runs[r].steps > 0) runs.push_back(static_cast<int>(r));
      }
    }
  }
  plans_.push_back(std::move(cached));
  const int plan = static_cast<int>(plans_.size()) - 1;
  known.push_back(PlanKey{instance.kind, instance.bytes, instance.root_gpu, plan});
  return plan;
}

void Replay::BeginCollective(int id) {
  // The flow path's common case inline; the observers' calls, an empty plan and the analytic
  // network out of line (BeginCollectiveRest), so that this saves few registers.
  Instance& instance = instances_[id];
  const TimeNs now = engine_.Now();
  const int* const members = members_.data() + instance.member_begin;
  const int arrived = instance.arrived;
  const int last = members[arrived - 1];  // everyone waited for the last to arrive
  OpState* const ops = ops_.data();
  ReplayStats* const stats = stats_;
  for (int k = 0; k < arrived; ++k) {
    OpState& s = ops[members[k]];
    if (members[k] != last) s.critical_pred = last;
    s.state = State::kMoving;
    s.comm_start_ns = now;
    if (stats != nullptr) stats->OnCommStart(s.device, now);
  }
  if (instance.plan < 0) instance.plan = PlanFor(instance);  // else FindExclusiveGroups's
  const CachedPlan& cached = plans_[instance.plan];
  instance.folded = cached.folded;
  if (stats != nullptr) stats->OnLinkBytesRepeat(2 * instance.plan, cached.link_bytes);
  if (!observers_.empty() || cached.plan.phases.empty() || analytic_) [[unlikely]] {
    BeginCollectiveRest(id);
    return;
  }
  instance.phase = 0;
  StartPhase(id);
}

[[gnu::noinline]] void Replay::BeginCollectiveRest(int id) {
  Instance& instance = instances_[id];
  const TimeNs now = engine_.Now();
  const CachedPlan& cached = plans_[instance.plan];
  if (!observers_.empty()) {
    for (int k = 0; k < instance.arrived; ++k) {
      for (ReplayObserver* o : observers_) o->OnCommStart(members_[instance.member_begin + k], now);
    }
    for (ReplayObserver* o : observers_) o->OnLinkBytesList(cached.link_bytes);
  }
  if (cached.plan.phases.empty()) {
    engine_.Schedule(now, handler_id_, kCollectiveDone, id);
    return;
  }
  if (analytic_) {
    analytic_->StartPlan(instance.plan, cached.plan,
                         static_cast<int64_t>(id) * 4 + kTagAnalyticCollective,
                         instance.folded != nullptr ? instance.folded->stabilizer : 1);
    return;
  }
  instance.phase = 0;
  StartPhase(id);
}

void Replay::StartPhase(int id, bool last) {
  // The common case inline: a phase with runs of a group in closed form whose duration is
  // known (StartPhaseSlow's first pass, without its register saves).
  Instance& instance = instances_[id];
  CachedPlan& cached = plans_[instance.plan];
  const int phase = instance.phase;
  if (!closed_form_group_.empty() && closed_form_group_[instance.group] &&
      phase < static_cast<int>(cached.phase_runs.size()) && !cached.phase_runs[phase].empty() &&
      !cached.alone.empty() && cached.alone[phase].duration_ns >= 0) {
    PhaseAlone& alone = cached.alone[phase];
    ++alone.starts;
    ++closed_form_phases_;
    engine_.Schedule(engine_.Now() + alone.duration_ns, handler_id_, kPhaseDone, id);
    return;
  }
  StartPhaseSlow(id, last);
}

[[gnu::noinline]] void Replay::StartPhaseSlow(int id, bool last) {
  Instance& instance = instances_[id];
  const CollectivePlan& plan = plans_[instance.plan].plan;
  const std::vector<std::vector<int>>& phase_runs = plans_[instance.plan].phase_runs;
  while (instance.phase < static_cast<int>(plan.phases.size())) {
    const std::vector<int>& runs = phase_runs[instance.phase];
    if (!runs.empty() && !closed_form_group_.empty() && closed_form_group_[instance.group]) {
      // Its links carry nothing else: the phase ends when it would alone (sim/exclusive_links.h).
      // Its busy time is counted here and summed by LinkBusyNs. Alone is out of line: test
      // its memo here first.
      std::vector<PhaseAlone>& memo = plans_[instance.plan].alone;
      PhaseAlone& alone = !memo.empty() && memo[instance.phase].duration_ns >= 0
                              ? memo[instance.phase]
                              : Alone(instance.plan, instance.phase);
      ++alone.starts;
      ++closed_form_phases_;
      engine_.Schedule(engine_.Now() + alone.duration_ns, handler_id_, kPhaseDone, id);
      return;
    }
    if (!runs.empty()) {
      if (instance.runs.capacity() == 0 && !run_pool_.empty()) {
        instance.runs = std::move(run_pool_.back());
        run_pool_.pop_back();
      }
      // Only the runs it starts are read: reset those (the others keep stale counts).
      const size_t num_runs = plan.phases[instance.phase].runs.size();
      if (instance.runs.size() < num_runs) instance.runs.resize(num_runs);
      for (int r : runs) instance.runs[r] = RunProgress{};
      instance.runs_left = static_cast<int>(runs.size());
      for (int r : runs) StartRunStep(id, r);
      return;
    }
    ++instance.phase;
  }
  EndCollective(id, last);
}

void Replay::EndCollective(int id, bool last) {
  // Handled in place when the event queued here would be dispatched next with nothing run in
  // between: `last` (the rest of the handler calling it does nothing, and nothing was scheduled
  // since it began) and Engine::TakeNextInPlace (nothing else due now, no engine observer; it
  // gives the current event the seq this one would have had). FinishCollective then runs at the
  // same place in the order of work as it would from Handle (an event less per such
  // collective).
  if (last && !options_.queue_collective_ends && engine_.TakeNextInPlace()) {
    FinishCollective(id);
    return;
  }
  QueueCollectiveEnd(id);
}

[[gnu::noinline]] void Replay::QueueCollectiveEnd(int id) {
  engine_.Schedule(engine_.Now(), handler_id_, kCollectiveDone, id);
}

void Replay::StartRunStep(int id, int r) {
  Instance& instance = instances_[id];
  const RingRun& run = plans_[instance.plan].plan.phases[instance.phase].runs[r];
  // The transfers of StepTransfers(run, step), without building the list.
  const int p = static_cast<int>(run.gpus.size());
  const int64_t tag = CollectiveTag(id, r);
  if (!options_.collectives.step_by_step) {
    // The whole run as one aggregate flow (sim/collective_plan.h): its last step, in one go.
    instance.runs[r].step = run.steps - 1;
    instance.runs[r].flows_left = 1;
    int& route = plans_[instance.plan].run_route[instance.phase][r];
    if (route < 0) {
      route = network_->InternRoute(RunChannels(plans_[instance.plan], instance.phase, r));
    }
    network_->StartFlowOn(route, run.steps * run.bytes_per_flow,
                          run.steps * run.alpha_ns + run.latency_ns, tag);
    return;
  }
  const FoldedRun* folded_run = nullptr;
  if (instance.folded != nullptr) {
    const std::vector<FoldedRun>& runs = instance.folded->phases[instance.phase];
    folded_run =
        &*std::find_if(runs.begin(), runs.end(), [r](const FoldedRun& f) { return f.run == r; });
  }
  const int step = instance.runs[r].step;
  // The run's once-paid latency on its first step; on every step, hop i's latency as the
  // aggregate flow's alpha counts it (RingRun::hop_latency_ns: its route's, with NCCL plus the
  // protocol's step latency less Simple's).
  const TimeNs once_ns = step == 0 ? run.latency_ns : 0;
  const int hops = run.closed ? p : p - 1;
  TERASIM_CHECK(static_cast<int>(run.hop_latency_ns.size()) == hops,
                "collective run with {} hop latencies for {} hops", run.hop_latency_ns.size(),
                hops);
  int flows = 0;
  auto start = [&](int hop) {
    const RouteCache::Entry& route = routes_.Get(run.gpus[hop], run.gpus[(hop + 1) % p]);
    ++flows;
    ++instance.runs[r].flows_left;
    network_->StartFlow(route.links, run.bytes_per_flow, run.hop_latency_ns[hop] + once_ns, tag);
  };
  instance.runs[r].flows_left = 0;
  if (folded_run != nullptr) {
    const FoldedRun& folded = *folded_run;
    // A folded flow carries its hop's route latency (sim/symmetry_fold.h); the hop's latency
    // adds the same protocol delta to it. A chain's flow e is hop e; a closed ring's flows are
    // its hops in order less the images of earlier ones, so flow k stands for the next hop
    // whose folded route is the flow's (hops of one folded route cross the same kind of link:
    // the same delta).
    auto delta_ns = [&](int hop) {
      return run.hop_latency_ns[hop] -
             routes_.Get(run.gpus[hop], run.gpus[(hop + 1) % p]).latency_ns;
    };
    auto start_folded = [&](const FoldedFlow& flow, int hop) {
      ++flows;
      ++instance.runs[r].flows_left;
      network_->StartFlow(flow.route, run.bytes_per_flow, flow.latency_ns + delta_ns(hop) + once_ns,
                          tag);
    };
    if (run.closed) {
      int hop = 0;
      for (const FoldedFlow& flow : folded.flows) {
        for (; hop < hops; ++hop) {
          fold_.FoldRoute(routes_.Get(run.gpus[hop], run.gpus[(hop + 1) % p]).links, &fold_route_);
          if (fold_route_ == flow.route) break;
        }
        TERASIM_CHECK(hop < hops, "a folded flow of no hop of its ring");
        start_folded(flow, hop++);
      }
    } else {
      for (int e = 0; e + 1 < p; ++e) {
        if (step - e >= 0 && step - e < run.chunks) start_folded(folded.flows[e], e);
      }
    }
  } else if (run.closed) {
    for (int i = 0; i < p; ++i) start(i);
  } else {
    for (int e = 0; e + 1 < p; ++e) {
      if (step - e >= 0 && step - e < run.chunks) start(e);
    }
  }
  TERASIM_CHECK(flows > 0, "collective step without transfers");
}

void Replay::FinishCollective(int id) {
  // members_ is never resized while running: completing a member (which may start ops of other
  // instances) leaves this instance's range in place.
  Instance& instance = instances_[id];
  if (instance.runs.capacity() > 0) {
    instance.runs.clear();
    run_pool_.push_back(std::move(instance.runs));
    instance.runs = {};
  }
  const int begin = instance.member_begin;
  const int end = begin + instance.arrived;
  for (int k = begin; k < end; ++k) CompleteOp(members_[k]);
}

void Replay::OnFlowDone(int64_t tag) {
  const int64_t kind = tag & 3;
  const int64_t payload = tag >> 2;
  if (kind == kTagCompute) {
    CompleteOp(static_cast<int>(payload));
  } else if (kind == kTagP2p) {
    const int send = static_cast<int>(payload);
    const int recv = ops_[send].partner;
    CompleteOp(send);
    CompleteOp(recv);
  } else if (kind == kTagAnalyticCollective) {
    FinishCollective(static_cast<int>(payload));
  } else {
    const int id = static_cast<int>(payload >> kRunBits);
    const int r = static_cast<int>(payload & ((1 << kRunBits) - 1));
    Instance& instance = instances_[id];
    if (--instance.runs[r].flows_left > 0) return;
    const RingRun& run = plans_[instance.plan].plan.phases[instance.phase].runs[r];
    if (++instance.runs[r].step < run.steps) {
      StartRunStep(id, r);
      return;
    }
    if (--instance.runs_left > 0) return;
    ++instance.phase;
    StartPhase(id);
  }
}

void Replay::Handle(const Event& event) {
  if (event.kind == kTransferDone) {
    const int send = static_cast<int>(event.a);
    const int recv = ops_[send].partner;
    CompleteOp(send);
    CompleteOp(recv);
  } else if (event.kind == kCollectiveDone) {
    FinishCollective(static_cast<int>(event.a));
  } else if (event.kind == kPhaseDone) {
    const int id = static_cast<int>(event.a);
    Instance& instance = instances_[id];
    // Nothing may follow either call here (their `last`). After its last phase (the common
    // case) the collective ends without StartPhase's search for a next phase.
    if (++instance.phase == static_cast<int>(plans_[instance.plan].plan.phases.size())) {
      EndCollective(id, /*last=*/true);
    } else {
      StartPhase(id, /*last=*/true);
    }
  } else {
    TERASIM_CHECK(false, "unknown replay event kind {}", event.kind);
  }
}

std::vector<int> Replay::CriticalPath() const {
  std::vector<int> path;
  const int last = last_op_ < static_cast<int>(ops_.size()) ? last_op_ : -1;
  for (int i = last; i >= 0 && path.size() <= ops_.size(); i = ops_[i].critical_pred) {
    path.push_back(i);
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<TimeNs> Replay::LinkBusyNs() const {
  // Per channel: the busy time of the closed-form phases, each phase's times its starts.
  std::vector<TimeNs> closed_form(closed_form_phases_ > 0 ? capacity_.size() : 0, 0);
  for (const CachedPlan& cached : plans_) {
    for (const PhaseAlone& alone : cached.alone) {
      if (alone.starts == 0) continue;
      for (const auto& [channel, busy_ns] : alone.busy_ns) {
        closed_form[channel] += busy_ns * alone.starts;
      }
    }
  }
  std::vector<TimeNs> busy(num_links_);
  for (int c = 0; c < num_links_; ++c) {
    const int rep = fold_.LinkRep(c);
    busy[c] = network_->BusyNs(rep) + (closed_form.empty() ? 0 : closed_form[rep]);
  }
  return busy;
}

std::string Replay::WaitReason(int i) const {
  const Op& op = schedule_.ops[i];
  const OpState& s = ops_[i];
  if (s.state == State::kArrived && IsPointToPoint(op.kind)) {
    const char* other = op.kind == OpKind::kSend ? "RECV" : "SEND";
    if (s.partner < 0) {
      return fmt::format("{} with dev {}: no matching {} of tensor {} in the schedule",
                         OpKindName(op.kind), op.peer, other, op.tensor);
    }
    return fmt::format("{} with dev {}: dev {} has not reached {}", OpKindName(op.kind), op.peer,
                       op.peer, schedule_.ops[s.partner].key);
  }
  if (s.state == State::kArrived && IsCollective(op.kind)) {
    const Instance& instance = instances_[s.instance];
    std::vector<int> missing = schedule_.groups[instance.group].ranks;
    for (int k = 0; k < instance.arrived; ++k) {
      const int device = schedule_.ops[members_[instance.member_begin + k]].device;
      missing.erase(std::remove(missing.begin(), missing.end(), device), missing.end());
    }
    return fmt::format("{} on group {}: devs {} have not reached it", OpKindName(op.kind), op.group,
                       fmt::join(missing, ","));
  }
  // Not started: name the unfinished predecessors.
  std::vector<std::string> waiting;
  for (int j = 0; j < static_cast<int>(ops_.size()); ++j) {
    for (int k = succ_begin_[j]; k < succ_begin_[j + 1]; ++k) {
      if (succ_[k] == i && ops_[j].state != State::kDone) waiting.push_back(schedule_.ops[j].key);
    }
  }
  return fmt::format("waits for {}", fmt::join(waiting, ", "));
}

void Replay::ThrowStall() const {
  // Per device: the communication ops that started and wait for a peer; or, when there are
  // none, the first op (in issue order) that never started.
  std::vector<std::vector<int>> arrived(schedule_.devices);
  std::vector<int> first_waiting(schedule_.devices, -1);
  for (int i = 0; i < static_cast<int>(ops_.size()); ++i) {
    const int d = schedule_.ops[i].device;
    if (ops_[i].state == State::kArrived) arrived[d].push_back(i);
    if (ops_[i].state == State::kWaiting && first_waiting[d] < 0) first_waiting[d] = i;
  }
  std::vector<std::string> lines;
  for (int d = 0; d < schedule_.devices; ++d) {
    if (!fold_.IsRep(d)) continue;
    if (arrived[d].empty() && first_waiting[d] >= 0) arrived[d].push_back(first_waiting[d]);
    for (int i : arrived[d]) {
      lines.push_back(
          fmt::format("dev {} waits at {} ({})", d, schedule_.ops[i].key, WaitReason(i)));
    }
  }
  const std::string where = schedule_.source.empty() ? "schedule" : schedule_.source;
  ThrowInput("{}: replay stalled at {} ns with {} of {} ops done: {}", where, engine_.Now(), done_,
             active_ops_, fmt::join(lines, "; "));
}

}  // namespace terasim

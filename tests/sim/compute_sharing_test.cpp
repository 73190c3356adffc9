// ComputeSharing (sim/compute_sharing.h): each GPU's compute as a processor-sharing queue on
// the engine. Alone: the analytic processor-sharing ends. In a replay: every op's start, end
// and critical predecessor as with compute as flows on the flow network's per-GPU channels
// (ReplayOptions::compute_as_flows), for the generator families, shared GPUs and jitter; and
// jobs started directly against the same jobs as flows, where finish events carry joiners while
// their first job is rescheduled.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "schedule/generator.h"
#include "sim/compute_sharing.h"
#include "sim/engine.h"
#include "sim/flow_network.h"
#include "sim/replay.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fake_topology.h"
#include "tests/sim/fold_cases.h"

namespace terasim {
namespace {

// Records (tag, time) of each finished job, in order.
class Done : public FlowListener {
 public:
  explicit Done(const Engine& engine) : engine_(engine) {}
  void OnFlowDone(int64_t tag) override { ends.emplace_back(tag, engine_.Now()); }
  std::vector<std::pair<int64_t, TimeNs>> ends;

 private:
  const Engine& engine_;
};

// Starts (gpu, work_ns, tag) at time `at_ns` of the engine.
class Starter : public EventHandler {
 public:
  Starter(Engine& engine, ComputeSharing& compute) : engine_(engine), compute_(compute) {
    id_ = engine.AddHandler(this);
  }
  void At(TimeNs at_ns, int gpu, TimeNs work_ns, int64_t tag) {
    jobs_.push_back({gpu, work_ns, tag});
    engine_.Schedule(at_ns, id_, 0, static_cast<int64_t>(jobs_.size()) - 1);
  }
  void Handle(const Event& event) override {
    const Job& job = jobs_[event.a];
    compute_.Start(job.gpu, static_cast<double>(job.work_ns), job.tag);
  }

 private:
  struct Job {
    int gpu;
    TimeNs work_ns;
    int64_t tag;
  };
  Engine& engine_;
  ComputeSharing& compute_;
  int id_ = 0;
  std::vector<Job> jobs_;
};

using Ends = std::vector<std::pair<int64_t, TimeNs>>;

// A job started at at_ns.
struct JobAt {
  TimeNs at_ns;
  int gpu;
  TimeNs work_ns;
  int64_t tag;
};

// Runs `jobs` on `gpus` GPUs: (tag, end) of each job, in finishing order; the engine's events
// in *events when given.
Ends RunJobs(int gpus, const std::vector<JobAt>& jobs, int64_t* events = nullptr) {
  Engine engine;
  Done done(engine);
  ComputeSharing compute(engine, gpus, done);
  Starter starter(engine, compute);
  for (const JobAt& job : jobs) starter.At(job.at_ns, job.gpu, job.work_ns, job.tag);
  engine.Run();
  CHECK(compute.JobsStarted() == static_cast<int64_t>(jobs.size()));
  if (events != nullptr) *events = engine.EventsProcessed();
  return done.ends;
}

TEST_CASE("A job alone on its GPU ends at start + work; zero work ends at its start") {
  int64_t events = 0;
  // Job 2 (no work) at 20; job 1 alone at full speed: 10 + 1234567.
  CHECK(RunJobs(2, {{10, 0, 1234567, 1}, {20, 1, 0, 2}}, &events) == Ends{{2, 20}, {1, 1234577}});
  // One finish event per job (and the two starts): no recomputation.
  CHECK(events == 4);
}

TEST_CASE("Jobs on one GPU share it equally; other GPUs do not slow them") {
  // Jobs 1 and 2 at half speed: job 2 ends at 2 x 60 = 120, when job 1 has done 60 of 100; its
  // last 40 alone: 160. Job 3 alone on GPU 1: 100.
  CHECK(RunJobs(2, {{0, 0, 100, 1}, {0, 0, 60, 2}, {0, 1, 100, 3}}) ==
        Ends{{3, 100}, {2, 120}, {1, 160}});
}

TEST_CASE("A job joining a busy GPU halves the speed of the one there from then on") {
  // Job 1: 50 alone, its last 50 at half speed: ends at 150. Job 2 has then done 50 of 100; the
  // rest alone: 200. Job 3 alone: 330.
  CHECK(RunJobs(1, {{0, 0, 100, 1}, {50, 0, 100, 2}, {300, 0, 30, 3}}) ==
        Ends{{1, 150}, {2, 200}, {3, 330}});
}

TEST_CASE("Three jobs on one GPU: each at a third, then a half, then alone") {
  // All at 1/3 until job 1 is done: 90; jobs 2 and 3 have 30 and 60 left, at 1/2: job 2 ends
  // at 90 + 60 = 150; job 3 has 30 left alone: 180.
  CHECK(RunJobs(1, {{0, 0, 30, 1}, {0, 0, 60, 2}, {0, 0, 90, 3}}) ==
        Ends{{1, 90}, {2, 150}, {3, 180}});
}

TEST_CASE("Jobs ending at one ns finish in the order they were scheduled") {
  CHECK(RunJobs(3, {{0, 2, 100, 1}, {0, 0, 100, 2}, {50, 1, 50, 3}}) ==
        Ends{{1, 100}, {2, 100}, {3, 100}});
}

// The same jobs as flows of one unit each through a channel per GPU (capacity 1e9 ns of work
// per s, no latency): the reference ComputeSharing reproduces bit for bit.
Ends RunFlows(int gpus, const std::vector<JobAt>& jobs) {
  Engine engine;
  Done done(engine);
  FlowNetwork network(engine, std::vector<double>(static_cast<size_t>(gpus), 1e9), done);
  // Starts each job at its time, as Starter does for ComputeSharing.
  class FlowStarter : public EventHandler {
   public:
    FlowStarter(Engine& engine, FlowNetwork& network, const std::vector<JobAt>& jobs)
        : network_(network), jobs_(jobs) {
      const int id = engine.AddHandler(this);
      for (size_t k = 0; k < jobs.size(); ++k) {
        engine.Schedule(jobs[k].at_ns, id, 0, static_cast<int64_t>(k));
      }
    }
    void Handle(const Event& event) override {
      const JobAt& job = jobs_[event.a];
      const std::vector<int> route =
          job.work_ns > 0 ? std::vector<int>{job.gpu} : std::vector<int>{};
      network_.StartFlow(route, static_cast<double>(job.work_ns), 0, job.tag);
    }

   private:
    FlowNetwork& network_;
    const std::vector<JobAt>& jobs_;
  };
  FlowStarter starter(engine, network, jobs);
  engine.Run();
  return done.ends;
}

TEST_CASE("A job rescheduled while its earlier finish event, joined by another, is pending") {
  // Jobs 1, 2 (100 each) and 3 (20) at 0 on one GPU: each at a third; 1 and 2 due at 300 in one
  // event (2 joins 1's), 3 at 60. Then 1 and 2 at a half with 80 left: due at 60 + 160 = 220,
  // again in one event carried by job 1 while its event of 300 still waits (the second joined
  // event of one job at once). At 221, jobs 4 (10), 5 and 6 (40 each) reuse the slots of 2, 1
  // and 3 (the last freed first): each at a third, 4 due at 251, 5 and 6 at 341 in one event
  // carried by 1's old slot, whose event of 300 (stale, with stale job 2 joined) still waits.
  // At 251 job 4 is done; 5 and 6 have 30 left at a half: 311, again one event of that slot.
  const std::vector<JobAt> jobs = {{0, 0, 100, 1},  {0, 0, 100, 2},  {0, 0, 20, 3},
                                   {221, 0, 10, 4}, {221, 0, 40, 5}, {221, 0, 40, 6}};
  const Ends expected = {{3, 60}, {1, 220}, {2, 220}, {4, 251}, {5, 311}, {6, 311}};
  CHECK(RunJobs(1, jobs) == expected);
  CHECK(RunFlows(1, jobs) == expected);
  // Jobs 7 on GPU 0 and 8 on GPU 1 (100 each, both alone) at 0: due at 100 in one event, 8
  // joined to 7's. At 50, job 9 (50) joins GPU 0: 7 and 9 at a half, 50 left each, due at 150
  // in one event carried by 7 while its event of 100 waits, with job 8 (still live) joined.
  const std::vector<JobAt> other_gpu = {{0, 0, 100, 7}, {0, 1, 100, 8}, {50, 0, 50, 9}};
  const Ends other_expected = {{8, 100}, {7, 150}, {9, 150}};
  CHECK(RunJobs(2, other_gpu) == other_expected);
  CHECK(RunFlows(2, other_gpu) == other_expected);
}

TEST_CASE("Jobs rescheduled while joined finish events are pending: the same as flows") {
  // Works and start times on one coarse grid, so that many jobs are due at one time and finish
  // events carry joiners (on other GPUs too) while their first job is rescheduled or its slot
  // reused; every end and the finishing order as with the jobs as flows. One job starts per
  // instant: ComputeSharing gives a job alone on an idle GPU its finish at its start even when
  // other starts are due at that instant, where the flow network recomputes (its channel then
  // comes first in the recomputation's order), so jobs of several GPUs started at one instant
  // may end at one ns in another order than as flows.
  std::mt19937 rng(11);
  for (int round = 0; round < 400; ++round) {
    const int gpus = 1 + round % 4;
    std::vector<JobAt> jobs;
    const int n = 4 + static_cast<int>(rng() % 30);
    for (int k = 0; k < n; ++k) {
      jobs.push_back({static_cast<TimeNs>(k) * 50, static_cast<int>(rng() % gpus),
                      static_cast<TimeNs>(rng() % 5) * 50, k});
    }
    INFO("round " << round);
    const Ends ends = RunJobs(gpus, jobs);
    REQUIRE(ends.size() == jobs.size());
    CHECK(ends == RunFlows(gpus, jobs));
  }
}

using testing::FakeCost;
using testing::FoldOptions;

// Replays `schedule` with compute in ComputeSharing and as flows; every op's times and critical
// predecessor, the iteration's end and every link's busy time must be equal. Returns the end.
TimeNs RequireSameAsFlows(const Schedule& schedule, const NetworkTopology& topology,
                          ReplayOptions options) {
  const FakeCost cost(3, 5, 7);
  options.compute_as_flows = false;
  Replay sharing(schedule, topology, cost, options);
  sharing.Run();
  options.compute_as_flows = true;
  Replay flows(schedule, topology, cost, options);
  flows.Run();
  REQUIRE(sharing.EndNs() == flows.EndNs());
  REQUIRE(sharing.EndNs() > 0);
  int differ = 0;
  for (int i = 0; i < static_cast<int>(schedule.ops.size()); ++i) {
    if (sharing.StartNs(i) != flows.StartNs(i) || sharing.EndNs(i) != flows.EndNs(i) ||
        sharing.CriticalPredecessor(i) != flows.CriticalPredecessor(i)) {
      ++differ;
    }
  }
  CHECK(differ == 0);
  CHECK(sharing.CriticalPath() == flows.CriticalPath());
  CHECK(sharing.LinkBusyNs() == flows.LinkBusyNs());
  // The compute flows are gone from the flow network.
  int compute_ops = 0;
  for (int i = 0; i < static_cast<int>(schedule.ops.size()); ++i) {
    if (sharing.WorkOf()[i] >= 0 && sharing.Fold().IsRep(sharing.DeviceOf(i))) ++compute_ops;
  }
  CHECK(flows.Flows() - sharing.Flows() == compute_ops);
  return sharing.EndNs();
}

std::vector<Strategy> Families() {
  return {Strategy::kGpipe, Strategy::kOneFOneB,      Strategy::kInterleaved, Strategy::kTeraPipe,
          Strategy::kZbH1,  Strategy::kInterleavedZb, Strategy::kZbV,         Strategy::kDualPipeV};
}

TEST_CASE("Replays with ComputeSharing equal those with compute as flows: generator families") {
  const testing::FakeTopology topology = testing::TwoNodes();
  for (Strategy strategy : Families()) {
    const Schedule schedule = Generate(FoldOptions(strategy, 2, 2, 2));
    for (NetworkMode network : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
      for (bool fold : {false, true}) {
        INFO(StrategyName(strategy) << " " << NetworkModeName(network) << " fold " << fold);
        ReplayOptions options;
        options.network = network;
        options.fold = fold;
        RequireSameAsFlows(schedule, topology, options);
      }
    }
  }
}

TEST_CASE("Replays with ComputeSharing equal those with compute as flows: shared GPUs, jitter") {
  // Two devices per GPU (their compute shares it), and devices of unequal speeds, so that jobs
  // join and leave busy GPUs at every kind of moment; over the two-node network and over free
  // communication.
  const testing::FakeTopology two_nodes = testing::TwoNodes();
  const testing::FakeTopology free = testing::FreeTopology(8);
  for (Strategy strategy : Families()) {
    const Schedule schedule = Generate(FoldOptions(strategy, 2, 2, 2));
    for (const NetworkTopology* topology : {&two_nodes, &free}) {
      TimeNs end_ns[2] = {0, 0};
      for (bool shared : {false, true}) {
        INFO(StrategyName(strategy) << " shared " << shared << " free " << (topology == &free));
        ReplayOptions options;
        options.device_speed = {1.0, 1.13, 0.91, 1.07, 0.97, 1.21, 1.0, 0.88};
        if (shared) options.placement = {0, 1, 2, 3, 0, 1, 2, 3};
        end_ns[shared] = RequireSameAsFlows(schedule, *topology, options);
      }
      // With free communication, sharing GPUs can only slow the iteration down: the two
      // replicas' compute did run at once on one GPU.
      if (topology == &free) CHECK(end_ns[1] > end_ns[0]);
    }
  }
}

}  // namespace
}  // namespace terasim

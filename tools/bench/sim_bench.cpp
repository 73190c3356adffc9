// terasim_sim_bench: the simulation core and the slicing planner at the scale people plan for
// (issue #12). Prints one table: per configuration the ops, events and flows of the replay, the
// wall and CPU time of the measured part, events per second and the process's peak resident
// memory. Each row runs in its own forked process, so that its peak RSS is its own. A benchmark,
// not a test: it asserts nothing and is not run by ctest.
//
//   terasim_sim_bench [--full] [--only SUBSTRING]
//
// Rows (the measured part in brackets):
//   175b-terapipe-{flow,analytic}  gpt3-175b TeraPipe dp1 pp48 tp8, 16 slices per sequence,
//                                  batch 2, p3.16xlarge:48, generated as representatives only
//                                  (GenerateForSimulation: tp ranks 0, 2, 4, 6)    [Simulate]
//   175b-terapipe-flow-steps       the same, collectives replayed ring step by ring step
//                                  (CollectiveOptions::step_by_step, the replay before issue 12)
//   175b-terapipe-flow-whole       the whole schedule, folded by SymmetryFold::Find [Simulate]
//   175b-terapipe-flow-auto        SimulateGenerated              [Generate + Simulate]
//   1t-{1f1b,interleaved}-dpD-bB   gpt3-1t tp8 pp64 on p4d.24xlarge:384, micro-batch 1: the
//                                  scaled-down dp1 batch 64 by default; --full adds the issue's
//                                  target dp6 batch 3072                          [Simulate]
//   fold-1t-...-{on,off}           the 1T rows with data-parallel replicas, folded or not
//                                  (AddFoldRows)                                   [Simulate]
//   1t-{1f1b,interleaved}-dp6-b3072-reps   the target dp6 batch 3072 generated as
//                                  representatives only (tp rank 0 of replica 0) [Simulate];
//                                  -auto: SimulateGenerated picks them   [Generate + Simulate]
//   check-<N>ops                   ReadPir + CheckSchedule of a generated .pir text  [both]
//   plan-<setting>                 PlanSlicing at granularity 1 for each Table-1 setting
//                                  (tools/data/paper_settings.json)                 [PlanSlicing]
// Generation and loading are left out of the times (they are reported as "prep s").
// Each simulation row's note ends with a digest of its result (every device's fractions, every
// link's bytes and busy time, the critical path, the iteration time): equal digests before and
// after a change mean byte-identical figures. --only NAME$ (a trailing $) runs that row alone.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/device_spec.h"
#include "models/json_reader.h"
#include "models/model_card.h"
#include "models/roofline_cost.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/pir_format.h"
#include "schedule/slicing_planner.h"
#include "schedule/stage_cost.h"
#include "sim/simulator.h"
#include "topologies/topology.h"

namespace terasim {
namespace {

struct Row {
  std::string name;
  long long ops = 0;
  long long events = 0;
  long long flows = 0;
  double prep_s = 0;
  double wall_s = 0;
  double cpu_s = 0;
  std::string note;
};

double CpuNow() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double WallNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// FNV-1a over the result's figures (see the header): a before/after identity check.
uint64_t ResultDigest(const SimResult& result) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * 1099511628211ULL;
  };
  for (const DeviceResult& d : result.devices) {
    mix(&d.compute_fraction, sizeof d.compute_fraction);
    mix(&d.comm_fraction, sizeof d.comm_fraction);
    mix(&d.idle_fraction, sizeof d.idle_fraction);
  }
  for (const LinkResult& l : result.links) {
    mix(&l.link, sizeof l.link);
    mix(&l.bytes, sizeof l.bytes);
    mix(&l.busy_ns, sizeof l.busy_ns);
  }
  for (const std::string& key : result.critical_path) mix(key.data(), key.size());
  mix(&result.iteration_time_ns, sizeof result.iteration_time_ns);
  return h;
}

// Times `body` (wall and process CPU) into row.
template <typename F>
void Measure(Row& row, F&& body) {
  const double w0 = WallNow(), c0 = CpuNow();
  body();
  row.wall_s = WallNow() - w0;
  row.cpu_s = CpuNow() - c0;
}

Row SimRow(const std::string& name, const GenerateOptions& gen, const std::string& cluster_spec,
           NetworkMode network, bool fold = true, bool step_by_step = false,
           bool auto_representatives = false, bool representatives = false) {
  Row row;
  row.name = name;
  const double p0 = WallNow();
  const Cluster cluster = BuildCluster(cluster_spec);
  const ClusterTopology topology(cluster);
  const DeviceSpec device = LoadDeviceSpec(cluster.Instance().device);
  const RooflineCostModel cost(gen.model, device);
  SimOptions options;
  options.network = network;
  options.collectives = LoadCollectiveOptions(DefaultCollectiveOptionsPath());
  options.collectives.step_by_step = step_by_step;
  options.model = &gen.model;
  options.fold = fold;
  options.trace_rows = false;  // the figures only: no per-op rows
  SimResult result;
  if (auto_representatives) {
    // Generation and the tp ranks tried are in the measured part (SimulateGenerated).
    row.prep_s = WallNow() - p0;
    Measure(row, [&] { result = SimulateGenerated(gen, topology, cost, options); });
    row.ops = static_cast<long long>(result.ops);
  } else {
    const Schedule schedule =
        representatives ? GenerateForSimulation(gen, topology, cost, options) : Generate(gen);
    row.prep_s = WallNow() - p0;
    row.ops = static_cast<long long>(schedule.ops.size());
    Measure(row, [&] { result = Simulate(schedule, topology, cost, options); });
  }
  row.events = result.events;
  row.flows = result.flows;
  row.note =
      fmt::format("iter {:.6f} s, fold {}, digest {:016x}", NsToSeconds(result.iteration_time_ns),
                  result.fold_order, ResultDigest(result));
  return row;
}

GenerateOptions TeraPipe175b() {
  GenerateOptions gen;
  gen.model = LoadModelCard("gpt3-175b");
  gen.strategy = Strategy::kTeraPipe;
  gen.dp = 1;
  gen.pp = 48;
  gen.tp = 8;
  gen.microbatches = 2;
  gen.uniform_slices = 16;
  return gen;
}

GenerateOptions OneT(Strategy strategy, int dp, int batch) {
  GenerateOptions gen;
  gen.model = LoadModelCard("gpt3-1t");
  gen.strategy = strategy;
  gen.dp = dp;
  gen.pp = 64;
  gen.tp = 8;
  gen.microbatches = batch / dp;
  gen.microbatch_size = 1;
  gen.virtual_stages = strategy == Strategy::kInterleaved ? 2 : 1;
  return gen;
}

Row CheckRow(const GenerateOptions& gen) {
  Row row;
  const double p0 = WallNow();
  const std::string text = WritePir(Generate(gen));
  row.prep_s = WallNow() - p0;
  size_t diagnostics = 0;
  Measure(row, [&] {
    const Schedule schedule = ReadPir(text, "bench.pir");
    row.ops = static_cast<long long>(schedule.ops.size());
    diagnostics = CheckSchedule(schedule).size();
  });
  row.name = fmt::format("check-{}kops", row.ops / 1000);
  row.note = fmt::format("{} diagnostics, {} MB text", diagnostics, text.size() >> 20);
  return row;
}

Row PlanRow(const nlohmann::json& setting) {
  Row row;
  row.name = "plan-" + setting["setting"].get<std::string>();
  const double p0 = WallNow();
  const ModelCard model = LoadModelCard(setting["model"].get<std::string>());
  const Cluster cluster =
      BuildCluster(fmt::format("p3.16xlarge:{}", setting["instances"].get<int>()));
  const DeviceSpec device = LoadDeviceSpec(cluster.Instance().device);
  const RooflineCostModel roofline(model, device);
  const StageShape shape{setting["pp"].get<int>(), setting["tp"].get<int>(),
                         Boundary::kPointToPoint};
  const StageCost stage(model, roofline, cluster, shape);
  const int batch = setting["batch"].get<int>() / setting["dp"].get<int>();
  row.prep_s = WallNow() - p0;
  SlicingPlan plan;
  Measure(row, [&] {
    plan = PlanSlicing({model.sequence, shape.pp, batch, 1, {}, false}, stage.AsSliceCost());
  });
  row.note = fmt::format("T {:.0f} ns, {} bounds, {} mb", plan.latency, plan.bounds_tried,
                         plan.microbatches.size());
  return row;
}

// Symmetry folding (sim/symmetry_fold.h): the 1T configuration with data-parallel replicas,
// folded and not (--no-fold), so that the table shows what folding saves; the note has the
// fold order and the iteration time (equal on and off). --full adds dp6 with 16 micro-batches
// per replica, on and off (the target's batch 3072 is 31 M ops: its Schedule alone does not fit
// in memory until the generator emits one replica).
void AddFoldRows(std::vector<std::pair<std::string, std::function<Row()>>>& rows, bool full) {
  struct FoldCase {
    int dp, batch;
    bool fold;
  };
  std::vector<FoldCase> cases = {{2, 32, true}, {2, 32, false}};
  if (full) {
    cases.push_back({6, 96, true});
    cases.push_back({6, 96, false});
  }
  for (const FoldCase& c : cases) {
    for (Strategy s : {Strategy::kOneFOneB, Strategy::kInterleaved}) {
      const std::string name = fmt::format("fold-1t-{}-dp{}-b{}-{}", StrategyName(s), c.dp, c.batch,
                                           c.fold ? "on" : "off");
      rows.emplace_back(name, [=] {
        Row row =
            SimRow(name, OneT(s, c.dp, c.batch), "p4d.24xlarge:384", NetworkMode::kFlow, c.fold);
        return row;
      });
    }
  }
}

// Runs `make` in a child process and prints its row with the child's peak RSS.
void RunForked(const std::function<Row()>& make) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    try {
      const Row row = make();
      rusage usage{};
      getrusage(RUSAGE_SELF, &usage);
      const double events_per_s = row.cpu_s > 0 ? row.events / row.cpu_s : 0;
      std::printf("%-28s %9lld %11lld %10lld %8.3f %9.4f %9.4f %10.3g %8.1f  %s\n",
                  row.name.c_str(), row.ops, row.events, row.flows, row.prep_s, row.wall_s,
                  row.cpu_s, events_per_s, usage.ru_maxrss / 1024.0, row.note.c_str());
    } catch (const std::exception& e) {
      std::printf("error: %s\n", e.what());
      code = 1;
    }
    std::fflush(stdout);
    _exit(code);
  }
  int status = 0;
  waitpid(pid, &status, 0);
}

}  // namespace
}  // namespace terasim

int main(int argc, char** argv) {
  using namespace terasim;
  bool full = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--full") {
      full = true;
    } else if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: terasim_sim_bench [--full] [--only SUBSTRING]\n");
      return 2;
    }
  }
  std::vector<std::pair<std::string, std::function<Row()>>> rows;
  rows.emplace_back("175b-terapipe-flow", [] {
    return SimRow("175b-terapipe-flow", TeraPipe175b(), "p3.16xlarge:48", NetworkMode::kFlow,
                  /*fold=*/true, /*step_by_step=*/false, /*auto_representatives=*/false,
                  /*representatives=*/true);
  });
  rows.emplace_back("175b-terapipe-flow-steps", [] {
    return SimRow("175b-terapipe-flow-steps", TeraPipe175b(), "p3.16xlarge:48", NetworkMode::kFlow,
                  /*fold=*/true, /*step_by_step=*/true, /*auto_representatives=*/false,
                  /*representatives=*/true);
  });
  rows.emplace_back("175b-terapipe-analytic", [] {
    return SimRow("175b-terapipe-analytic", TeraPipe175b(), "p3.16xlarge:48",
                  NetworkMode::kAnalytic, /*fold=*/true, /*step_by_step=*/false,
                  /*auto_representatives=*/false, /*representatives=*/true);
  });
  rows.emplace_back("175b-terapipe-flow-whole", [] {
    return SimRow("175b-terapipe-flow-whole", TeraPipe175b(), "p3.16xlarge:48", NetworkMode::kFlow);
  });
  rows.emplace_back("175b-terapipe-flow-auto", [] {
    return SimRow("175b-terapipe-flow-auto", TeraPipe175b(), "p3.16xlarge:48", NetworkMode::kFlow,
                  /*fold=*/true, /*step_by_step=*/false, /*auto_representatives=*/true);
  });
  std::vector<std::pair<int, int>> one_t = {{1, 64}};  // (dp, batch)
  if (full) one_t.emplace_back(6, 3072);
  for (const auto& [dp, batch] : one_t) {
    for (Strategy s : {Strategy::kOneFOneB, Strategy::kInterleaved}) {
      for (NetworkMode n : {NetworkMode::kFlow, NetworkMode::kAnalytic}) {
        const std::string name = fmt::format("1t-{}-dp{}-b{}-{}", StrategyName(s), dp, batch,
                                             n == NetworkMode::kFlow ? "flow" : "ana");
        rows.emplace_back(name,
                          [=] { return SimRow(name, OneT(s, dp, batch), "p4d.24xlarge:384", n); });
      }
    }
  }
  AddFoldRows(rows, full);
  // The target, dp6 batch 3072 (31 M ops whole), generated as representatives only
  // (GenerateOptions::representatives_only): replica 0's tp rank 0 (p4d's NIC per GPU pair
  // carries the pair's transfers by multiplicity under the tp rotation by 1); "-auto" lets
  // SimulateGenerated find that, generation included in its times.
  for (Strategy s : {Strategy::kOneFOneB, Strategy::kInterleaved}) {
    const std::string name = fmt::format("1t-{}-dp6-b3072-reps", StrategyName(s));
    rows.emplace_back(name, [=] {
      GenerateOptions gen = OneT(s, 6, 3072);
      gen.representatives_only = true;
      gen.representative_tp_ranks = 1;
      return SimRow(name, gen, "p4d.24xlarge:384", NetworkMode::kFlow);
    });
    rows.emplace_back(name + "-auto", [=] {
      return SimRow(name + "-auto", OneT(s, 6, 3072), "p4d.24xlarge:384", NetworkMode::kFlow,
                    /*fold=*/true, /*step_by_step=*/false, /*auto_representatives=*/true);
    });
  }
  // About 1M ops: the 1T 1F1B shape (512 devices, about 20 ops per device per micro-batch) with
  // 100 micro-batches.
  rows.emplace_back("check", [] { return CheckRow(OneT(Strategy::kOneFOneB, 1, 100)); });
  const std::string settings_path = DataRoot() + "/tools/data/paper_settings.json";
  const nlohmann::json settings = ParseJson(ReadTextFile(settings_path), settings_path);
  for (const nlohmann::json& s : settings["settings"]) {
    rows.emplace_back("plan-" + s["setting"].get<std::string>(), [s] { return PlanRow(s); });
  }

  std::printf("%-28s %9s %11s %10s %8s %9s %9s %10s %8s  %s\n", "configuration", "ops", "events",
              "flows", "prep s", "wall s", "cpu s", "events/s", "RSS MB", "note");
  for (const auto& [name, make] : rows) {
    if (!only.empty() && only.back() == '$') {
      if (name != only.substr(0, only.size() - 1)) continue;  // --only NAME$: that row alone
    } else if (!only.empty() && name.find(only) == std::string::npos) {
      continue;
    }
    RunForked(make);
  }
  return 0;
}

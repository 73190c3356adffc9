// The simulator's front door: replay one training iteration of a Schedule on a cluster and
// report what DESIGN.md section 5 asks for: iteration time, per-device compute /
// communication / idle (bubble) fractions, bytes and utilization per link, the critical path,
// peak memory per device, model TFLOP/s per GPU, and a Trace with one row per op.
//
// Other folders include only this header. Simulate is a pure function of its inputs (same
// inputs -> same result, except wall_time_s); thread-safe as long as the inputs are not
// modified meanwhile.
#pragma once

#include <string>
#include <vector>

#include "models/compute_cost.h"
#include "models/model_card.h"
#include "models/units.h"
#include "schedule/generator.h"
#include "schedule/schedule_ir.h"
#include "sim/cluster_topology.h"
#include "sim/collective_plan.h"
#include "sim/network_topology.h"
#include "sim/replay.h"
#include "traces/trace.h"

namespace terasim {

struct SimOptions {
  NetworkMode network = NetworkMode::kFlow;
  std::vector<int> placement;  // GPU of each device; empty: device d on GPU d
  CollectiveOptions collectives;
  // The model, for the FLOPs of each op (trace rows, TFLOP/s); nullptr: FLOPs are 0.
  const ModelCard* model = nullptr;
  // Peak memory per device from a memory estimate, copied into the result (empty: unknown).
  std::vector<Bytes> peak_memory_bytes;
  bool record_link_rates = false;  // keep every link's rate changes (for counter tracks)
  // Per op: measured compute durations replacing the cost model (ReplayOptions::compute_ns).
  std::vector<TimeNs> compute_ns;
  // Per device: multiplies its compute durations (ReplayOptions::device_speed).
  std::vector<double> device_speed;
  // Simulate each class of identical devices once (sim/symmetry_fold.h) when the run is
  // symmetric; the result is expanded to every device. Off with record_link_rates. A schedule
  // holding only the representatives (Schedule::symmetry) is folded whatever this says, and
  // refused (InputError) with record_link_rates or an input that breaks
  // its declared symmetry; its trace has the representatives' rows only.
  bool fold = true;
  // Build result.trace.rows (one per op, each with its key and stream as strings: about 150
  // bytes an op). Off for a caller that reads only the figures; result.model_flops and
  // result.ops do not depend on it.
  bool trace_rows = true;
};

struct DeviceResult {
  int device = 0;
  int gpu = 0;
  double compute_fraction = 0;
  double comm_fraction = 0;  // exposed communication
  double idle_fraction = 0;  // bubble
  Bytes peak_memory_bytes = 0;
};

struct LinkResult {
  int link = 0;
  std::string name;
  double bytes = 0;
  double utilization = 0;  // bytes / (bandwidth x iteration time)
  TimeNs busy_ns = 0;      // time with at least one flow (flow mode)
};

struct LinkRateSample {
  TimeNs time_ns = 0;
  int link = 0;
  double bytes_per_s = 0;
};

struct SimResult {
  NetworkMode network = NetworkMode::kFlow;
  TimeNs iteration_time_ns = 0;
  double bubble_fraction = 0;   // mean idle fraction over devices
  Flops model_flops = 0;        // of the whole iteration, over all GPUs
  double tflops_per_gpu = 0;    // model_flops / (iteration time x devices) / 1e12
  Bytes peak_memory_bytes = 0;  // the largest device's (0 when unknown)
  std::vector<DeviceResult> devices;
  std::vector<LinkResult> links;           // links that carried bytes, by id
  std::vector<std::string> critical_path;  // op keys, first to last
  std::vector<LinkRateSample> link_rates;  // when record_link_rates
  Trace trace;                             // one row per op (SimOptions::trace_rows)
  int64_t ops = 0;                         // ops simulated: the rows a trace has
  int fold_order = 1;     // devices each simulated device stood for (1: not folded)
  std::string fold_note;  // why a candidate symmetry was refused ("" when none was)
  int64_t events = 0;
  int64_t flows = 0;  // flows started in the flow network (not compute: ComputeSharing)
  // Analytic mode: the fraction of link bytes that met staggered contention, which the flow
  // mode models and the analytic mode cannot (Replay::StaggeredFraction).
  double analytic_staggered_fraction = 0;
  double wall_time_s = 0;
};

// Replays `schedule` on `topology` with compute times from `cost`. Throws InputError on a
// schedule that does not fit the cluster or a replay that stalls (naming each blocked device
// and the op it waits on).
SimResult Simulate(const Schedule& schedule, const NetworkTopology& topology,
                   const ComputeCostModel& cost, const SimOptions& options = {});

// Generates `gen` and simulates it, holding only the representatives' ops where the declared
// symmetry holds (GenerateOptions::representatives_only; memory and time grow with one
// replica's representative tp ranks, not the cluster): replica 0 with the tp ranks of
// RepresentativeTpSet present; else (link rates, no fold, a slow device, measured durations,
// an asymmetric placement) the whole schedule. The result is Simulate's of the schedule it ran
// (its trace has the representatives' rows only when folded that way); a representatives-only
// schedule is generated with its keys apart (GenerateForReplay: no string per op), and again
// with them where its replay throws, for the message. The collective plans that
// RepresentativeTpSet's checks compute are the replay's (one PlanCache: sim/plan_cache.h).
// Throws InputError as Generate and Simulate do.
SimResult SimulateGenerated(const GenerateOptions& gen, const NetworkTopology& topology,
                            const ComputeCostModel& cost, const SimOptions& options = {});
// The tp ranks of replica 0 (ascending, 0 first) a representatives-only schedule of `gen` keeps
// for `options`, or empty when the whole schedule must run: {0} where the rotation by one tp
// rank holds (p4d.24xlarge), else the orbit representatives of the largest fold
// (SymmetryFold::DeclaredLargest: 0, 1 for a rotation by 2; 0, 2, 4, 6 for p3.16xlarge's
// socket-pair permutation), else with D >= 2 every tp rank 0..T-1 where the replica shift
// alone holds (replica 0 whole). Its fold order is then dp x tp / size.
std::vector<int> RepresentativeTpSet(const GenerateOptions& gen, const NetworkTopology& topology,
                                     const ComputeCostModel& cost, const SimOptions& options = {});
// `gen` generating only the representatives with tp ranks `tp_ranks` of replica 0
// (representative_tp_ranks for 0..n-1, else representative_tp_set); `gen` itself when empty.
GenerateOptions RepresentativeOptions(const GenerateOptions& gen, const std::vector<int>& tp_ranks);
// The schedule SimulateGenerated runs: representatives only where the declared symmetry holds
// for `options`, else the whole schedule.
Schedule GenerateForSimulation(const GenerateOptions& gen, const NetworkTopology& topology,
                               const ComputeCostModel& cost, const SimOptions& options = {});

}  // namespace terasim

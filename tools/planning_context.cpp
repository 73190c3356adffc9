#include "tools/planning_context.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "models/errors.h"
#include "sim/analytic_network.h"
#include "sim/collective_plan.h"
#include "tools/cli.h"

namespace terasim::cli {

namespace {

// Checked before anything is loaded: a bare instance name would silently mean one instance.
const std::string& CountedCluster(const std::string& spec) {
  RequireInstanceCount(spec);
  return spec;
}

}  // namespace

void AddJobsOption(po::options_description& options) {
  const int threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  options.add_options()(
      "jobs", po::value<int>()->default_value(threads, "hardware threads"),
      "strategy families searched at once, each on its own thread (same results for any N)");
}

int ReadJobs(const po::variables_map& vm) {
  const int jobs = vm["jobs"].as<int>();
  if (jobs < 1) ThrowInput("--jobs {}: must be >= 1", jobs);
  return jobs;
}

PlanningContext::PlanningContext(const PlanningInputs& inputs)
    : model_(LoadModelCard(inputs.model)),
      cluster_(BuildCluster(CountedCluster(inputs.cluster), inputs.cluster_options)),
      device_(LoadDeviceSpec(cluster_.Instance().device)),
      roofline_(std::make_unique<RooflineCostModel>(model_, device_)),
      topology_(std::make_unique<ClusterTopology>(cluster_)),
      network_(inputs.network),
      fold_(inputs.fold),
      routes_(std::make_unique<RouteCache>(*topology_)) {
  std::string path = inputs.collectives;
  if (!path.empty() && path[0] != '/') path = DataRoot() + "/" + path;
  collectives_ = LoadCollectiveOptions(path);
}

SimOptions PlanningContext::Options(const MemoryEstimate* memory) const {
  SimOptions options;
  options.network = network_;
  options.collectives = collectives_;
  options.model = &model_;
  options.fold = fold_;
  if (memory != nullptr) {
    for (const DeviceMemory& m : memory->devices) options.peak_memory_bytes.push_back(m.peak);
  }
  return options;
}

SimResult PlanningContext::Evaluate(const Schedule& schedule, const MemoryEstimate* memory) const {
  return Simulate(schedule, *topology_, *roofline_, Options(memory));
}

FoldedGeneration PlanningContext::FoldForEvaluation(const GenerateOptions& gen) const {
  // GenerateForSimulation's choice, kept instead of generated.
  const std::vector<int> ranks = RepresentativeTpSet(gen, *topology_, *roofline_, Options(nullptr));
  FoldedGeneration out{RepresentativeOptions(gen, ranks), 1};
  // The tp ranks the generator writes: with a broadcast boundary it declares no tp rotation
  // (schedule/generator.h representatives_only) and writes every tp rank of replica 0, even
  // where the probe folded with tp rank 0 alone.
  const int written_tp =
      gen.boundary == Boundary::kPointToPoint ? static_cast<int>(ranks.size()) : gen.tp;
  if (!ranks.empty()) out.order = gen.dp * (gen.tp / written_tp);
  // Replica 0 whole (every tp rank): the op budget as without a fold (FoldedGeneration).
  out.budget_order = gen.tp > 1 && written_tp == gen.tp ? 1 : out.order;
  return out;
}

void PlanningContext::SetFoldedGeneration(SearchRequest& request) const {
  request.fold = [this](const GenerateOptions& gen) { return FoldForEvaluation(gen); };
}

void PlanningContext::SetNetworkBounds(SearchRequest& request) const {
  // Memoized: the search asks for the same collectives and transfers for every recipe variant
  // of a configuration, and each answer is a pure function of its arguments.
  using CollectiveKey = std::tuple<OpKind, std::vector<int>, Bytes>;
  // The three callbacks under one lock (their memos and the route cache they share): the search
  // may ask from several threads at once (SearchRequest::jobs).
  auto mutex = std::make_shared<std::mutex>();
  auto collectives = std::make_shared<std::map<CollectiveKey, double>>();
  request.collective_ns = [this, collectives, mutex](OpKind kind, const std::vector<int>& gpus,
                                                     Bytes bytes) {
    std::lock_guard<std::mutex> lock(*mutex);
    CollectiveKey key{kind, gpus, bytes};
    auto at = collectives->find(key);
    if (at != collectives->end()) return at->second;
    const CollectivePlan plan =
        PlanCollective(kind, gpus, gpus.front(), bytes, *topology_, collectives_);
    // 0.999: the flow replay rounds each step to whole ns.
    const double ns = 0.999 * static_cast<double>(AnalyticPlanNs(plan, *routes_));
    collectives->emplace(std::move(key), ns);
    return ns;
  };
  // Per collective planned alone: the bytes it moves over each link (a run's aggregate flow
  // moves steps x bytes_per_flow over every hop's links, a link crossed by k hops k times);
  // and every answer, by its loads (the search asks the same for each recipe variant).
  using LinkBytes = std::vector<std::pair<int, double>>;
  using LoadKey = std::vector<std::tuple<OpKind, std::vector<int>, Bytes, double>>;
  struct LinkLoads {
    std::map<CollectiveKey, LinkBytes> planned;
    std::map<LoadKey, double> answers;
    std::vector<double> total;  // per link, zero between calls
    std::vector<int> touched;
  };
  auto state = std::make_shared<LinkLoads>();
  state->total.assign(topology_->Links().size(), 0.0);
  request.busiest_link_ns = [this, state, mutex](const std::vector<CollectiveLoad>& loads) {
    std::lock_guard<std::mutex> lock(*mutex);
    LoadKey key;
    for (const CollectiveLoad& load : loads) {
      key.emplace_back(load.kind, load.gpus, load.bytes, load.count);
    }
    auto answered = state->answers.find(key);
    if (answered != state->answers.end()) return answered->second;
    for (const CollectiveLoad& load : loads) {
      CollectiveKey one{load.kind, load.gpus, load.bytes};
      auto at = state->planned.find(one);
      if (at == state->planned.end()) {
        const CollectivePlan plan = PlanCollective(load.kind, load.gpus, load.gpus.front(),
                                                   load.bytes, *topology_, collectives_);
        std::map<int, double> moved;
        for (const CollectivePhase& phase : plan.phases) {
          for (const RingRun& run : phase.runs) {
            for (int link : run.links) moved[link] += run.steps * run.bytes_per_flow;
          }
        }
        at = state->planned.emplace(std::move(one), LinkBytes(moved.begin(), moved.end())).first;
      }
      for (const auto& [link, bytes] : at->second) {
        if (state->total[link] == 0) state->touched.push_back(link);
        state->total[link] += load.count * bytes;
      }
    }
    const std::vector<NetLink>& links = topology_->Links();
    double ns = 0;
    for (int link : state->touched) {
      ns = std::max(ns, state->total[link] / links[link].bw_bytes_per_s * 1e9);
      state->total[link] = 0;
    }
    state->touched.clear();
    // 0.999: the flow replay rounds each step to whole ns.
    ns *= 0.999;
    state->answers.emplace(std::move(key), ns);
    return ns;
  };
  using TransfersKey = std::pair<std::vector<std::pair<int, int>>, Bytes>;
  auto transfers = std::make_shared<std::map<TransfersKey, double>>();
  request.transfers_ns = [this, transfers, mutex](const std::vector<std::pair<int, int>>& pairs,
                                                  Bytes bytes) {
    std::lock_guard<std::mutex> lock(*mutex);
    TransfersKey key{pairs, bytes};
    auto at = transfers->find(key);
    if (at != transfers->end()) return at->second;
    // One phase of one-step open chains: AnalyticPlanNs divides each link by the transfers
    // crossing it, as max-min sharing does for equal transfers started together.
    CollectivePhase phase;
    for (const auto& [src, dst] : pairs) {
      const RouteCache::Entry& route = routes_->Get(src, dst);
      if (route.links.empty()) continue;
      RingRun run;
      run.gpus = {src, dst};
      run.closed = false;
      run.steps = 1;
      run.bytes_per_flow = static_cast<double>(bytes);
      run.links = route.links;
      run.alpha_ns = route.latency_ns;
      phase.runs.push_back(std::move(run));
    }
    CollectivePlan plan;
    if (!phase.runs.empty()) plan.phases.push_back(std::move(phase));
    const double ns = 0.999 * static_cast<double>(AnalyticPlanNs(plan, *routes_));
    transfers->emplace(std::move(key), ns);
    return ns;
  };
}

}  // namespace terasim::cli

#include "tools/planning_context.h"

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

Schedule PlanningContext::GenerateForEvaluation(const GenerateOptions& gen) const {
  return GenerateForSimulation(gen, *topology_, *roofline_, Options(nullptr));
}

int PlanningContext::EvaluationFoldOrder(const GenerateOptions& gen) const {
  const int ranks = RepresentativeTpRanks(gen, *topology_, *roofline_, Options(nullptr));
  return ranks == 0 ? 1 : gen.dp * (gen.tp / ranks);
}

void PlanningContext::SetNetworkBounds(SearchRequest& request) const {
  request.collective_ns = [this](OpKind kind, const std::vector<int>& gpus, Bytes bytes) {
    const CollectivePlan plan =
        PlanCollective(kind, gpus, gpus.front(), bytes, *topology_, collectives_);
    // 0.999: the flow replay rounds each step to whole ns.
    return 0.999 * static_cast<double>(AnalyticPlanNs(plan, *routes_));
  };
  request.transfers_ns = [this](const std::vector<std::pair<int, int>>& pairs, Bytes bytes) {
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
    return 0.999 * static_cast<double>(AnalyticPlanNs(plan, *routes_));
  };
}

}  // namespace terasim::cli

#include "tools/planning_context.h"

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
      fold_(inputs.fold) {
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

SimResult PlanningContext::EvaluateGenerated(const GenerateOptions& gen,
                                             const MemoryEstimate* memory) const {
  return SimulateGenerated(gen, *topology_, *roofline_, Options(memory));
}

}  // namespace terasim::cli

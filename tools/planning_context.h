// PlanningContext: everything a plan or a comparison evaluates candidates against: the model,
// the cluster and its simulator view, the GPU's spec, the roofline cost model and the
// collective parameters, built once from the command line's names; plus Evaluate, which
// replays a schedule with the simulator.
//
// Owns its parts; not copyable or movable (the topology view borrows the cluster). Evaluate is
// const and thread-safe.
#pragma once

#include <memory>
#include <string>

#include <boost/program_options.hpp>

#include "models/device_spec.h"
#include "models/model_card.h"
#include "models/roofline_cost.h"
#include "schedule/generator.h"
#include "schedule/memory_estimate.h"
#include "schedule/schedule_ir.h"
#include "schedule/strategy_search.h"
#include "sim/route_cache.h"
#include "sim/simulator.h"
#include "topologies/topology.h"

namespace terasim::cli {

struct PlanningInputs {
  std::string model = "gpt3-175b";
  std::string cluster = "p3.16xlarge:48";
  ClusterOptions cluster_options;
  NetworkMode network = NetworkMode::kFlow;
  std::string collectives = "sim/data/collectives.json";  // relative: under the data root
  bool fold = true;                                       // SimOptions::fold
};

// --jobs of compare and plan: how many families the search runs at once (SearchRequest::jobs);
// default the hardware's threads (at least 1). The results are the same for any value.
void AddJobsOption(boost::program_options::options_description& options);
// Its value; throws InputError below 1.
int ReadJobs(const boost::program_options::variables_map& vm);

class PlanningContext {
 public:
  // Loads and builds everything; throws InputError naming the bad input.
  explicit PlanningContext(const PlanningInputs& inputs);
  PlanningContext(const PlanningContext&) = delete;
  PlanningContext& operator=(const PlanningContext&) = delete;

  const ModelCard& model() const { return model_; }
  const Cluster& cluster() const { return cluster_; }
  const DeviceSpec& device() const { return device_; }
  const ComputeCostModel& cost() const { return *roofline_; }
  const NetworkTopology& topology() const { return *topology_; }
  NetworkMode network() const { return network_; }
  bool fold() const { return fold_; }

  // Replays `schedule` (for this model) on the cluster; peak memory from `memory` when given.
  SimResult Evaluate(const Schedule& schedule, const MemoryEstimate* memory = nullptr) const;
  // What to generate to evaluate `gen`, as GenerateForSimulation (sim/simulator.h) does: only
  // the representatives' ops where the declared symmetry holds (the memory and time of one
  // replica; EstimateMemory covers every device of either), else `gen` itself; and how many
  // devices each generated device stands for (1: all present). One symmetry probe.
  FoldedGeneration FoldForEvaluation(const GenerateOptions& gen) const;
  // Sets the search's SearchRequest::fold to FoldForEvaluation. Borrows this context.
  void SetFoldedGeneration(SearchRequest& request) const;

  // Sets the search's network lower bounds (SearchRequest::collective_ns, transfers_ns) to this
  // cluster's collective plans and routes costed alone (sim/analytic_network.h: a plan's
  // phases one after another, each run's steps x (alpha + bytes / its narrowest share), which
  // the flow replay's aggregate flows cannot beat: they wait the same alphas and move the same
  // bytes over the same links, slower when others share them). The callbacks borrow this
  // context, remember their answers (pure functions of their arguments) and are thread-safe
  // (behind one lock). busiest_link_ns adds up the bytes each planned collective moves per link,
  // which max-min sharing (and the analytic mode's sharing) cannot move faster than the link's
  // bandwidth.
  void SetNetworkBounds(SearchRequest& request) const;

 private:
  SimOptions Options(const MemoryEstimate* memory) const;

  ModelCard model_;
  Cluster cluster_;
  DeviceSpec device_;
  std::unique_ptr<RooflineCostModel> roofline_;
  std::unique_ptr<ClusterTopology> topology_;
  CollectiveOptions collectives_;
  NetworkMode network_;
  bool fold_ = true;
  std::unique_ptr<RouteCache> routes_;  // for SetNetworkBounds' callbacks
};

}  // namespace terasim::cli

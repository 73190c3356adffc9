// StrategySearch: which parallel configuration trains a model fastest on a cluster
// (DESIGN.md sections 3 and 6, `terasim plan` and `terasim compare`).
//
// Families and what each lets vary (D x P x T uses every GPU of the cluster; D divides the
// batch; T is a power of two up to the GPUs of one node that divides the heads):
//   gpipe        GPipe flush over micro-batches of b rows (any D, P, T, b)
//   1f1b         PipeDream-Flush over micro-batches (any D, P, T, b)
//   interleaved  Megatron's interleaved 1F1B, V >= 2 chunks per device (P >= 2; M a multiple
//                of P, or M < P: one group, see schedule/pipeline_order.h)
//   megatron     Megatron-LM's recipe: operator parallelism over the whole node (T = GPUs per
//                node), pipelining across nodes with 1F1B, data parallel over the rest
//   terapipe     token-level pipelining: the slicing planner's micro-batches and token slices
//                for each (D, P, T), flush order and the broadcast boundary as the paper ran it
// Every candidate gets an analytic estimate from StageCost: for the micro-batch families the
// compute-only pipeline bound (M + P - 1) x (forward + backward of one micro-batch on the
// largest stage) (interleaved: (M V + P - 1) chunks of 1/V of that), a lower bound of any
// replay; for terapipe the planner's own T = sum + (K - 1) max. Candidates are generated,
// checked against device memory (schedule/memory_estimate.h) and evaluated (by the caller's
// callback: the simulator) in ascending estimate order; a family stops once a candidate's
// compute-only bound exceeds its best evaluated time.
//
// Borrows everything it is given. Not thread-safe (the callback may be).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "models/compute_cost.h"
#include "models/device_spec.h"
#include "models/model_card.h"
#include "schedule/generator.h"
#include "schedule/memory_estimate.h"
#include "schedule/schedule_ir.h"
#include "topologies/topology.h"

namespace terasim {

enum class Family { kGpipe, kOneFOneB, kInterleaved, kMegatron, kTeraPipe };

// "gpipe", "1f1b", "interleaved", "megatron", "terapipe".
std::string FamilyName(Family family);
// Inverse; throws InputError "FLAG: 'TEXT' must be one of ..." for an unknown name.
Family ParseFamily(const std::string& text, const std::string& flag = "--strategy");
// All five, in the order above.
std::vector<Family> AllFamilies();

struct Candidate {
  Family family = Family::kTeraPipe;
  GenerateOptions options;  // fully specified: model, strategy, degrees, micro-batches
  double estimate_s = 0;    // analytic estimate (see the header comment)
  double bound_s = 0;       // compute-only lower bound used for pruning
  int units = 0;            // (micro-batch, slice) units per replica
  std::string slicing;      // the slicing spec ("" for micro-batch families)
};

// "D x P x T", e.g. "1x48x8".
std::string DegreesText(const GenerateOptions& options);

struct Evaluation {
  Candidate candidate;
  bool fits = false;
  MemoryEstimate memory;  // filled when the schedule was generated
  bool evaluated = false;
  double iteration_s = 0;  // from the callback when evaluated
  std::string note;        // why it was skipped, if it was
};

struct SearchRequest {
  int batch = 0;        // global batch (sequences)
  int granularity = 8;  // token granularity of the slicing planner
  std::vector<Family> families = AllFamilies();
  int max_evaluations_per_family = 6;  // simulations per family at most
  int microbatch_size = 0;  // > 0: only micro-batches of this many rows (micro-batch families)
  // Called with progress lines ("planning 1x48x8 terapipe ...") when set.
  std::function<void(const std::string&)> progress;
};

struct FamilyResult {
  Family family = Family::kTeraPipe;
  bool found = false;             // some candidate fits and was evaluated
  Evaluation best;                // the fastest evaluated candidate
  std::vector<Evaluation> tried;  // every candidate considered, in the order tried
  std::string reason;             // why nothing was found, when !found
};

// Evaluates a generated, memory-checked schedule; returns its iteration time in seconds.
using EvaluateFn = std::function<double(const Candidate&, const Schedule&)>;

class StrategySearch {
 public:
  StrategySearch(const ModelCard& model, const Cluster& cluster, const DeviceSpec& device,
                 const ComputeCostModel& compute);

  // Every candidate of a family (estimates filled, not yet generated), ascending estimate.
  // Throws InputError when the batch is < 1.
  std::vector<Candidate> Enumerate(Family family, const SearchRequest& request) const;

  // The best candidate of each requested family, in request order.
  std::vector<FamilyResult> Run(const SearchRequest& request, const EvaluateFn& evaluate) const;

 private:
  // Fills estimate_s and bound_s; for terapipe also plans the slicing. False when the
  // configuration cannot be built (e.g. interleaving constraints).
  bool Estimate(Candidate& candidate, const SearchRequest& request) const;

  const ModelCard& model_;
  const Cluster& cluster_;
  const DeviceSpec& device_;
  const ComputeCostModel& compute_;
};

}  // namespace terasim

// StrategySearch: which parallel configuration trains a model fastest on a cluster
// (DESIGN.md sections 3 and 6, `terasim plan` and `terasim compare`).
//
// Families and what each lets vary (D x P x T uses every GPU of the cluster; D divides the
// batch; T is a power of two up to the GPUs of one node that divides the heads):
//   gpipe        GPipe flush over micro-batches of b rows (any D, P, T, b)
//   1f1b         PipeDream-Flush over micro-batches (any D, P, T, b)
//   interleaved  interleaved 1F1B, V >= 2 chunks per device (P >= 2; M as PyTorch takes it,
//                or M < P: one group, see schedule/pipeline_order.h)
//   zero-bubble  ZB-H1 or ZB-H2 (split backward, schedule/pipeline_order.h) (any D, P, T, b)
//   megatron     Megatron-LM's recipe: T = the GPUs of one node with sequence parallelism,
//                interleaved 1F1B across nodes (V >= 2 where P >= 2 and the layers allow,
//                else 1F1B), the distributed optimizer (ZeRO-1) over D >= 2, selective
//                recomputation (full where selective does not fit); b and V vary
//   terapipe     token-level pipelining: the slicing planner's micro-batches and token slices
//                for each (D, P, T), flush order and the broadcast boundary as the paper ran it
//   interleaved-zb  interleaved zero bubble, V >= 2 chunks per device (P >= 2; M as
//                interleaved 1F1B takes it)
//   zb-v         ZB-V: 2 chunks per device in a V (any D, P, T, b; 2 P stages <= layers)
//   dualpipe-v   DualPipeV: the V placement, M >= 2 P (any D, P, T, b with 2 P <= layers)
// Today's recipes (SearchRequest::recipes): every micro-batch family but megatron also tries
// recomputation none / selective / full, sequence parallelism (T >= 2) and ZeRO stages 0-3
// (D >= 2). Each (family, D, P, T, b, V) is one candidate that carries its recipe variants in
// ascending estimated time (ties: the order above, least machinery first); it takes the first
// variant whose analytic peak memory (AnalyticMemory) fits, so recomputation, sharding and
// sequence parallelism are chosen only where the cheaper variants do not fit. When none fits
// analytically the candidate keeps the variant with the smallest peak, to report why.
//
// Every candidate gets an analytic estimate from StageCost: for the micro-batch families the
// pipeline (M + P - 1) x (forward + backward of one micro-batch on the largest stage, with its
// communication) (interleaved: (M V + P - 1) chunks of 1/V of that; zero bubble: M units plus
// (P - 1) thirds of a unit, the bubble of ZB-H1 with F = B = W; interleaved-zb, zb-v and
// dualpipe-v: M units plus (P - 1) thirds of a chunk of 1/V of a unit); recomputation adds one
// forward per backward (full) or the attention core's forward (selective); ZeRO-3 adds its
// per-micro-batch parameter all-gathers and gradient reduce-scatters (3 x the stage's fp16
// parameters over the data-parallel route). For terapipe the planner's own T = sum + (K - 1)
// max. The estimate orders a candidate's recipe variants (above).
//
// And a lower bound of any replay (StrategySearch::LowerBoundNs; tests/tools/search_bounds_test.cpp
// checks it against the flow and analytic replays of every candidate): the pipeline steps
// above with the fill on floor-sized stages, each unit's compute plus its blocking tp
// collectives (on the compute stream); one micro-batch's chain through every stage and
// boundary; the first micro-batch's trip to the last rank (and back where the last op is a
// backward); ZeRO-3's zero and dp streams' sums, and the first node's per-layer collectives on
// its busiest link; then the first rank's data-parallel step and OPTIMIZER, its T tp ranks'
// steps together on the busiest link (SearchRequest::busiest_link_ns); and each of its chunks'
// (its stage's with V = 1) steps after that chunk's last backward, which waits for the
// micro-batches' chain through the pipeline (ChunkStepsNs). The network terms come from
// SearchRequest::collective_ns / transfers_ns (tools/planning_context costs them alone on the
// cluster); without them it is compute only. For the candidate each configuration keeps, also
// every pipeline rank's order replayed with each step at its lower bound (PipelineTimesOf: the
// longest path of the rank orders and the boundary transfers, which takes in the fill, the
// drain and every wait), then what the generator runs after the first rank's last step: every
// chunk's OPTIMIZER on the compute stream, its dp reduction and, with ZeRO-1 / 2, every
// chunk's ALLGATHER after the last OPTIMIZER in series on the dp stream (PipelineTailNs).
// A terapipe candidate's analytic memory is
// TeraPipeMemoryLowerBound (for any slicing before the planner runs: what cannot fit is not
// planned). Run prunes by analytic memory first (never generated), then generates, checks memory
// (schedule/memory_estimate.h) and evaluates (the caller's callback: the simulator) the rest in
// ascending bound order; a family stops once a bound reaches its best evaluated time, which no
// later candidate can then beat. Candidates of more than max_ops (EstimateOps) are skipped.
//
// Borrows everything it is given. Not thread-safe; Run itself searches SearchRequest::jobs
// families at once, each with its own copy of the search's memos.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "models/compute_cost.h"
#include "models/device_spec.h"
#include "models/memory_model.h"
#include "models/model_card.h"
#include "schedule/generator.h"
#include "schedule/memory_estimate.h"
#include "schedule/schedule_ir.h"
#include "topologies/topology.h"

namespace terasim {

enum class Family {
  kGpipe,
  kOneFOneB,
  kInterleaved,
  kZeroBubble,
  kMegatron,
  kTeraPipe,
  kInterleavedZb,
  kZbV,
  kDualPipeV,
};

// "gpipe", "1f1b", "interleaved", "zero-bubble", "megatron", "terapipe", "interleaved-zb",
// "zb-v", "dualpipe-v".
std::string FamilyName(Family family);
// Inverse; throws InputError "FLAG: 'TEXT' must be one of ..." for an unknown name.
Family ParseFamily(const std::string& text, const std::string& flag = "--strategy");
// All nine, in the order above.
std::vector<Family> AllFamilies();

struct Candidate {
  Family family = Family::kTeraPipe;
  GenerateOptions options;   // fully specified: model, strategy, degrees, micro-batches
  double estimate_s = 0;     // analytic estimate (see the header comment)
  double bound_s = 0;        // lower bound of any replay, used for ordering and pruning
  int64_t ops_estimate = 0;  // ops the generated schedule will have, about (EstimateOps)
  int units = 0;             // (micro-batch, slice) units per replica
  std::string slicing;       // the slicing spec ("" for micro-batch families)
  Bytes analytic_peak = 0;   // AnalyticMemory of `options` (terapipe: TeraPipeMemoryLowerBound)
  bool analytic_fits = true;
  std::string analytic_reason;  // when !analytic_fits: the peak and its largest term
  // Further recipe variants that fit analytically, ascending estimate, tried when `options`
  // does not fit the exact estimate (schedule/memory_estimate.h).
  std::vector<GenerateOptions> fallbacks;
};

// "none", or the recipe of options: e.g. "sp, selective recompute, ZeRO-1" (what compare shows).
std::string RecipeText(const GenerateOptions& options);

// The peak memory of the first pipeline stage of `options` (the stage with the most
// activations in flight), analytically (FACTS.md "Today's recipes"): the training state of its
// layers' tp shard with ZeRO; the activations of its in-flight micro-batches (GPipe M; 1F1B and
// ZB-H1 min(M, P); ZB-H2 min(M, 2 P - 1); interleaved 1F1B min(M, P) (1 + (P - 1) / (P V)),
// all M for M < P; looped BFS M; interleaved-zb, zb-v and dualpipe-v: the first rank's
// PeakChunksInFlight / V, e.g. ZB-V P, DualPipeV P + 1/2) of its layers under the recipe's
// recomputation and sequence parallelism, plus one layer's recomputed activations with full
// recomputation; ZeRO-3's two gathered layers; two boundary tensors.
struct AnalyticMemoryResult {
  Bytes peak = 0;
  std::string largest_term;  // "activations", "optimizer state", ...
  Bytes largest_bytes = 0;
};
AnalyticMemoryResult AnalyticMemory(const GenerateOptions& options);

// A lower bound of EstimateMemory's peak of a TeraPipe schedule's first device (pipeline rank
// 0 of replica 0, tp rank 0) in flush order, without generating it: the training state of its
// ceil(L / P) layers' tp shard (ZeRO over D) and, since flush order runs every unit's forward
// before the first backward, the activations of every (micro-batch, slice) unit of the replica
// on those layers, with their key/value caches. A layer counts the smaller of its whole-layer
// and its attention + MLP figures (the generator writes either); boundary buffers are left
// out. Without `options.slicing`: the least any slicing of `replica_rows` sequences keeps
// (half the uncut attention core, no kv cache). Any other order: the training state alone.
AnalyticMemoryResult TeraPipeMemoryLowerBound(const GenerateOptions& options, int replica_rows);

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

// What to generate for a candidate where the caller's simulator folds it
// (SearchRequest::fold): `options` with only the representative devices' ops, or the
// candidate's own options; and how many devices each generated device stands for.
struct FoldedGeneration {
  GenerateOptions options;
  int order = 1;
  // What SearchRequest::max_ops divides the candidate's EstimateOps by: `order` where tp ranks
  // stand for each other, 1 where only the replica shift folds (replica 0 whole, every tp
  // rank): such a fold cuts the replay's cost but leaves the budget, and so the candidates
  // searched, as they were before it existed.
  int budget_order = 1;
};

// `count` collectives of `kind` over the GPUs `gpus` (in group order) with `bytes` per rank:
// one load of SearchRequest::busiest_link_ns.
struct CollectiveLoad {
  OpKind kind = OpKind::kAllReduce;
  std::vector<int> gpus;
  Bytes bytes = 0;
  double count = 1;
};

struct SearchRequest {
  int batch = 0;        // global batch (sequences)
  int granularity = 8;  // token granularity of the slicing planner
  std::vector<Family> families = AllFamilies();
  int max_evaluations_per_family = 6;  // simulations per family at most
  // Search today's recipes (recomputation, sequence parallelism, ZeRO) in every micro-batch
  // family; false: only the plain variant (no recomputation, no sharding).
  bool recipes = true;
  // > 0: only micro-batches of this many rows (every family; terapipe: the planner's
  // micro-batches all of this size, on the replicas it divides)
  int microbatch_size = 0;
  // Every candidate's data-parallel step (kAuto: each family's default, DefaultDpStep).
  DpStep dp_step = DpStep::kAuto;
  int64_t dp_bucket_bytes = kDdpBucketBytes;
  // Candidates whose EstimateOps exceeds this are not generated (0: no limit); counted as
  // pruned by the op budget.
  int64_t max_ops = 0;
  // For a candidate whose EstimateOps exceeds folded_above_ops: what to generate, with only
  // its representative devices' ops where the caller's simulator folds it (sim/simulator.h
  // GenerateForSimulation), asked once per generated candidate (smaller ones, and what
  // compare stores for them, keep every device's ops); max_ops then bounds EstimateOps / its
  // order (the ops generated and simulated). Unset: always the candidate's own options.
  std::function<FoldedGeneration(const GenerateOptions&)> fold;
  int64_t folded_above_ops = 200000;
  // Called with progress lines ("planning 1x48x8 terapipe ...") when set.
  std::function<void(const std::string&)> progress;
  // Network lower bounds for the candidates' bounds, from the caller's simulator view (unset:
  // the bounds count compute only). Each returns, in ns, a lower bound of the time the
  // replay takes for that communication alone on an idle network: a collective of `kind` over
  // the GPUs `gpus` (in group order) with `bytes` per rank, and transfers of `bytes` each
  // between the (src, dst) GPU pairs, started together, until the last arrives.
  std::function<double(OpKind kind, const std::vector<int>& gpus, Bytes bytes)> collective_ns;
  std::function<double(const std::vector<std::pair<int, int>>& pairs, Bytes bytes)> transfers_ns;
  // In ns, the time the busiest link needs to carry the bytes of every listed load (each
  // collective as planned alone on its group): a lower bound of any interval in which they all
  // run, in any order or overlap (e.g. the 8 tp ranks' data-parallel steps sharing a node's
  // NICs). Unset: such bounds are left out.
  std::function<double(const std::vector<CollectiveLoad>& loads)> busiest_link_ns;
  // Families searched at once, each on its own thread (1: one after another on the caller's).
  // The results are the same for any value: each family's search reads only its own results.
  // With jobs > 1 every callback above and the evaluate callback are called from several
  // threads at once and must be thread-safe; Run passes progress lines one at a time.
  int jobs = 1;
};

struct FamilyResult {
  Family family = Family::kTeraPipe;
  bool found = false;             // some candidate fits and was evaluated
  Evaluation best;                // the fastest evaluated candidate
  std::vector<Evaluation> tried;  // every candidate considered, in the order tried
  std::string reason;             // why nothing was found, when !found
  int candidates = 0;             // enumerated
  int pruned_by_bound = 0;        // never tried: lower bound >= the best simulated time
  int pruned_by_budget = 0;       // never tried: max_evaluations_per_family was reached
  int pruned_by_ops = 0;          // not generated: EstimateOps (/ its fold order) > max_ops
};

// About how many ops Generate(options) writes (micro-batch families; the terapipe family's
// units from its slicing), from the per-unit op counts of schedule/generator.h: compute ops per
// layer and part, their tp collectives, the boundary SEND / RECV, ZeRO-3's per-layer
// collectives; an estimate to budget evaluation cost, not an exact count.
int64_t EstimateOps(const GenerateOptions& options, int units);

// Evaluates a generated, memory-checked schedule; returns its iteration time in seconds.
using EvaluateFn = std::function<double(const Candidate&, const Schedule&)>;
// The same, also given the schedule's memory estimate (the search's own, EstimateMemory).
using EvaluateWithMemoryFn =
    std::function<double(const Candidate&, const Schedule&, const MemoryEstimate&)>;

class StrategySearch {
 public:
  StrategySearch(const ModelCard& model, const Cluster& cluster, const DeviceSpec& device,
                 const ComputeCostModel& compute);

  // Every candidate of a family (estimates filled, not yet generated), ascending estimate.
  // Throws InputError when the batch is < 1.
  std::vector<Candidate> Enumerate(Family family, const SearchRequest& request) const;

  // The best candidate of each requested family, in request order.
  std::vector<FamilyResult> Run(const SearchRequest& request, const EvaluateFn& evaluate) const;
  std::vector<FamilyResult> Run(const SearchRequest& request,
                                const EvaluateWithMemoryFn& evaluate) const;

  // Fills estimate_s and bound_s of `candidate` (for one whose options were edited, too); for
  // terapipe also plans the slicing. False when the configuration cannot be built (e.g.
  // interleaving constraints).
  bool Estimate(Candidate& candidate, const SearchRequest& request) const;

 private:
  // Every pipeline rank's order replayed with each step at its lower bound (PipelineTimesOf).
  struct PipelineTimes {
    std::vector<double> rank_end;  // per pipeline rank: the end of its last step
    // Per chunk of the first rank: the start and end of its last weight-gradient step, and
    // the chunks in the order those steps run (what the generator's OPTIMIZERs follow).
    std::vector<double> last_weight_start, last_weight_end;
    std::vector<int> finish_order;
  };
  // A lower bound of any replay of the micro-batch family candidate `o`, in ns: the pipeline
  // of M units of `unit_compute_ns` (plus `recompute_ns` and the blocking tp collectives) and
  // `fill_steps` more on the other stages, the first micro-batch's p2p trip where nothing fills it,
  // and StepTailNs. With `replay`, also every rank's order replayed at its steps' lower bounds
  // (PipelineTimesOf, PipelineTailNs); Estimate's own callers always ask for it, ChooseRecipe
  // only for the variant it chooses (the others' bounds are never used).
  double LowerBoundNs(const GenerateOptions& o, const SearchRequest& request,
                      double unit_compute_ns, double recompute_ns, double fill_steps,
                      bool replay) const;
  bool Estimate(Candidate& candidate, const SearchRequest& request, bool replay) const;
  // With D >= 2: the first rank's chunks (its whole stage with V = 1) complete their weight
  // gradients one after another near the end, each no earlier than its own order's steps before
  // it in series from the start, and than the chain of the micro-batch whose backward there
  // ends last (its forward on the first stage after the rank's M forwards of it, through every
  // stage and back to the chunk, compute and `hops`, the boundary transfers stage to stage);
  // from each on, the dp steps of that chunk and the later ones, for all T tp ranks, still
  // cross the busiest link (busiest_link_ns). 0 when it does not apply.
  double ChunkStepsNs(const GenerateOptions& o, const SearchRequest& request, double tp_part_ns,
                      const std::vector<double>& hops, const PipelineTimes* times) const;
  // The earliest times any replay can reach in the micro-batch pipeline of `o` (replica 0, tp
  // rank 0 of each pipeline rank): each rank's compute stream runs its order's steps one after
  // another, each step no shorter than its compute and blocking tp collectives (PassNs, on
  // that rank's own tp group); a forward waits for the previous virtual stage's forward of
  // its micro-batch and a backward (or its input part) for the next stage's, plus the
  // boundary transfer between ranks (`forward_hops` / `backward_hops` per boundary vs ->
  // vs + 1, 0 where none). The longest path of that graph, whose edges every replay keeps.
  // Empty for orders it does not know (terapipe, imported).
  const PipelineTimes& PipelineTimesOf(const GenerateOptions& o, const SearchRequest& request,
                                       const std::vector<double>& forward_hops,
                                       const std::vector<double>& backward_hops) const;
  // A pass over `layers` layers of one micro-batch: its compute ops, with `part_ns` per
  // blocking tp collective (two a layer, none for the weight-gradient part) and full
  // recomputation's forward before a backward.
  double PassNs(const GenerateOptions& o, Pass pass, double part_ns, int layers) const;
  // One layer part's blocking tp collectives on the tp group of pipeline rank `rank` of
  // replica 0 (ALLREDUCE, or ALLGATHER + REDUCE_SCATTER with sequence parallelism).
  double TpPartNs(const GenerateOptions& o, const SearchRequest& request, int rank) const;
  // What follows the first rank's last step (`times`): its chunks' data-parallel steps and
  // OPTIMIZERs as the generator orders them (see the definition).
  double PipelineTailNs(const GenerateOptions& o, const SearchRequest& request,
                        const PipelineTimes& times) const;
  // What follows the first rank's last backward: its data-parallel step and its OPTIMIZER.
  double StepTailNs(const GenerateOptions& o, const SearchRequest& request) const;
  double StepTailUncachedNs(const GenerateOptions& o, const SearchRequest& request,
                            int chunk_layers, int zero, bool bucketed) const;
  // Picks the candidate's recipe among `variants` (see the top of this file).
  void ChooseRecipe(Candidate& candidate, const std::vector<GenerateOptions>& variants,
                    const SearchRequest& request) const;

  // ChunkStepsNs' reduced orders, by (strategy, P, V, M): per chunk the forward, whole
  // backward and input-gradient steps its first rank runs before its last weight-gradient
  // step and through it ({-1, 0, 0}: none).
  // before[c][c'] (through[c][c']): the forward, whole-backward, input-gradient and
  // weight-gradient steps of chunk c' run before chunk c's last weight-gradient step (and
  // through it); empty for a chunk without one.
  struct ChunkStepCounts {
    std::vector<std::vector<std::array<int, 4>>> before, through;
  };
  mutable std::map<std::tuple<Strategy, int, int, int>, ChunkStepCounts> chunk_steps_;
  // ChunkStepsNs' dp step of a chunk on the busiest link, by (D, P, T, ZeRO > 0, its layers).
  mutable std::map<std::tuple<int, int, int, bool, int>, double> chunk_step_ns_;
  // StepTailNs by (D, P, T, V, ZeRO, bucketed, with collectives, with link loads).
  mutable std::map<std::tuple<int, int, int, int, int, bool, bool, bool>, double> step_tail_ns_;
  // PipelineTimesOf by (strategy, P, V, M, b, T, recompute, sequence parallel, boundary,
  // backward order, with collectives, with transfers).
  mutable std::map<
      std::tuple<Strategy, int, int, int, int, int, Recompute, bool, Boundary, bool, bool, bool>,
      PipelineTimes>
      pipeline_times_;
  // LowerBoundNs' boundary transfers per boundary, forward and back, by (P, V, V placement,
  // T, bytes, senders).
  mutable std::map<std::tuple<int, int, bool, int, Bytes, int>,
                   std::pair<std::vector<double>, std::vector<double>>>
      hop_ns_;
  // Estimate's unit compute and unit time by (P, T, boundary, micro-batch size).
  mutable std::map<std::tuple<int, int, Boundary, int>, std::pair<double, double>> unit_ns_;
  // ChunkStepsNs' compute of a pass over a chunk by (pass, micro-batch size, T, selective
  // recomputation, layers).
  mutable std::map<std::tuple<Pass, int, int, bool, int>, double> pass_compute_ns_;

  const ModelCard& model_;
  const Cluster& cluster_;
  const DeviceSpec& device_;
  const ComputeCostModel& compute_;

  // Run's two halves for one family: its candidates in the order tried (ascending bound), and
  // the search over them.
  std::vector<Candidate> SortedCandidates(Family family, const SearchRequest& request) const;
  FamilyResult SearchFamily(Family family, std::vector<Candidate> candidates,
                            const SearchRequest& request,
                            const EvaluateWithMemoryFn& evaluate) const;
};

}  // namespace terasim

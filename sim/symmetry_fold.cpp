// SymmetryFold's search and checks: the candidate symmetries, the checks of ops, groups,
// placement and collective plans, the group they generate, its representatives and folded
// plans. Link classes: sim/link_classes.cpp; plan matching and folding: sim/folded_plan.cpp.
#include "sim/symmetry_fold.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "sim/fold_permutations.h"
#include "sim/folded_plan.h"
#include "sim/link_classes.h"
#include "sim/plan_cache.h"

namespace terasim {
namespace {

using PlanKey = std::tuple<int, int, Bytes, int>;  // (group, kind, bytes, root GPU)

// Whether the p-th ops of two devices do the same work (everything the replay reads but the
// device, the names and the peers, which are checked through the permutation).
bool SameWork(const Op& a, const Op& b) {
  return a.kind == b.kind && a.stream == b.stream && a.stage == b.stage &&
         a.layers.begin == b.layers.begin && a.layers.end == b.layers.end && a.part == b.part &&
         a.rows == b.rows && a.tokens.begin == b.tokens.begin && a.tokens.end == b.tokens.end &&
         a.bytes == b.bytes && a.recompute == b.recompute &&
         a.sequence_parallel == b.sequence_parallel && a.zero == b.zero;
}

}  // namespace

// Builds a SymmetryFold; one per Find.
class FoldBuilder {
 public:
  FoldBuilder(const FoldGraph& graph, const NetworkTopology& topology, RouteCache& routes,
              const CollectiveOptions& collectives)
      : g_(graph),
        s_(graph.schedule),
        topology_(topology),
        routes_(routes),
        collectives_(collectives) {}

  SymmetryFold Build();
  // SymmetryFold::Declared: the schedule's declared symmetry, without comparing ops. `largest`:
  // SymmetryFold::DeclaredLargest (Build's choice of generators, whatever devices are present).
  SymmetryFold BuildDeclared(bool largest);

 private:
  struct Element {
    std::vector<int> device;  // device permutation
    std::vector<int> gpu;     // GPU permutation (identity on unused GPUs)
  };

  // Ops per device and positions, groups by rank set, plan keys and p2p GPU pairs.
  void Collect();
  // sorted_ranks_ and groups_by_low_ (GroupImage's index).
  void IndexGroups();
  // Declared: plan keys and p2p GPU pairs of the whole iteration, as the orbits of the
  // present ops' under the declared renamings `perms`; "" or why not.
  std::string CollectDeclared(const std::vector<std::vector<int>>& perms);
  // The group whose ranks are `sigma` of group h's (as sets; the first such group), or -1.
  int GroupImage(const std::vector<int>& sigma, int h);
  // The candidate check of the fold being built: CheckDeclared for BuildDeclared, else Check.
  std::string CheckCandidate(const std::vector<int>& sigma, Element* element) {
    return declared_ ? CheckDeclared(sigma, element) : Check(sigma, element);
  }
  // Checks candidate `sigma`; fills an Element or returns why not. CheckStructure checks all
  // but the ops (speeds, groups, GPUs, collective plans, links); CheckOps the ops.
  std::string Check(const std::vector<int>& sigma, Element* element);
  std::string CheckStructure(const std::vector<int>& sigma, Element* element,
                             std::vector<int>* group_map);
  std::string CheckOps(const std::vector<int>& sigma, const std::vector<int>& group_map);
  // FoldLinkClasses (sim/link_classes.h) of transfers_ under the group of GPU maps `gpus` (the
  // identity included), skipped when the last group that passed is the same. Fills link_rep_ /
  // link_mult_; "" or why not.
  std::string LinkClasses(const std::vector<const std::vector<int>*>& gpus);
  // LinkClasses over the cyclic group of one candidate's GPU map.
  std::string CheckLinks(const Element& element);
  // Beyond rotations: generators of the largest group of tp-rank permutations (each applied in
  // every tp group of `tp` consecutive devices) that acts freely and whose elements pass Check,
  // found among the permutations that keep the routes between the first group's GPUs and to
  // the next group's (SemiregularAutomorphisms); empty (with why not) when there is none.
  std::vector<Element> TpPermutations(int tp, std::string* why);
  // Takes the first candidate of each family that CheckCandidate passes; "" or why each was
  // refused.
  std::string PickGenerators(
      const std::vector<std::pair<std::string, std::vector<std::vector<int>>>>& families,
      std::vector<Element>* generators, bool* all_families);
  // The largest fold of the replica shift (block devices per replica, dp replicas) and the tp
  // rotations, or the tp permutations where their group is larger, each passing CheckCandidate
  // (Build's choice; Check, or the structure and links alone where the ops are declared).
  SymmetryFold Largest(int block, int dp, int tp);
  // The structure and links of candidate `sigma` (Check less the ops).
  std::string CheckDeclared(const std::vector<int>& sigma, Element* element);
  // From the accepted generators: the group, representatives, link classes and folded plans.
  SymmetryFold Finish(std::vector<Element> generators, std::string why_not);
  const CollectivePlan& PlanOf(const PlanKey& key);
  bool BuildGroup(std::vector<Element> generators, std::string* why);
  std::string FoldPlans(SymmetryFold& fold);

  const FoldGraph& g_;
  const Schedule& s_;
  const NetworkTopology& topology_;
  RouteCache& routes_;
  const CollectiveOptions& collectives_;
  std::vector<std::vector<int>> device_ops_;
  std::vector<int> position_;                    // per op: its index among its device's ops
  std::vector<int> op_device_;                   // per op: its device (Op::device, compact)
  std::vector<std::vector<int>> sorted_ranks_;   // per group: its ranks, sorted
  std::vector<std::vector<int>> groups_by_low_;  // per device: the groups it is the least rank of
  std::vector<int> image_;                       // GroupImage's buffer
  int empty_group_ = -1;                         // the first group without ranks
  std::set<PlanKey> plan_keys_;
  // plan_keys_ with their plans, in the same order (filled by the first CheckStructure).
  std::vector<std::pair<PlanKey, const CollectivePlan*>> key_plans_;
  std::set<std::pair<int, int>> p2p_pairs_;
  std::vector<std::pair<int, int>> transfers_;  // GPU pairs of every transfer (p2p and plans)
  // Per key: its plan, the PlanCache's (which outlives the builder) or one in owned_plans_.
  std::map<PlanKey, const CollectivePlan*> plans_;
  std::deque<CollectivePlan> owned_plans_;            // planned here, without a PlanCache
  std::map<int, std::optional<NcclSystem>> systems_;  // per group: NcclCommunicator of its GPUs
  std::vector<int> link_rep_, link_mult_;             // LinkClasses' result
  std::vector<std::vector<int>> classes_of_;  // its GPU maps (sorted) when it passed, else empty
  std::vector<Element> elements_;             // G, identity first
  bool declared_ = false;
};

const CollectivePlan& FoldBuilder::PlanOf(const PlanKey& key) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  const auto& [group, kind, bytes, root] = key;
  std::vector<int> gpus;
  for (int rank : s_.groups[group].ranks) gpus.push_back(g_.placement[rank]);
  if (g_.plans != nullptr) {
    // The cache's plan itself (its references stay valid): no copy.
    const CollectivePlan& plan = g_.plans->Plan(static_cast<OpKind>(kind), gpus, root, bytes);
    plans_.emplace(key, &plan);
    return plan;
  }
  // The group's NCCL communicator, once for all its plans.
  auto system = systems_.find(group);
  if (system == systems_.end()) {
    system = systems_.emplace(group, NcclCommunicator(gpus, topology_, collectives_)).first;
  }
  owned_plans_.push_back(PlanCollective(static_cast<OpKind>(kind), gpus, root, bytes, topology_,
                                        collectives_, system->second));
  plans_.emplace(key, &owned_plans_.back());
  return owned_plans_.back();
}

void FoldBuilder::Collect() {
  const int devices = s_.devices;
  device_ops_ = s_.OpsByDevice();
  position_.assign(s_.ops.size(), 0);
  op_device_.assign(s_.ops.size(), 0);
  for (int d = 0; d < devices; ++d) {
    const std::vector<int>& ops = device_ops_[d];
    for (size_t p = 0; p < ops.size(); ++p) {
      position_[ops[p]] = static_cast<int>(p);
      op_device_[ops[p]] = d;
    }
  }
  IndexGroups();
  // Consecutive ops mostly repeat a key or pair: the last one is not looked up again.
  PlanKey last_key{-1, -1, 0, -1};
  std::pair<int, int> last_pair{-1, -1};
  for (size_t i = 0; i < s_.ops.size(); ++i) {
    const Op& op = s_.ops[i];
    if (g_.group[i] >= 0) {
      const PlanKey key{g_.group[i], static_cast<int>(op.kind), op.bytes,
                        op.kind == OpKind::kBroadcast && op.peer >= 0 && op.peer < devices
                            ? g_.placement[op.peer]
                            : -1};
      if (key != last_key) plan_keys_.insert(key);
      last_key = key;
    }
    if (op.kind == OpKind::kSend && op.peer >= 0 && op.peer < devices) {
      const std::pair<int, int> pair{g_.placement[op.device], g_.placement[op.peer]};
      if (pair != last_pair) p2p_pairs_.insert(pair);
      last_pair = pair;
    }
  }
}

void FoldBuilder::IndexGroups() {
  sorted_ranks_.resize(s_.groups.size());
  groups_by_low_.assign(s_.devices, {});
  for (size_t h = 0; h < s_.groups.size(); ++h) {
    std::vector<int>& ranks = sorted_ranks_[h];
    ranks = s_.groups[h].ranks;
    std::sort(ranks.begin(), ranks.end());
    if (ranks.empty()) {
      if (empty_group_ < 0) empty_group_ = static_cast<int>(h);
    } else if (ranks[0] >= 0 && ranks[0] < s_.devices) {
      groups_by_low_[ranks[0]].push_back(static_cast<int>(h));
    }
  }
}

int FoldBuilder::GroupImage(const std::vector<int>& sigma, int h) {
  image_.clear();
  for (int rank : s_.groups[h].ranks) image_.push_back(sigma[rank]);
  std::sort(image_.begin(), image_.end());
  if (image_.empty()) return empty_group_;
  if (image_[0] < 0 || image_[0] >= s_.devices) return -1;
  // Groups in index order: the first with these ranks, as a map from rank sets kept it.
  for (int image : groups_by_low_[image_[0]]) {
    if (sorted_ranks_[image] == image_) return image;
  }
  return -1;
}

std::string FoldBuilder::Check(const std::vector<int>& sigma, Element* element) {
  for (int d = 0; d < s_.devices; ++d) {
    if (device_ops_[d].size() != device_ops_[sigma[d]].size()) {
      return fmt::format("devices {} and {} have {} and {} ops", d, sigma[d], device_ops_[d].size(),
                         device_ops_[sigma[d]].size());
    }
  }
  std::vector<int> group_map;
  std::string why = CheckStructure(sigma, element, &group_map);
  if (why.empty()) why = CheckLinks(*element);
  return why.empty() ? CheckOps(sigma, group_map) : why;
}

std::string FoldBuilder::CheckStructure(const std::vector<int>& sigma, Element* element,
                                        std::vector<int>* group_map_out) {
  const int devices = s_.devices;
  for (int d = 0; d < devices; ++d) {
    const auto speed = [&](int dev) {
      return dev < static_cast<int>(g_.device_speed.size()) ? g_.device_speed[dev] : 1.0;
    };
    if (speed(d) != speed(sigma[d])) {
      return fmt::format("devices {} and {} run at speeds {} and {}", d, sigma[d], speed(d),
                         speed(sigma[d]));
    }
  }
  // Groups: sigma of a group's ranks must be a group (as sets).
  std::vector<int>& group_map = *group_map_out;
  group_map.assign(s_.groups.size(), -1);
  for (size_t h = 0; h < s_.groups.size(); ++h) group_map[h] = GroupImage(sigma, h);
  // GPUs.
  element->device = sigma;
  element->gpu.assign(topology_.NumGpus(), -1);
  std::vector<int> inverse(topology_.NumGpus(), -1);
  for (int d = 0; d < devices; ++d) {
    const int from = g_.placement[d];
    const int to = g_.placement[sigma[d]];
    if ((element->gpu[from] >= 0 && element->gpu[from] != to) ||
        (inverse[to] >= 0 && inverse[to] != from)) {
      return fmt::format("placement puts two devices on GPU {}", from);
    }
    element->gpu[from] = to;
    inverse[to] = from;
  }
  for (int gpu = 0; gpu < topology_.NumGpus(); ++gpu) {
    if (element->gpu[gpu] < 0) element->gpu[gpu] = gpu;  // unused GPU
  }
  // Collective plans: the plan of sigma(H) is the plan of H mapped.
  if (key_plans_.size() != plan_keys_.size()) {
    key_plans_.clear();
    for (const PlanKey& key : plan_keys_) key_plans_.emplace_back(key, nullptr);
  }
  for (auto& [key, plan_of_key] : key_plans_) {
    const auto& [group, kind, bytes, root] = key;
    if (group_map[group] < 0) {
      return fmt::format("group {} maps onto no group", s_.groups[group].name);
    }
    if (plan_of_key == nullptr) plan_of_key = &PlanOf(key);
    const CollectivePlan& plan = *plan_of_key;
    const PlanKey image{group_map[group], kind, bytes, root >= 0 ? element->gpu[root] : -1};
    const CollectivePlan& image_plan = image == key ? plan : PlanOf(image);
    if (MatchPlans(plan, image_plan, element->gpu).size() != plan.phases.size()) {
      return fmt::format("the {} plan of group {} does not map onto group {}'s",
                         OpKindName(static_cast<OpKind>(kind)), s_.groups[group].name,
                         s_.groups[group_map[group]].name);
    }
  }
  // Links: checked by CheckLinks over every p2p pair's and plan's transfers (the same for every
  // candidate: collected once).
  if (transfers_.empty()) {
    // Sorted and distinct (FoldLinkClasses looks images up among each GPU's transfers).
    transfers_.assign(p2p_pairs_.begin(), p2p_pairs_.end());
    for (const auto& [key, plan] : key_plans_) {
      ForEachTransfer(*plan, [&](int a, int b) { transfers_.emplace_back(a, b); });
    }
    std::sort(transfers_.begin(), transfers_.end());
    transfers_.erase(std::unique(transfers_.begin(), transfers_.end()), transfers_.end());
  }
  return "";
}

std::string FoldBuilder::CheckOps(const std::vector<int>& sigma,
                                  const std::vector<int>& group_map) {
  const int devices = s_.devices;
  const bool measured = !g_.compute_ns.empty();
  const auto measured_ns = [&](int op) {
    return op < static_cast<int>(g_.compute_ns.size()) ? g_.compute_ns[op] : TimeNs{-1};
  };
  // The p-th op of d against the p-th op of sigma(d), device by device.
  const auto img = [&](int op) { return device_ops_[sigma[op_device_[op]]][position_[op]]; };
  for (int d = 0; d < devices; ++d) {
    const std::vector<int>& mine = device_ops_[d];
    const std::vector<int>& image = device_ops_[sigma[d]];
    for (size_t p = 0; p < mine.size(); ++p) {
      const int i = mine[p];
      const int j = image[p];
      const Op& a = s_.ops[i];
      const Op& b = s_.ops[j];
      auto differ = [&](const char* what) {
        return fmt::format("{} and {} differ in {}", a.key, b.key, what);
      };
      if (!SameWork(a, b) || g_.work_tp[i] != g_.work_tp[j]) return differ("work");
      if (measured && measured_ns(i) != measured_ns(j)) return differ("measured duration");
      const int begin_i = g_.succ_begin[i];
      const int begin_j = g_.succ_begin[j];
      const int count = g_.succ_begin[i + 1] - begin_i;
      if (count != g_.succ_begin[j + 1] - begin_j) return differ("successors");
      for (int k = 0; k < count; ++k) {
        if (img(g_.succ[begin_i + k]) != g_.succ[begin_j + k]) {
          return differ("successors");
        }
      }
      const int partner = g_.partner[i];
      if ((partner < 0) != (g_.partner[j] < 0) || (partner >= 0 && img(partner) != g_.partner[j])) {
        return differ("partner");
      }
      if (a.peer >= 0 && a.peer < devices ? b.peer != sigma[a.peer] : b.peer != a.peer) {
        return differ("peer");
      }
      if (g_.group[i] >= 0 && group_map[g_.group[i]] != g_.group[j]) return differ("group");
    }
  }
  return "";
}

std::string FoldBuilder::LinkClasses(const std::vector<const std::vector<int>*>& gpus) {
  // The group CheckLinks passed last (a candidate's cyclic group is often the whole G).
  std::vector<std::vector<int>> group;
  for (const std::vector<int>* gpu : gpus) group.push_back(*gpu);
  std::sort(group.begin(), group.end());
  if (group == classes_of_) return "";
  classes_of_.clear();
  const std::string why =
      FoldLinkClasses(topology_, routes_, transfers_, gpus, &link_rep_, &link_mult_);
  if (why.empty()) classes_of_ = std::move(group);
  return why;
}

std::string FoldBuilder::CheckLinks(const Element& element) {
  std::vector<std::vector<int>> powers{element.gpu};
  const auto identity = [](const std::vector<int>& map) {
    for (size_t i = 0; i < map.size(); ++i) {
      if (map[i] != static_cast<int>(i)) return false;
    }
    return true;
  };
  while (!identity(powers.back())) {
    std::vector<int> next(element.gpu.size());
    for (size_t i = 0; i < next.size(); ++i) next[i] = element.gpu[powers.back()[i]];
    powers.push_back(std::move(next));
  }
  std::vector<const std::vector<int>*> gpus;
  for (const std::vector<int>& map : powers) gpus.push_back(&map);
  return LinkClasses(gpus);
}

bool FoldBuilder::BuildGroup(std::vector<Element> generators, std::string* why) {
  constexpr size_t kMaxOrder = 4096;
  Element identity;
  for (int d = 0; d < s_.devices; ++d) identity.device.push_back(d);
  const int num_gpus = topology_.NumGpus();
  for (int gpu = 0; gpu < num_gpus; ++gpu) identity.gpu.push_back(gpu);
  // Per image of device 0: the elements that map device 0 there (one each when G acts freely),
  // against which a product is compared before it is formed.
  std::vector<std::vector<int>> by_first(std::max(s_.devices, 1));
  by_first[0].push_back(0);
  elements_.push_back(std::move(identity));
  for (size_t e = 0; e < elements_.size(); ++e) {
    for (const Element& gen : generators) {
      const auto compose = [](const std::vector<int>& outer, const std::vector<int>& inner) {
        std::vector<int> out(inner.size());
        for (size_t i = 0; i < inner.size(); ++i) out[i] = outer[inner[i]];
        return out;
      };
      const std::vector<int>& inner = elements_[e].device;
      const size_t n = inner.size();
      const int first = n == 0 ? 0 : gen.device[inner[0]];
      bool seen = false;
      for (int k : by_first[first]) {
        const std::vector<int>& other = elements_[k].device;
        size_t i = 0;
        while (i < n && gen.device[inner[i]] == other[i]) ++i;
        if (i == n) {
          seen = true;
          break;
        }
      }
      if (seen) continue;
      Element next;
      next.device = compose(gen.device, inner);
      next.gpu = compose(gen.gpu, elements_[e].gpu);
      by_first[first].push_back(static_cast<int>(elements_.size()));
      elements_.push_back(std::move(next));
      if (elements_.size() > kMaxOrder) {
        *why = fmt::format("more than {} symmetries", kMaxOrder);
        return false;
      }
    }
  }
  for (size_t e = 1; e < elements_.size(); ++e) {
    for (int d = 0; d < s_.devices; ++d) {
      if (elements_[e].device[d] == d) {
        *why = fmt::format("a symmetry fixes device {}", d);
        return false;
      }
    }
  }
  return true;
}

std::string FoldBuilder::FoldPlans(SymmetryFold& fold) {
  std::vector<const std::vector<int>*> gpus;
  for (const Element& e : elements_) gpus.push_back(&e.gpu);
  auto folded = [&](int a, int b) {
    FoldedFlow flow;
    const RouteCache::Entry& route = routes_.Get(a, b);
    fold.FoldRoute(route.links, &flow.route);
    flow.latency_ns = route.latency_ns;
    return flow;
  };
  // Per device: whether it is a rank of the group at hand (an element, a permutation, maps the
  // group onto itself when it maps every rank to a rank).
  std::vector<char> member(std::max<size_t>(s_.devices, g_.placement.size()), 0);
  for (const PlanKey& key : plan_keys_) {
    const int group = std::get<0>(key);
    if (fold.rep_members_[group] == 0) continue;
    const std::vector<int>& ranks = s_.groups[group].ranks;
    for (int m : ranks) member[m] = 1;
    std::vector<const std::vector<int>*> stabilizer;
    for (const Element& e : elements_) {
      bool onto = true;
      for (int m : ranks) onto = onto && member[e.device[m]];
      if (onto) stabilizer.push_back(&e.gpu);
    }
    for (int m : ranks) member[m] = 0;
    FoldedPlan out;
    const std::string why =
        FoldCollectivePlan(PlanOf(key), gpus, stabilizer, folded, s_.groups[group].name, &out);
    if (!why.empty()) return why;
    fold.plans_.emplace(key, std::move(out));
  }
  return "";
}

namespace {

using Families = std::vector<std::pair<std::string, std::vector<std::vector<int>>>>;

// Candidates: one data-parallel replica on (replica block P x T); the tp ranks of every group
// rotated by each step of `tp_steps`. Each candidate is a family: the first that passes is taken.
Families Candidates(int devices, int block, int dp, int tp, const std::vector<int>& tp_steps) {
  Families families;
  if (dp > 1 && block >= 1 && devices == dp * block) {
    std::vector<int> sigma(devices);
    for (int d = 0; d < devices; ++d) sigma[d] = (d + block) % devices;
    families.push_back({"data-parallel", {std::move(sigma)}});
  }
  if (tp > 1 && devices % tp == 0 && !tp_steps.empty()) {
    families.push_back({"tensor-parallel", {}});
    for (int step : tp_steps) {
      std::vector<int> sigma(devices);
      for (int d = 0; d < devices; ++d) sigma[d] = d - d % tp + (d % tp + step) % tp;
      families.back().second.push_back(std::move(sigma));
    }
  }
  return families;
}

// 1, 2, 4, ... below `limit` that divide `divides`.
std::vector<int> PowerSteps(int limit, int divides) {
  std::vector<int> steps;
  for (int step = 1; step < limit; step *= 2) {
    if (divides % step == 0) steps.push_back(step);
  }
  return steps;
}

}  // namespace

std::string FoldBuilder::PickGenerators(const Families& families, std::vector<Element>* generators,
                                        bool* all_families) {
  std::vector<std::string> refused;
  for (const auto& [name, sigmas] : families) {
    std::vector<std::string> whys;
    for (const std::vector<int>& sigma : sigmas) {
      Element element;
      const std::string why = CheckCandidate(sigma, &element);
      if (why.empty()) {
        generators->push_back(std::move(element));
        whys.clear();
        break;
      }
      whys.push_back(why);
    }
    if (!whys.empty()) refused.push_back(fmt::format("{}: {}", name, fmt::join(whys, "; ")));
  }
  *all_families = refused.empty();
  return fmt::format("{}", fmt::join(refused, "; "));
}

SymmetryFold FoldBuilder::Build() {
  const ScheduleShape& shape = s_.shape;
  Collect();
  return Largest(shape.pp * shape.tp, shape.dp, shape.tp);
}

std::string FoldBuilder::CheckDeclared(const std::vector<int>& sigma, Element* element) {
  std::vector<int> group_map;
  const std::string why = CheckStructure(sigma, element, &group_map);
  return why.empty() ? CheckLinks(*element) : why;
}

SymmetryFold FoldBuilder::Largest(int block, int dp, int tp) {
  // A NIC shared by GPUs of one tp group carries their transfers by multiplicity; where a
  // rotation by 1 loads a class of links unevenly, a rotation by 2 or 4 may not.
  const Families families = Candidates(s_.devices, block, dp, tp, PowerSteps(tp, tp));
  std::vector<Element> generators;
  bool all = false;
  std::string why_not = PickGenerators(families, &generators, &all);
  // The accepted rotation by `step` tp ranks has order tp / step (1: none accepted).
  const auto is_rotation = [tp](const Element& e) { return e.device[0] > 0 && e.device[0] < tp; };
  int rotation_order = 1;
  for (const Element& e : generators) {
    if (is_rotation(e)) rotation_order = tp / e.device[0];
  }
  if (tp > 1 && rotation_order < tp && s_.devices % tp == 0) {
    // Permutations other than rotations (p3.16xlarge: the NIC hangs off one socket, so only
    // permutations within each socket keep the routes; rotations do not).
    std::string why;
    std::vector<Element> permutations = TpPermutations(tp, &why);
    std::vector<Permutation> tp_maps;
    for (const Element& e : permutations) {
      Permutation tau(tp);
      for (int r = 0; r < tp; ++r) tau[r] = e.device[r];
      tp_maps.push_back(std::move(tau));
    }
    const size_t order = tp_maps.empty() ? 1 : GeneratedGroup(tp_maps, tp).size();
    if (order > static_cast<size_t>(rotation_order)) {
      std::vector<Element> with;
      for (const Element& e : generators) {
        if (!is_rotation(e)) with.push_back(e);
      }
      std::vector<std::string> cycles;
      for (const Permutation& tau : tp_maps)
        cycles.push_back(fmt::format("[{}]", fmt::join(tau, " ")));
      with.insert(with.end(), permutations.begin(), permutations.end());
      const std::string note =
          fmt::format("{}{}tensor-parallel permutations {} taken (order {})", why_not,
                      why_not.empty() ? "" : "; ", fmt::join(cycles, ", "), order);
      SymmetryFold fold = Finish(std::move(with), note);
      if (fold.Folded()) return fold;
      why = fold.why_not_;
      elements_.clear();
    }
    if (!why.empty()) why_not += fmt::format("; tensor-parallel permutations: {}", why);
  }
  return Finish(std::move(generators), why_not);
}

std::vector<FoldBuilder::Element> FoldBuilder::TpPermutations(int tp, std::string* why) {
  constexpr size_t kMaxCandidates = 64;
  constexpr size_t kMaxVisits = 100000;
  constexpr size_t kMaxChecks = 16;
  // The routes' signatures (bandwidth and latency, link by link) as small integers.
  std::map<std::vector<std::pair<double, TimeNs>>, int> ids;
  const auto signature = [&](int from_device, int to_device) {
    std::vector<std::pair<double, TimeNs>> sig;
    for (int l : routes_.Get(g_.placement[from_device], g_.placement[to_device]).links) {
      sig.emplace_back(topology_.Links()[l].bw_bytes_per_s, topology_.Links()[l].latency_ns);
    }
    return ids.emplace(std::move(sig), static_cast<int>(ids.size())).first->second;
  };
  std::vector<std::vector<int>> pair(tp, std::vector<int>(tp));
  std::vector<int> color(tp, 0);
  for (int i = 0; i < tp; ++i) {
    for (int j = 0; j < tp; ++j) pair[i][j] = signature(i, j);
    // To and from the same rank of the next group (the next stage or replica).
    if (s_.devices >= 2 * tp) color[i] = signature(i, i + tp) * 1024 + signature(i + tp, i);
  }
  const std::vector<Permutation> candidates =
      SemiregularAutomorphisms(color, pair, kMaxCandidates, kMaxVisits);
  if (candidates.empty()) {
    *why = "no permutation of the tp ranks keeps their routes";
    return {};
  }
  std::vector<Permutation> accepted;
  std::vector<Element> elements;
  std::vector<std::string> whys;
  for (size_t c = 0; c < candidates.size() && c < kMaxChecks; ++c) {
    const Permutation& tau = candidates[c];
    std::vector<int> sigma(s_.devices);
    for (int d = 0; d < s_.devices; ++d) sigma[d] = d - d % tp + tau[d % tp];
    Element element;
    const std::string refused = CheckCandidate(sigma, &element);
    if (!refused.empty()) {
      whys.push_back(fmt::format("[{}]: {}", fmt::join(tau, " "), refused));
      continue;
    }
    accepted.push_back(tau);
    elements.push_back(std::move(element));
  }
  std::vector<Element> generators;
  for (int k : LargestFreeGroup(accepted, tp)) generators.push_back(std::move(elements[k]));
  if (generators.empty()) *why = fmt::format("{}", fmt::join(whys, "; "));
  return generators;
}

std::string FoldBuilder::CollectDeclared(const std::vector<std::vector<int>>& perms) {
  const int devices = s_.devices;
  IndexGroups();
  // In device terms first (a root is a device), closed under the renamings, then on GPUs.
  std::set<PlanKey> keys;
  // Pairs (a, b) in the order found (from mapped_pairs on still to be mapped), and an
  // open-addressing set of their keys a x devices + b (a power of 2 of slots, at most half
  // full; kNoPair: empty).
  constexpr uint64_t kNoPair = ~uint64_t{0};
  std::vector<std::pair<int, int>> pairs;
  size_t mapped_pairs = 0;
  std::vector<uint64_t> pair_set(64, kNoPair);
  const auto pair_key = [&](int a, int b) {
    return static_cast<uint64_t>(a) * static_cast<uint64_t>(devices) + static_cast<uint64_t>(b);
  };
  const auto slot_of = [&](uint64_t key) {
    const size_t mask = pair_set.size() - 1;
    size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
    while (pair_set[i] != kNoPair && pair_set[i] != key) i = (i + 1) & mask;
    return i;
  };
  const auto add_pair = [&](int a, int b) {
    const uint64_t key = pair_key(a, b);
    const size_t i = slot_of(key);
    if (pair_set[i] == key) return;
    pair_set[i] = key;
    pairs.emplace_back(a, b);
    if (2 * pairs.size() > pair_set.size()) {
      pair_set.assign(2 * pair_set.size(), kNoPair);
      for (const auto& [x, y] : pairs) {
        const uint64_t k = pair_key(x, y);
        pair_set[slot_of(k)] = k;
      }
    }
  };
  if (g_.comm_keys != nullptr) {
    keys.insert(g_.comm_keys->plans.begin(), g_.comm_keys->plans.end());
    for (const auto& [a, b] : g_.comm_keys->sends) add_pair(a, b);
  }
  PlanKey last_key{-1, -1, 0, -1};
  std::pair<int, int> last_pair{-1, -1};
  for (size_t i = 0; g_.comm_keys == nullptr && i < s_.ops.size(); ++i) {
    const Op& op = s_.ops[i];
    if (g_.group[i] >= 0) {
      const PlanKey key{
          g_.group[i], static_cast<int>(op.kind), op.bytes,
          op.kind == OpKind::kBroadcast && op.peer >= 0 && op.peer < devices ? op.peer : -1};
      if (key != last_key) keys.insert(key);
      last_key = key;
    }
    if (op.kind == OpKind::kSend && op.peer >= 0 && op.peer < devices) {
      const std::pair<int, int> pair{op.device, op.peer};
      if (pair != last_pair) add_pair(pair.first, pair.second);
      last_pair = pair;
    }
  }
  std::vector<PlanKey> key_queue(keys.begin(), keys.end());
  while (!key_queue.empty()) {
    const PlanKey key = key_queue.back();
    key_queue.pop_back();
    const auto& [group, kind, bytes, root] = key;
    for (const std::vector<int>& sigma : perms) {
      const int image = GroupImage(sigma, group);
      if (image < 0) {
        return fmt::format("group {} maps onto no group under the declared symmetry",
                           s_.groups[group].name);
      }
      const PlanKey mapped{image, kind, bytes, root >= 0 ? sigma[root] : -1};
      if (keys.insert(mapped).second) key_queue.push_back(mapped);
    }
  }
  for (; mapped_pairs < pairs.size(); ++mapped_pairs) {
    const auto [a, b] = pairs[mapped_pairs];
    for (const std::vector<int>& sigma : perms) add_pair(sigma[a], sigma[b]);
  }
  for (const auto& [group, kind, bytes, root] : keys) {
    plan_keys_.insert({group, kind, bytes, root >= 0 ? g_.placement[root] : -1});
  }
  for (const auto& [a, b] : pairs) p2p_pairs_.emplace(g_.placement[a], g_.placement[b]);
  return "";
}

SymmetryFold FoldBuilder::BuildDeclared(bool largest) {
  declared_ = true;
  const DeclaredSymmetry& declared = s_.symmetry;
  SymmetryFold identity;
  auto refuse = [&](const std::string& why) {
    identity.why_not_ = kDeclaredRefusal + why;
    return identity;
  };
  if (!declared.representatives_only) return refuse("the schedule declares none");
  for (TimeNs ns : g_.compute_ns) {
    if (ns >= 0) return refuse("measured durations are per op of the whole schedule");
  }
  const int devices = s_.devices;
  const int block = declared.replica_block;
  const int tp = declared.tp;
  if ((block > 0 && devices % block != 0) || (tp > 1 && block > 0 && block % tp != 0) ||
      (tp > 1 && (declared.tp_ranks < 1 || tp % declared.tp_ranks != 0))) {
    return refuse("its replica block, tp degree and tp ranks do not divide the devices");
  }
  // The ops of the whole iteration are the present ones' images under the replica shift and
  // the rotation by one tp rank; the fold simulates the rotation by a step that divides the tp
  // ranks present.
  const Families closure = Candidates(devices, block, block > 0 ? devices / block : 1, tp,
                                      tp > 1 ? std::vector<int>{1} : std::vector<int>{});
  std::vector<std::vector<int>> perms;
  for (const auto& family : closure) perms.push_back(family.second.front());
  std::string why = CollectDeclared(perms);
  if (!why.empty()) return refuse(why);
  if (largest || !declared.tp_set.empty()) {
    // Build's choice among the rotations and the other tp permutations (the tp ranks reach
    // other groups only through the same rank or whole groups: schedule/schedule_ir.h).
    SymmetryFold fold = Largest(block, block > 0 ? devices / block : 1, tp > 1 ? tp : 1);
    if (!fold.Folded()) return refuse(fold.why_not_);
    for (int d = 0; d < devices && !largest; ++d) {
      if (fold.IsRep(d) && !declared.Present(d)) {
        return refuse(fmt::format("device {} is simulated but its ops are not in the schedule", d));
      }
    }
    return fold;
  }
  const Families families = Candidates(
      devices, block, block > 0 ? devices / block : 1, tp,
      tp > 1 ? PowerSteps(declared.tp_ranks + 1, declared.tp_ranks) : std::vector<int>{});
  std::vector<Element> generators;
  bool all = false;
  why = PickGenerators(families, &generators, &all);
  if (!all) return refuse(why + " (generate the whole schedule)");
  SymmetryFold fold = Finish(std::move(generators), "");
  if (!fold.Folded()) return refuse(fold.why_not_);
  for (int d = 0; d < devices; ++d) {
    if (fold.IsRep(d) && !declared.Present(d)) {
      return refuse(fmt::format("device {} is simulated but its ops are not in the schedule", d));
    }
  }
  return fold;
}

SymmetryFold FoldBuilder::Finish(std::vector<Element> generators, std::string why_not) {
  SymmetryFold identity;
  identity.why_not_ = std::move(why_not);
  const int devices = s_.devices;
  std::string why;
  if (generators.empty()) return identity;
  if (!BuildGroup(std::move(generators), &why)) {
    identity.why_not_ = why;
    return identity;
  }
  SymmetryFold fold;
  fold.order_ = static_cast<int>(elements_.size());
  fold.why_not_ = identity.why_not_;
  fold.rep_device_.assign(devices, -1);
  for (int d = 0; d < devices; ++d) {
    int rep = d;
    for (const Element& e : elements_) rep = std::min(rep, e.device[d]);
    fold.rep_device_[d] = rep;
  }
  // Declared: the schedule holds the representatives' ops (and maybe more that no fold
  // element maps onto them); each op stands for itself.
  if (!declared_) {
    fold.rep_op_.resize(s_.ops.size());
    for (size_t i = 0; i < s_.ops.size(); ++i) {
      fold.rep_op_[i] = device_ops_[fold.rep_device_[s_.ops[i].device]][position_[i]];
    }
  }
  std::vector<const std::vector<int>*> gpus;
  for (const Element& e : elements_) gpus.push_back(&e.gpu);
  why = LinkClasses(gpus);
  if (!why.empty()) {
    identity.why_not_ = why;
    return identity;
  }
  fold.link_rep_ = link_rep_;
  fold.link_mult_ = link_mult_;
  // Groups holding a representative hold their members' representatives; images of a group
  // are it or disjoint from it.
  fold.rep_members_.assign(s_.groups.size(), 0);
  std::vector<char> member(std::max<size_t>(devices, g_.placement.size()), 0);  // ranks of h
  for (size_t h = 0; h < s_.groups.size(); ++h) {
    const std::vector<int>& ranks = s_.groups[h].ranks;
    for (int m : ranks) fold.rep_members_[h] += fold.rep_device_[m] == m ? 1 : 0;
    if (fold.rep_members_[h] == 0) continue;
    for (int m : ranks) member[m] = 1;
    std::string refused;
    for (int m : ranks) {
      if (!member[fold.rep_device_[m]]) {
        refused = fmt::format("group {} does not hold the representative of device {}",
                              s_.groups[h].name, m);
        break;
      }
    }
    for (size_t e = 0; e < elements_.size() && refused.empty(); ++e) {
      int inside = 0;
      for (int m : ranks) inside += member[elements_[e].device[m]];
      if (inside != 0 && inside != static_cast<int>(ranks.size())) {
        refused = fmt::format("a symmetry maps group {} partly onto itself", s_.groups[h].name);
      }
    }
    for (int m : ranks) member[m] = 0;
    if (!refused.empty()) {
      identity.why_not_ = refused;
      return identity;
    }
  }
  why = FoldPlans(fold);
  if (!why.empty()) {
    identity.why_not_ = why;
    return identity;
  }
  return fold;
}

SymmetryFold SymmetryFold::Find(const FoldGraph& graph, const NetworkTopology& topology,
                                RouteCache& routes, const CollectiveOptions& collectives) {
  return FoldBuilder(graph, topology, routes, collectives).Build();
}

namespace {

bool SameSymmetry(const DeclaredSymmetry& a, const DeclaredSymmetry& b) {
  return a.representatives_only == b.representatives_only && a.replica_block == b.replica_block &&
         a.tp == b.tp && a.tp_ranks == b.tp_ranks && a.tp_set == b.tp_set;
}

bool SameGroups(const std::vector<Group>& a, const std::vector<Group>& b) {
  if (a.size() != b.size()) return false;
  for (size_t h = 0; h < a.size(); ++h) {
    if (a[h].ranks != b[h].ranks || a[h].name != b[h].name) return false;
  }
  return true;
}

// Whether `memo` was computed from the inputs Declared reads of `graph` (DeclaredFoldMemo).
bool SameInputs(const DeclaredFoldMemo& memo, const FoldGraph& graph,
                const NetworkTopology& topology, bool largest) {
  const Schedule& s = graph.schedule;
  return memo.topology == &topology && memo.largest == largest && memo.devices == s.devices &&
         memo.placement == graph.placement && memo.compute_ns == graph.compute_ns &&
         memo.device_speed == graph.device_speed &&
         memo.comm_keys.plans == graph.comm_keys->plans &&
         memo.comm_keys.sends == graph.comm_keys->sends &&
         SameSymmetry(memo.symmetry, s.symmetry) && SameGroups(memo.groups, s.groups);
}

// BuildDeclared, or the fold a PlanCache kept from equal inputs (DeclaredFoldMemo): with the
// comm keys and the cache's plans, Declared reads only those inputs, so the kept fold is the
// one BuildDeclared would return.
SymmetryFold DeclaredKept(const FoldGraph& graph, const NetworkTopology& topology,
                          RouteCache& routes, const CollectiveOptions& collectives, bool largest) {
  PlanCache* cache = graph.plans;
  const bool keep = cache != nullptr && cache->KeepsDeclaredFolds() && graph.comm_keys != nullptr &&
                    &routes.Topology() == &topology;
  if (keep) {
    for (const auto& memo : cache->DeclaredFolds()) {
      if (SameInputs(*memo, graph, topology, largest)) {
        cache->CountDeclaredFoldHit();
        return memo->fold;
      }
    }
  }
  SymmetryFold fold = FoldBuilder(graph, topology, routes, collectives).BuildDeclared(largest);
  if (keep) {
    auto memo = std::make_shared<DeclaredFoldMemo>();
    memo->topology = &topology;
    memo->largest = largest;
    memo->devices = graph.schedule.devices;
    memo->symmetry = graph.schedule.symmetry;
    memo->groups = graph.schedule.groups;
    memo->placement = graph.placement;
    memo->compute_ns = graph.compute_ns;
    memo->device_speed = graph.device_speed;
    memo->comm_keys = *graph.comm_keys;
    memo->fold = fold;
    cache->DeclaredFolds().push_back(std::move(memo));
  }
  return fold;
}

}  // namespace

SymmetryFold SymmetryFold::Declared(const FoldGraph& graph, const NetworkTopology& topology,
                                    RouteCache& routes, const CollectiveOptions& collectives) {
  return DeclaredKept(graph, topology, routes, collectives, /*largest=*/false);
}

SymmetryFold SymmetryFold::DeclaredLargest(const FoldGraph& graph, const NetworkTopology& topology,
                                           RouteCache& routes,
                                           const CollectiveOptions& collectives) {
  return DeclaredKept(graph, topology, routes, collectives, /*largest=*/true);
}

void SymmetryFold::FoldRoute(const std::vector<int>& links, std::vector<int>* out) const {
  out->clear();
  for (int link : links) {
    for (int k = 0; k < LinkMultiplicity(link); ++k) out->push_back(LinkRep(link));
  }
}

const FoldedPlan* SymmetryFold::Plan(int group, OpKind kind, Bytes bytes, int root_gpu) const {
  auto it = plans_.find(PlanKey{group, static_cast<int>(kind), bytes, root_gpu});
  return it == plans_.end() ? nullptr : &it->second;
}

}  // namespace terasim

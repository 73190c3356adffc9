// The compute work the replay graph resolves per op (ReplayGraph::work, WorkIndex), the comm keys
// it collects for a declared fold (ReplayGraph::comm_keys) and its `after` positions checked
// while it is built (a mismatch found late falls back to the keys).
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "models/model_card.h"
#include "schedule/generator.h"
#include "sim/op_work.h"
#include "sim/replay_graph.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/schedule_builder.h"

namespace terasim {
namespace {

using Catch::Matchers::Contains;

// The tiny card (4 layers, 4 heads) under `strategy`.
GenerateOptions Tiny(Strategy strategy, int dp, int pp, int tp, int microbatches) {
  GenerateOptions o;
  o.model = LoadModelCard("tiny");
  std::tie(o.strategy, o.dp, o.pp, o.tp, o.microbatches) =
      std::make_tuple(strategy, dp, pp, tp, microbatches);
  return o;
}

bool SameWork(const SliceWork& a, const SliceWork& b) {
  return a.pass == b.pass && a.layers == b.layers && a.block == b.block && a.rows == b.rows &&
         a.tokens == b.tokens && a.context == b.context && a.tp == b.tp &&
         a.recompute_attention == b.recompute_attention;
}

std::vector<int> Identity(int devices) {
  std::vector<int> gpus;
  for (int d = 0; d < devices; ++d) gpus.push_back(d);
  return gpus;
}

TEST_CASE("The replay graph numbers each compute op's work as SliceWorkOf has it") {
  std::vector<GenerateOptions> cases = {Tiny(Strategy::kOneFOneB, 2, 2, 2, 3),
                                        Tiny(Strategy::kZbH1, 1, 2, 2, 2)};
  cases[0].zero = 1;
  cases[0].recompute = Recompute::kSelective;
  GenerateOptions terapipe = Tiny(Strategy::kTeraPipe, 1, 2, 2, 2);
  terapipe.uniform_slices = 3;
  cases.push_back(terapipe);
  for (const GenerateOptions& options : cases) {
    const Schedule s = Generate(options);
    const ReplayGraph g = BuildReplayGraph(s, Identity(s.devices));
    REQUIRE(g.work.size() == s.ops.size());
    int compute = 0;
    for (size_t i = 0; i < s.ops.size(); ++i) {
      if (!IsCompute(s.ops[i].kind)) {
        REQUIRE(g.work[i] == -1);
        continue;
      }
      ++compute;
      REQUIRE(g.work[i] >= 0);
      REQUIRE(g.work[i] < static_cast<int>(g.works.size()));
      REQUIRE(SameWork(g.works[g.work[i]], SliceWorkOf(s.ops[i], g.work_tp[i])));
    }
    // Distinct works, fewer than the compute ops (every micro-batch repeats its stage's work).
    for (size_t a = 0; a < g.works.size(); ++a) {
      for (size_t b = a + 1; b < g.works.size(); ++b) {
        REQUIRE_FALSE(SameWork(g.works[a], g.works[b]));
      }
    }
    REQUIRE(static_cast<int>(g.works.size()) < compute);
  }
}

TEST_CASE("The replay graph's per-op fields and instance sizes follow from the ops") {
  GenerateOptions broadcast = Tiny(Strategy::kOneFOneB, 2, 2, 2, 2);
  broadcast.boundary = Boundary::kBroadcast;  // BROADCASTs in the tp groups
  GenerateOptions zero = Tiny(Strategy::kZbH1, 2, 2, 2, 2);
  zero.zero = 1;  // dp collectives of the ZeRO optimizer
  for (const GenerateOptions& options : {Tiny(Strategy::kTeraPipe, 2, 2, 2, 2), broadcast, zero,
                                         Tiny(Strategy::kGpipe, 2, 2, 1, 4)}) {
    const Schedule s = Generate(options);
    // A placement other than the identity: device d on GPU devices - 1 - d.
    std::vector<int> placement(s.devices);
    for (int d = 0; d < s.devices; ++d) placement[d] = s.devices - 1 - d;
    const ReplayGraph g = BuildReplayGraph(s, placement);
    std::vector<int> members(g.instances.size(), 0);
    std::set<std::pair<int, std::string>> streams;  // (device, stream) seen so far
    for (size_t i = 0; i < s.ops.size(); ++i) {
      const Op& op = s.ops[i];
      REQUIRE(g.device[i] == op.device);
      REQUIRE(g.gpu[i] == s.devices - 1 - op.device);
      REQUIRE(g.op_class[i] == ClassifyKind(op.kind));
      // A predecessor on its stream (every op but the first of a stream) and its after deps.
      const bool first = streams.emplace(op.device, op.stream).second;
      REQUIRE(g.pending[i] == (first ? 0 : 1) + static_cast<int>(op.after.size()));
      REQUIRE((g.instance[i] >= 0) == IsCollective(op.kind));
      if (g.instance[i] >= 0) ++members[g.instance[i]];
    }
    REQUIRE_FALSE(g.instances.empty());
    for (size_t k = 0; k < g.instances.size(); ++k) {
      REQUIRE(g.instances[k].members == members[k]);
      // A whole schedule: every rank of the group issues each instance once.
      REQUIRE(g.instances[k].members == g.instances[k].expected);
    }
  }
}

TEST_CASE("The replay graph lists each SEND pair once, for a device with many peers too") {
  // Device 0 sends to peers 1..20 in two rounds (peer order 1, 2, ..., 20, then 20, ..., 1),
  // device 3 to peer 2 three times: 20 + 1 distinct (device, peer), sorted.
  Schedule s;
  s.devices = 21;
  int n = 0;
  for (int round = 0; round < 2; ++round) {
    for (int k = 1; k <= 20; ++k) {
      const int peer = round == 0 ? k : 21 - k;
      ++n;  // op S<n-1> carries tensor t<n>
      s.ops.push_back(testing::P2p("S" + std::to_string(n - 1), OpKind::kSend, 0, peer,
                                   "t" + std::to_string(n), 8));
    }
  }
  for (int k = 0; k < 3; ++k) {
    ++n;
    s.ops.push_back(
        testing::P2p("S" + std::to_string(n - 1), OpKind::kSend, 3, 2, "t" + std::to_string(n), 8));
  }
  const ReplayGraph g = BuildReplayGraph(s, Identity(s.devices));
  std::vector<std::pair<int, int>> expected;
  for (int peer = 1; peer <= 20; ++peer) expected.emplace_back(0, peer);
  expected.emplace_back(3, 2);
  REQUIRE(g.comm_keys.sends == expected);
}

TEST_CASE("WorkIndex numbers an op as it numbers the op's SliceWork") {
  GenerateOptions options = Tiny(Strategy::kOneFOneB, 2, 2, 2, 3);
  options.recompute = Recompute::kSelective;  // backward works recompute attention
  const Schedule s = Generate(options);
  const std::vector<int> tp = WorkTpDegrees(s);
  WorkIndex by_op, by_work;
  int compute = 0;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (!IsCompute(s.ops[i].kind)) continue;
    ++compute;
    // Both number works 0, 1, ... in order of first appearance: the same sequence of ids.
    REQUIRE(by_op.Intern(s.ops[i], tp[i]) == by_work.Intern(SliceWorkOf(s.ops[i], tp[i])));
  }
  REQUIRE(by_op.Size() == by_work.Size());
  REQUIRE(by_op.Size() < compute);  // micro-batches repeat their stage's works
  for (int k = 0; k < by_op.Size(); ++k) REQUIRE(SameWork(by_op.Works()[k], by_work.Works()[k]));
}

TEST_CASE("WorkIndex's memo of op fields numbers ops that differ in any one field apart") {
  // Ops that differ from a base in one field SliceWorkOf reads (or in tp), each asked many
  // times in a scrambled order: numbered as their SliceWorks are (a memo hit for one op's
  // fields never answers for another's). A selective FWD has the plain FWD's work (only a
  // backward recomputes attention): two ops, one work.
  Op base;
  base.key = "F";
  base.kind = OpKind::kFwd;
  base.layers = {0, 2};
  base.part = LayerPart::kAttention;
  base.rows = 2;
  base.tokens = {16, 48};
  std::vector<std::pair<Op, int>> variants = {{base, 4}};
  auto add = [&](auto&& edit, int tp = 4) {
    Op op = base;
    edit(op);
    variants.emplace_back(op, tp);
  };
  add([](Op& op) { op.kind = OpKind::kBwd; });
  add([](Op& op) { op.kind = OpKind::kBwd, op.recompute = Recompute::kSelective; });
  add([](Op& op) { op.recompute = Recompute::kSelective; });
  add([](Op& op) { op.part = LayerPart::kMlp; });
  add([](Op& op) { op.part = LayerPart::kWhole; });
  add([](Op& op) { op.layers = {2, 3}; });
  add([](Op& op) { op.layers = {5, 7}; });  // the base's length: the base's work
  add([](Op& op) { op.rows = 1; });
  add([](Op& op) { op.tokens = {0, 32}; });
  add([](Op& op) { op.tokens = {16, 32}; });
  add([](Op&) {}, 8);
  WorkIndex by_op, by_work;
  for (int round = 0; round < 200; ++round) {
    const auto& [op, tp] = variants[(round * 7 + round / 13) % variants.size()];
    INFO(round);
    REQUIRE(by_op.Intern(op, tp) == by_work.Intern(SliceWorkOf(op, tp)));
  }
  REQUIRE(by_op.Size() == by_work.Size());
  REQUIRE(by_op.Size() == static_cast<int>(variants.size()) - 2);
}

TEST_CASE("The replay graph's comm keys are its ops' distinct plan keys and SEND pairs") {
  GenerateOptions broadcast = Tiny(Strategy::kOneFOneB, 2, 2, 2, 2);
  broadcast.boundary = Boundary::kBroadcast;  // BROADCASTs with a root
  for (const GenerateOptions& options : {Tiny(Strategy::kTeraPipe, 2, 2, 2, 2), broadcast}) {
    const Schedule s = Generate(options);
    const ReplayGraph g = BuildReplayGraph(s, Identity(s.devices));
    // Every collective op's (group, kind, bytes, root device or -1), every SEND's (device,
    // peer), as sets: sorted, each once.
    std::set<std::tuple<int, int, Bytes, int>> plans;
    std::set<std::pair<int, int>> sends;
    bool rooted = false;
    for (size_t i = 0; i < s.ops.size(); ++i) {
      const Op& op = s.ops[i];
      if (g.instance[i] >= 0) {
        const bool root = op.kind == OpKind::kBroadcast;
        rooted = rooted || root;
        plans.emplace(g.instances[g.instance[i]].group, static_cast<int>(op.kind), op.bytes,
                      root ? op.peer : -1);
      }
      if (op.kind == OpKind::kSend) sends.emplace(op.device, op.peer);
    }
    REQUIRE(!plans.empty());
    REQUIRE(!sends.empty());
    REQUIRE(g.comm_keys.plans == std::vector(plans.begin(), plans.end()));
    REQUIRE(g.comm_keys.sends == std::vector(sends.begin(), sends.end()));
    REQUIRE(rooted == (options.boundary == Boundary::kBroadcast));
  }
}

TEST_CASE("A replay graph whose after positions go wrong at its last deps falls back to its keys") {
  const Schedule generated = Generate(Tiny(Strategy::kOneFOneB, 1, 2, 1, 3));
  // The last op with an after dep now names the first op's key instead: the positions match
  // up to that op, then not.
  Schedule edited = generated;
  int last = -1;
  for (int i = 0; i < static_cast<int>(edited.ops.size()); ++i) {
    if (!edited.ops[i].after.empty() && edited.ops[i].device == edited.ops[0].device) last = i;
  }
  REQUIRE(last > 0);
  edited.ops[last].after.back() = edited.ops[0].key;
  REQUIRE(edited.after_ops.Fits(edited.ops));
  REQUIRE_FALSE(AfterOpsMatch(edited));
  Schedule cleared = edited;
  cleared.after_ops = {};
  const ReplayGraph a = BuildReplayGraph(edited, Identity(edited.devices));
  const ReplayGraph b = BuildReplayGraph(cleared, Identity(cleared.devices));
  REQUIRE(a.pending == b.pending);
  REQUIRE(a.succ_begin == b.succ_begin);
  REQUIRE(a.succ == b.succ);
  REQUIRE(a.work == b.work);
  // Op 0 now precedes `last` (the edited dep), which the generator's positions did not say.
  const ReplayGraph original = BuildReplayGraph(generated, Identity(generated.devices));
  REQUIRE(a.pending[last] == original.pending[last]);  // one dep for another
  const auto succ0 =
      std::vector<int>(a.succ.begin() + a.succ_begin[0], a.succ.begin() + a.succ_begin[1]);
  REQUIRE(std::find(succ0.begin(), succ0.end(), last) != succ0.end());
}

TEST_CASE("An error before the first wrong after position names the same op as the keys do") {
  Schedule s = Generate(Tiny(Strategy::kOneFOneB, 1, 2, 1, 2));
  // Op 1 names an undeclared group; the last op's after dep is wrong (its position no longer
  // names its key): building by position stops at op 1 first, as building by key does.
  s.ops[1].kind = OpKind::kAllReduce;
  s.ops[1].group = "missing";
  int last = -1;
  for (int i = 0; i < static_cast<int>(s.ops.size()); ++i) {
    if (!s.ops[i].after.empty()) last = i;
  }
  REQUIRE(last > 1);
  s.ops[last].after.back() = s.ops[0].key;
  REQUIRE_THROWS_WITH(BuildReplayGraph(s, Identity(s.devices)),
                      Contains(s.ops[1].key + ": group missing is not declared"));
}

TEST_CASE("WorkTimeCache by work number calls the cost model once per number") {
  const testing::FakeCost cost(1, 2);  // 1 ns per layer and token forward, 2 backward
  WorkIndex index;
  SliceWork a;
  a.layers = 2;
  a.tokens = 16;
  SliceWork b = a;
  b.pass = Pass::kBackward;
  REQUIRE(index.Intern(a) == 0);
  REQUIRE(index.Intern(b) == 1);
  REQUIRE(index.Intern(a) == 0);  // known: the same number
  REQUIRE(index.Size() == 2);
  WorkTimeCache cache(cost);
  REQUIRE(cache.Time(1, index.Works()) == 64);  // 2 x 16 x 2 ns
  REQUIRE(cache.Time(0, index.Works()) == 32);  // 2 x 16 x 1 ns
  REQUIRE(cache.Time(1, index.Works()) == 64);
  REQUIRE(cache.Size() == 2);
}

}  // namespace
}  // namespace terasim

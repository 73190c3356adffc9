// The generator's `after` deps as op positions (Schedule::after_ops) and its integer names of the
// ops' streams, groups and tensors (Op::stream_id, group_id, tensor_id) against the strings they
// stand for, and the replay graph built from them against the one built from the strings of the
// same schedule (read back from .pir, or with the ids cleared) (sim/replay_graph.h).
#include <catch2/catch.hpp>

#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "models/model_card.h"
#include "schedule/generator.h"
#include "schedule/pir_format.h"
#include "schedule/slicing_spec.h"
#include "sim/replay_graph.h"

namespace terasim {
namespace {

GenerateOptions Tiny(Strategy strategy, int dp, int pp, int tp, int microbatches, int v = 1) {
  GenerateOptions o;
  o.model = LoadModelCard("tiny");  // 4 layers, 4 heads
  o.strategy = strategy;
  o.dp = dp;
  o.pp = pp;
  o.tp = tp;
  o.microbatches = microbatches;
  o.virtual_stages = v;
  return o;
}

// Every generator family at small sizes, with each dp step, the recipes, the broadcast
// boundary and a representatives-only schedule: (label, options).
std::vector<std::pair<std::string, GenerateOptions>> Cases() {
  std::vector<std::pair<std::string, GenerateOptions>> cases = {
      {"gpipe", Tiny(Strategy::kGpipe, 1, 2, 1, 3)},
      {"1f1b tp2", Tiny(Strategy::kOneFOneB, 1, 4, 2, 4)},
      {"interleaved", Tiny(Strategy::kInterleaved, 1, 2, 2, 4, 2)},
      {"zb-h1", Tiny(Strategy::kZbH1, 1, 2, 1, 4)},
      {"zb-h2", Tiny(Strategy::kZbH2, 1, 2, 2, 4)},
      {"looped-bfs", Tiny(Strategy::kLoopedBfs, 1, 2, 1, 4, 2)},
      {"interleaved-zb", Tiny(Strategy::kInterleavedZb, 1, 2, 1, 4, 2)},
      {"zb-v", Tiny(Strategy::kZbV, 1, 2, 2, 4, 2)},
      {"dualpipe-v", Tiny(Strategy::kDualPipeV, 1, 2, 1, 4, 2)},
  };
  GenerateOptions gpipe_forward = Tiny(Strategy::kGpipe, 1, 2, 1, 3);
  gpipe_forward.backward_in_forward_order = true;
  cases.emplace_back("gpipe backward in forward order", gpipe_forward);
  for (SliceOrder order : {SliceOrder::kFlush, SliceOrder::kOneFOneB}) {
    GenerateOptions terapipe = Tiny(Strategy::kTeraPipe, 1, 2, 2, 2);
    terapipe.uniform_slices = 3;
    terapipe.order = order;
    cases.emplace_back("terapipe " + SliceOrderName(order), terapipe);
  }
  GenerateOptions mixed = Tiny(Strategy::kTeraPipe, 2, 2, 1, 1);
  mixed.slicing = ParseSlicingSpec("1:[5,11,16]+2:[32]");
  cases.emplace_back("terapipe dp2 mixed slicing", mixed);
  GenerateOptions broadcast = Tiny(Strategy::kOneFOneB, 1, 2, 2, 2);
  broadcast.boundary = Boundary::kBroadcast;
  cases.emplace_back("1f1b broadcast boundary", broadcast);
  for (DpStep step : {DpStep::kPerStage, DpStep::kFlattened, DpStep::kBucketed}) {
    for (Strategy strategy : {Strategy::kOneFOneB, Strategy::kInterleaved, Strategy::kZbH1}) {
      GenerateOptions o = Tiny(strategy, 2, 2, 2, 2, strategy == Strategy::kInterleaved ? 2 : 1);
      o.dp_step = step;
      o.dp_bucket_bytes = 1;  // one bucket per layer
      cases.emplace_back("dp2 " + StrategyName(strategy) + " " + DpStepName(step), o);
    }
  }
  for (int zero : {1, 2, 3}) {
    GenerateOptions o = Tiny(Strategy::kOneFOneB, 2, 2, 2, 2);
    o.zero = zero;
    o.sequence_parallel = zero == 2;
    o.recompute = zero == 3 ? Recompute::kFull : Recompute::kSelective;
    cases.emplace_back("zero " + std::to_string(zero), o);
  }
  GenerateOptions sp = Tiny(Strategy::kZbH1, 2, 2, 2, 2);
  sp.sequence_parallel = true;
  sp.recompute = Recompute::kFull;
  sp.dp_step = DpStep::kBucketed;
  cases.emplace_back("zb-h1 sp full recompute bucketed", sp);
  GenerateOptions flat_sp = Tiny(Strategy::kGpipe, 2, 2, 2, 2);
  flat_sp.sequence_parallel = true;
  flat_sp.dp_step = DpStep::kFlattened;
  cases.emplace_back("gpipe sp flattened", flat_sp);
  GenerateOptions reps = Tiny(Strategy::kOneFOneB, 2, 2, 2, 2);
  reps.representatives_only = true;
  reps.representative_tp_ranks = 1;
  cases.emplace_back("representatives only", reps);
  return cases;
}

std::vector<int> Placement(const Schedule& s) {
  std::vector<int> gpus(s.devices);
  std::iota(gpus.begin(), gpus.end(), 0);
  return gpus;
}

void RequireSameGraph(const ReplayGraph& a, const ReplayGraph& b) {
  REQUIRE(a.pending == b.pending);
  REQUIRE(a.succ_begin == b.succ_begin);
  REQUIRE(a.succ == b.succ);
  REQUIRE(a.partner == b.partner);
  REQUIRE(a.instance == b.instance);
  REQUIRE(a.work_tp == b.work_tp);
  REQUIRE(a.work == b.work);
  REQUIRE(a.works.size() == b.works.size());
  REQUIRE(a.op_class == b.op_class);
  REQUIRE(a.gpu == b.gpu);
  REQUIRE(a.device == b.device);
  REQUIRE(a.group_gpus == b.group_gpus);
  REQUIRE(a.comm_keys.plans == b.comm_keys.plans);
  REQUIRE(a.comm_keys.sends == b.comm_keys.sends);
  REQUIRE(a.instances.size() == b.instances.size());
  for (size_t k = 0; k < a.instances.size(); ++k) {
    REQUIRE(a.instances[k].group == b.instances[k].group);
    REQUIRE(a.instances[k].kind == b.instances[k].kind);
    REQUIRE(a.instances[k].bytes == b.instances[k].bytes);
    REQUIRE(a.instances[k].expected == b.instances[k].expected);
    REQUIRE(a.instances[k].members == b.instances[k].members);
    REQUIRE(a.instances[k].root_gpu == b.instances[k].root_gpu);
  }
  // The closed-form analysis' watch: the streams are numbered apart (ids or names), the rest
  // is equal.
  REQUIRE(a.group_member.size() == b.group_member.size());
  for (size_t g = 0; g < a.group_member.size(); ++g) {
    REQUIRE(a.group_member[g].device == b.group_member[g].device);
    REQUIRE(a.group_member[g].ops == b.group_member[g].ops);
    REQUIRE(a.group_member[g].one_stream == b.group_member[g].one_stream);
  }
  REQUIRE(a.paired_sends == b.paired_sends);
  REQUIRE(a.has_ops == b.has_ops);
}

// `s` with the integer names of its ops cleared (stream_id -1): the graph reads the strings.
Schedule WithoutIds(Schedule s) {
  for (Op& op : s.ops) op.stream_id = -1;
  return s;
}

// Whether every op of `s` carries integer names that stand for its strings: on each device
// equal stream ids for equal stream names and only those; group_id the position of the op's
// group (-1 for none); with `tensors_named`, on each (sender, receiver) pair equal tensor ids for
// equal SEND / RECV tensors and only those (GenerateForReplay names none).
void RequireIdsNameStrings(const Schedule& s, bool tensors_named = true) {
  std::map<std::pair<int, int>, std::string> stream_of;            // (device, id) -> name
  std::map<std::pair<int, std::string>, int> stream_id_of;         // (device, name) -> id
  std::map<std::tuple<int, int, int64_t>, std::string> tensor_of;  // (src, dst, id) -> tensor
  std::map<std::tuple<int, int, std::string>, int64_t> tensor_id_of;
  for (const Op& op : s.ops) {
    INFO(op.key);
    REQUIRE(op.stream_id >= 0);
    REQUIRE(stream_of.try_emplace({op.device, op.stream_id}, op.stream).first->second == op.stream);
    REQUIRE(stream_id_of.try_emplace({op.device, op.stream}, op.stream_id).first->second ==
            op.stream_id);
    REQUIRE(op.group_id == (op.group.empty() ? -1 : s.FindGroup(op.group)));
    if (tensors_named && (op.kind == OpKind::kSend || op.kind == OpKind::kRecv)) {
      const int src = op.kind == OpKind::kSend ? op.device : op.peer;
      const int dst = op.kind == OpKind::kSend ? op.peer : op.device;
      REQUIRE(tensor_of.try_emplace({src, dst, op.tensor_id}, op.tensor).first->second ==
              op.tensor);
      REQUIRE(tensor_id_of.try_emplace({src, dst, op.tensor}, op.tensor_id).first->second ==
              op.tensor_id);
    }
  }
}

TEST_CASE("Every generator's after positions are the ops its after keys name") {
  for (const auto& [label, options] : Cases()) {
    INFO(label);
    const Schedule s = Generate(options);
    const std::map<std::string, int> index = KeyIndex(s);
    REQUIRE(index.size() == s.ops.size());  // keys are unique: each names one op
    const AfterOps& after = s.after_ops;
    REQUIRE(after.begin.size() == s.ops.size() + 1);
    size_t deps = 0;
    for (size_t i = 0; i < s.ops.size(); ++i) {
      const std::vector<std::string>& keys = s.ops[i].after;
      REQUIRE(after.begin[i + 1] - after.begin[i] == static_cast<int>(keys.size()));
      for (size_t k = 0; k < keys.size(); ++k) {
        REQUIRE(after.op[after.begin[i] + k] == index.at(keys[k]));
      }
      deps += keys.size();
    }
    REQUIRE(after.op.size() == deps);
    REQUIRE(AfterOpsMatch(s));
  }
}

TEST_CASE("A generated schedule read back from .pir builds the generated one's replay graph") {
  for (const auto& [label, options] : Cases()) {
    if (options.representatives_only) continue;  // not a whole iteration: no .pir text
    INFO(label);
    const Schedule generated = Generate(options);
    const Schedule read = ReadPir(WritePir(generated), "read.pir");
    REQUIRE(read.after_ops.Empty());  // resolved from the keys
    REQUIRE_FALSE(AfterOpsMatch(read));
    const ReplayGraph by_ids = BuildReplayGraph(generated, Placement(generated));
    const ReplayGraph by_names = BuildReplayGraph(read, Placement(read));
    RequireSameGraph(by_ids, by_names);
    // The stream numbers the names give stand for the generator's ids: on each device, equal
    // numbers exactly where the ids are equal (a one-to-one map per device).
    REQUIRE(by_ids.stream.empty());
    REQUIRE(by_names.stream.size() == generated.ops.size());
    std::map<std::pair<int, int>, int> number_of_id, id_of_number;
    for (size_t i = 0; i < generated.ops.size(); ++i) {
      const Op& op = generated.ops[i];
      REQUIRE(op.stream_id >= 0);
      const int number = by_names.stream[i];
      REQUIRE(number_of_id.try_emplace({op.device, op.stream_id}, number).first->second == number);
      REQUIRE(id_of_number.try_emplace({op.device, number}, op.stream_id).first->second ==
              op.stream_id);
    }
  }
}

TEST_CASE("Edited generated schedules fall back to their keys") {
  GenerateOptions o = Tiny(Strategy::kOneFOneB, 2, 2, 2, 2);
  o.dp_step = DpStep::kBucketed;
  const Schedule generated = Generate(o);
  // Two ops of one device swapped: the counts of their after lists may agree, the keys do not.
  Schedule swapped = generated;
  int a = -1, b = -1;
  for (int i = 0; i < static_cast<int>(swapped.ops.size()) && b < 0; ++i) {
    if (swapped.ops[i].after.size() != 1) continue;
    if (a < 0) {
      a = i;
    } else if (swapped.ops[i].device == swapped.ops[a].device &&
               swapped.ops[i].after != swapped.ops[a].after) {
      b = i;
    }
  }
  REQUIRE(b > a);
  std::swap(swapped.ops[a], swapped.ops[b]);
  REQUIRE(swapped.after_ops.Fits(swapped.ops));  // the shape still fits...
  REQUIRE_FALSE(AfterOpsMatch(swapped));         // ...the keys do not
  Schedule cleared = swapped;
  cleared.after_ops = {};
  RequireSameGraph(BuildReplayGraph(swapped, Placement(swapped)),
                   BuildReplayGraph(cleared, Placement(cleared)));
  // An op removed: the shape no longer fits.
  Schedule shorter = generated;
  shorter.ops.pop_back();
  REQUIRE_FALSE(shorter.after_ops.Fits(shorter.ops));
  REQUIRE_FALSE(AfterOpsMatch(shorter));
}

TEST_CASE("Every generator's op ids stand for the op's stream, group and tensor") {
  for (const auto& [label, options] : Cases()) {
    INFO(label);
    RequireIdsNameStrings(Generate(options));
    OpKeys keys;
    RequireIdsNameStrings(GenerateForReplay(options, &keys), /*tensors_named=*/false);
  }
}

TEST_CASE("A generated schedule's graph from its op ids is the one from its strings") {
  for (const auto& [label, options] : Cases()) {
    INFO(label);
    const Schedule generated = Generate(options);
    RequireSameGraph(BuildReplayGraph(generated, Placement(generated)),
                     BuildReplayGraph(WithoutIds(generated), Placement(generated)));
    // GenerateForReplay's ops, whose ids are the only names of their tensors, give Generate's
    // graph from the strings (the same ops at the same positions).
    OpKeys keys;
    const Schedule apart = GenerateForReplay(options, &keys);
    RequireSameGraph(BuildReplayGraph(apart, Placement(apart)),
                     BuildReplayGraph(WithoutIds(generated), Placement(generated)));
  }
}

TEST_CASE("The graph's closed-form watch is the one a pass over the ops gives") {
  // ReplayGraph::group_member, paired_sends and has_ops against the pass over every op that
  // Replay::FindExclusiveGroups makes where some device with ops does not run: per group the
  // first member seen, its ops on the group and whether all are on its first one's stream
  // (by name); the (device, peer) of the SENDs with a partner; the devices with ops.
  int collectives = 0;  // over every case
  for (const auto& [label, options] : Cases()) {
    INFO(label);
    const Schedule s = Generate(options);
    const ReplayGraph graph = BuildReplayGraph(s, Placement(s));
    std::vector<int> first(s.groups.size(), -1), count(s.groups.size(), 0);
    std::vector<std::string> stream(s.groups.size());
    std::vector<char> one_stream(s.groups.size(), 0);
    std::set<std::pair<int, int>> sends;
    std::vector<char> has_ops(s.devices, 0);
    for (size_t i = 0; i < s.ops.size(); ++i) {
      const Op& op = s.ops[i];
      has_ops[op.device] = 1;
      if (op.kind == OpKind::kSend && graph.partner[i] >= 0) sends.insert({op.device, op.peer});
      if (!IsCollective(op.kind)) continue;
      ++collectives;
      const int g = s.FindGroup(op.group);
      REQUIRE(graph.instance[i] >= 0);
      if (first[g] < 0) {
        first[g] = op.device;
        stream[g] = op.stream;
        one_stream[g] = 1;
      }
      if (first[g] != op.device) continue;
      ++count[g];
      if (op.stream != stream[g]) one_stream[g] = 0;
    }
    REQUIRE(graph.group_member.size() == s.groups.size());
    for (size_t g = 0; g < s.groups.size(); ++g) {
      INFO(s.groups[g].name);
      const ReplayGraph::Member& m = graph.group_member[g];
      REQUIRE(m.ops == count[g]);
      if (count[g] == 0) continue;
      REQUIRE(m.device == first[g]);
      REQUIRE(static_cast<bool>(m.one_stream) == static_cast<bool>(one_stream[g]));
    }
    REQUIRE(graph.paired_sends == std::vector<std::pair<int, int>>(sends.begin(), sends.end()));
    REQUIRE(graph.has_ops == has_ops);
  }
  REQUIRE(collectives > 0);
}

TEST_CASE("A GenerateForReplay schedule whose ids are cleared is refused, not paired by name") {
  // Its SENDs and RECVs name no tensor: by name every RECV of a pair would match its first SEND.
  GenerateOptions o = Tiny(Strategy::kOneFOneB, 1, 2, 1, 2);
  OpKeys keys;
  const Schedule apart = GenerateForReplay(o, &keys);
  REQUIRE_NOTHROW(BuildReplayGraph(apart, Placement(apart)));
  REQUIRE_THROWS_WITH(BuildReplayGraph(WithoutIds(apart), Placement(apart)),
                      Catch::Contains("SEND / RECV without a tensor name"));
}

TEST_CASE("The replay graph reads the op ids where every op has them, and the strings otherwise") {
  GenerateOptions o = Tiny(Strategy::kOneFOneB, 2, 2, 2, 2);
  const Schedule generated = Generate(o);
  const ReplayGraph original = BuildReplayGraph(generated, Placement(generated));
  // The last compute op of device 0 moved to a stream of its own by name only: with its id
  // kept the graph does not see it (the ids are the data)...
  int last = -1;
  for (int i = 0; i < static_cast<int>(generated.ops.size()); ++i) {
    if (generated.ops[i].device == 0 && generated.ops[i].stream == "compute") last = i;
  }
  REQUIRE(last > 0);
  Schedule renamed = generated;
  renamed.ops[last].stream = "elsewhere";
  RequireSameGraph(BuildReplayGraph(renamed, Placement(renamed)), original);
  // ...and with the id cleared, as the rule for code that edits an op has it, the strings
  // count: its stream predecessor is gone, one pending op less.
  renamed.ops[last].stream_id = -1;
  const ReplayGraph edited = BuildReplayGraph(renamed, Placement(renamed));
  RequireSameGraph(edited, BuildReplayGraph(WithoutIds(renamed), Placement(renamed)));
  REQUIRE(edited.pending[last] == original.pending[last] - 1);
}

TEST_CASE("Edited generated schedules do not use stale op ids") {
  GenerateOptions o = Tiny(Strategy::kOneFOneB, 2, 2, 2, 2);
  o.dp_step = DpStep::kBucketed;
  const Schedule generated = Generate(o);
  SECTION("ops reordered: the ids travel with their ops") {
    // A SEND and the compute op before it on one device swapped (after_ops cleared, as the rule
    // for reordering has it): different streams, so the swap changes the graph; the ids of
    // each op stay its own.
    Schedule swapped = generated;
    int send = -1;
    for (int i = 1; i < static_cast<int>(swapped.ops.size()) && send < 0; ++i) {
      if (swapped.ops[i].kind == OpKind::kSend && swapped.ops[i - 1].stream == "compute") send = i;
    }
    REQUIRE(send > 0);
    std::swap(swapped.ops[send - 1], swapped.ops[send]);
    swapped.after_ops = {};
    const ReplayGraph by_ids = BuildReplayGraph(swapped, Placement(swapped));
    RequireSameGraph(by_ids, BuildReplayGraph(WithoutIds(swapped), Placement(swapped)));
    const ReplayGraph original = BuildReplayGraph(generated, Placement(generated));
    REQUIRE(by_ids.partner[send - 1] == original.partner[send]);  // the SEND, now one earlier
  }
  SECTION("an op added by hand: no ids, the strings for every op") {
    Schedule added = generated;
    Op op = added.ops[0];
    op.key = "extra";
    op.stream = "extra";
    op.after.clear();
    op.stream_id = -1;  // built by hand: no ids
    added.ops.insert(added.ops.begin(), op);
    added.after_ops = {};
    RequireSameGraph(BuildReplayGraph(added, Placement(added)),
                     BuildReplayGraph(WithoutIds(added), Placement(added)));
  }
  SECTION("groups edited: a group id out of range falls back to the names") {
    Schedule fewer = generated;
    const int last_group = static_cast<int>(fewer.groups.size()) - 1;
    int collective = -1;
    for (int i = 0; i < static_cast<int>(fewer.ops.size()); ++i) {
      if (fewer.ops[i].group_id == last_group) collective = i;
    }
    REQUIRE(collective >= 0);
    // A stale id past the groups (the rule clears it; a consumer must not index with it).
    fewer.ops[collective].group_id = last_group + 1;
    RequireSameGraph(BuildReplayGraph(fewer, Placement(fewer)),
                     BuildReplayGraph(generated, Placement(generated)));
  }
}

}  // namespace
}  // namespace terasim

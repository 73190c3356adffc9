#include <catch2/catch.hpp>

#include "models/errors.h"
#include "sim/op_work.h"
#include "sim/replay_graph.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/schedule_builder.h"

namespace terasim {
namespace {

using Catch::Matchers::Contains;
using testing::Compute;
using testing::MakeOp;
using testing::P2p;

// The successors of op `i`, in CSR order.
std::vector<int> Successors(const ReplayGraph& g, int i) {
  return std::vector<int>(g.succ.begin() + g.succ_begin[i], g.succ.begin() + g.succ_begin[i + 1]);
}

TEST_CASE("The replay graph links streams, after deps, SEND/RECV partners and collectives") {
  Schedule s;
  s.devices = 2;
  s.groups.push_back(Group{"g", {0, 1}, 0});
  s.ops.push_back(Compute("F0", 0, "compute", 1, 4));           // 0
  s.ops.push_back(P2p("S0", OpKind::kSend, 0, 1, "act", 100));  // 1
  s.ops.push_back(Compute("F1", 1, "compute", 1, 4));           // 2
  s.ops.push_back(P2p("R1", OpKind::kRecv, 1, 0, "act", 100));  // 3
  s.ops[1].after = {"F0"};                                      // after F0 (op 0)
  s.ops.push_back(Compute("F0b", 0, "compute", 1, 4));          // 4: stream after 0
  for (int d : {0, 1}) {
    Op op = MakeOp("A" + std::to_string(d), OpKind::kAllReduce, d, "tp");  // 5, 6
    op.group = "g";
    op.bytes = 64;
    s.ops.push_back(op);
  }
  Op second = MakeOp("A0b", OpKind::kAllReduce, 0, "tp");  // 7: device 0's second on g
  second.group = "g";
  s.ops.push_back(second);
  const ReplayGraph g = BuildReplayGraph(s, {0, 1});
  // Op 0 precedes S0 (after) and F0b (stream "compute" of device 0), in edge order.
  REQUIRE(Successors(g, 0) == std::vector<int>{1, 4});
  REQUIRE(g.pending == std::vector<int>{0, 1, 0, 0, 1, 0, 0, 1});
  // SEND 1 (dev 0 -> 1, "act") and RECV 3 (dev 1 from 0, "act") are partners.
  REQUIRE(g.partner[1] == 3);
  REQUIRE(g.partner[3] == 1);
  REQUIRE(g.partner[0] == -1);
  // A0 and A1 are the first collective on g of each device: one instance; A0b the second.
  REQUIRE(g.instance[5] == 0);
  REQUIRE(g.instance[6] == 0);
  REQUIRE(g.instance[7] == 1);
  REQUIRE(g.instances.size() == 2);
  REQUIRE(g.instances[0].expected == 2);
  REQUIRE(g.instances[0].bytes == 64);
  REQUIRE(g.group_gpus == std::vector<std::vector<int>>{{0, 1}});
}

TEST_CASE("The replay graph keeps the first of duplicated keys and SENDs, as the string maps did") {
  Schedule s;
  s.devices = 2;
  s.ops.push_back(Compute("X", 0, "a", 1, 1));                      // 0
  s.ops.push_back(Compute("X", 0, "b", 1, 1));                      // 1: same key
  s.ops.push_back(P2p("S", OpKind::kSend, 0, 1, "t", 8, "p"));      // 2
  s.ops.push_back(P2p("S2", OpKind::kSend, 0, 1, "t", 8, "q"));     // 3: same identity
  s.ops.push_back(P2p("R", OpKind::kRecv, 1, 0, "t", 8));           // 4
  s.ops.push_back(P2p("Other", OpKind::kRecv, 1, 0, "u", 8, "r"));  // 5: no SEND of "u"
  s.ops.back().after = {"X"};
  const ReplayGraph g = BuildReplayGraph(s, {0, 1});
  REQUIRE(Successors(g, 0) == std::vector<int>{5});  // "X" is op 0
  REQUIRE(g.partner[4] == 2);                        // the first SEND of (0, 1, "t")
  REQUIRE(g.partner[2] == 4);
  REQUIRE(g.partner[3] == -1);
  REQUIRE(g.partner[5] == -1);
}

TEST_CASE("The replay graph tells apart names that differ only past their first 8 bytes") {
  Schedule s;
  s.devices = 2;
  // Streams of 10 bytes differing in the last: two streams, so neither op waits on the other.
  s.ops.push_back(Compute("F.a", 0, "compute.01", 1, 1));  // 0
  s.ops.push_back(Compute("F.b", 0, "compute.02", 1, 1));  // 1
  s.ops.push_back(Compute("F.c", 0, "compute.01", 1, 1));  // 2: after op 0 on its stream
  // Tensors of 9 and 17 bytes, alike but for one byte (the last; one in the middle).
  s.ops.push_back(P2p("S1", OpKind::kSend, 0, 1, "act.m1.t0", 8));          // 3
  s.ops.push_back(P2p("S2", OpKind::kSend, 0, 1, "act.m1.t1", 8));          // 4
  s.ops.push_back(P2p("S3", OpKind::kSend, 0, 1, "grad.mb01.slice07", 8));  // 5
  s.ops.push_back(P2p("R2", OpKind::kRecv, 1, 0, "act.m1.t1", 8));          // 6
  s.ops.push_back(P2p("R3", OpKind::kRecv, 1, 0, "grad.mb11.slice07", 8));  // 7: no SEND
  s.ops.push_back(P2p("R1", OpKind::kRecv, 1, 0, "act.m1.t0", 8));          // 8
  const ReplayGraph g = BuildReplayGraph(s, {1, 0});
  REQUIRE(g.pending[0] == 0);
  REQUIRE(g.pending[1] == 0);  // its own stream
  REQUIRE(g.pending[2] == 1);  // behind op 0
  REQUIRE(Successors(g, 0) == std::vector<int>{2});
  // Stream numbers per device from the names (no op has a stream_id), in the order of their
  // first ops: device 0 has "compute.01" = 0, "compute.02" = 1 and the SENDs' stream = 2;
  // device 1 has only the RECVs' stream = 0.
  REQUIRE(g.stream == std::vector<int>{0, 1, 0, 2, 2, 2, 0, 0, 0});
  REQUIRE(g.partner[6] == 4);
  REQUIRE(g.partner[8] == 3);
  REQUIRE(g.partner[7] == -1);
  REQUIRE(g.partner[5] == -1);
  // Devices and GPUs per op: device 0 on GPU 1, device 1 on GPU 0.
  REQUIRE(g.device[3] == 0);
  REQUIRE(g.gpu[3] == 1);
  REQUIRE(g.device[6] == 1);
  REQUIRE(g.gpu[6] == 0);
}

TEST_CASE("ClassOf agrees with IsCompute, IsPointToPoint and IsCollective for every kind") {
  for (int k = 0; k <= static_cast<int>(OpKind::kRecompute); ++k) {
    const auto kind = static_cast<OpKind>(k);
    INFO(OpKindName(kind));
    const OpClass expected = IsCompute(kind)        ? OpClass::kCompute
                             : IsPointToPoint(kind) ? OpClass::kPointToPoint
                             : IsCollective(kind)   ? OpClass::kCollective
                                                    : OpClass::kOther;
    REQUIRE(ClassOf(kind) == expected);
    REQUIRE(ClassifyKind(kind) == expected);
  }
  REQUIRE(ClassOf(OpKind::kSend) == OpClass::kPointToPoint);
  REQUIRE(ClassOf(OpKind::kBroadcast) == OpClass::kCollective);
  REQUIRE(ClassOf(OpKind::kBwdWeight) == OpClass::kCompute);
}

TEST_CASE("The replay graph names the op of an unknown after key or undeclared group") {
  Schedule s;
  s.devices = 1;
  s.source = "x.pir";
  s.ops.push_back(Compute("F", 0, "compute", 1, 1));
  s.ops[0].line = 7;
  s.ops[0].after = {"nope"};
  REQUIRE_THROWS_WITH(BuildReplayGraph(s, {0}), Contains("x.pir:7: F: after: unknown key nope"));
  s.ops[0].after.clear();
  Op ar = MakeOp("A", OpKind::kAllReduce, 0, "tp");
  ar.group = "missing";
  s.ops.push_back(ar);
  REQUIRE_THROWS_WITH(BuildReplayGraph(s, {0}), Contains("group missing is not declared"));
  s.ops.pop_back();
  s.groups.push_back(Group{"g", {0, 3}, 0});
  REQUIRE_THROWS_WITH(BuildReplayGraph(s, {0}), Contains("group g: rank 3 is not a device"));
}

// Counts its calls: each distinct work should cost one.
class CountingCost : public testing::FakeCost {
 public:
  CountingCost() : FakeCost(1, 2) {}
  TimeNs Time(const SliceWork& work) const override {
    ++calls;
    return FakeCost::Time(work);
  }
  mutable int calls = 0;
};

TEST_CASE("WorkTimeCache calls the cost model once per distinct work") {
  const CountingCost cost;
  WorkTimeCache cache(cost);
  SliceWork a;
  a.layers = 2;
  a.tokens = 16;
  SliceWork b = a;
  b.context = 16;  // differs only in context: another work
  // FakeCost: 1 ns per layer and token forward: 2 x 16 = 32 ns for both.
  REQUIRE(cache.Time(a) == 32);
  REQUIRE(cache.Time(a) == 32);
  REQUIRE(cache.Time(b) == 32);
  REQUIRE(cost.calls == 2);
  REQUIRE(cache.Size() == 2);
  b.pass = Pass::kBackward;  // 2 ns per layer and token: 64 ns
  REQUIRE(cache.Time(b) == 64);
  REQUIRE(cost.calls == 3);
}

}  // namespace
}  // namespace terasim

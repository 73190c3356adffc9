// Tests of the PyTorch pipelining action-table import (schedule/torch_csv.h).
#include <catch2/catch.hpp>

#include <string>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/pipeline_order.h"
#include "schedule/torch_csv.h"

using namespace terasim;

namespace {

GenerateOptions TinyBase() {
  GenerateOptions o;
  o.model = LoadModelCard("tiny");
  return o;
}

std::string ErrorOf(const std::string& csv) {
  try {
    ImportedOptions(ParseTorchCsv(csv, "t.csv"), TinyBase(), "t.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string Golden(const std::string& name) {
  return ReadTextFile(std::string(TERASIM_TEST_DATA) + "/../golden/torch_csv/" + name);
}

}  // namespace

TEST_CASE("torch-csv reads compute actions, skips communication and idle cells", "[torch_csv]") {
  const TorchActionTable t =
      ParseTorchCsv("0F0,,0SEND_F0,\"(0F1;1B0)OVERLAP_F_B\",0UNSHARD\n1RECV_F0,1I0,1W0\n", "t.csv");
  REQUIRE(t.ranks.size() == 2);
  // Rank 0: 0F0, then the overlapped pair in order: 0F1, 1B0.
  REQUIRE(t.ranks[0].size() == 3);
  CHECK(t.ranks[0][1].stage == 0);
  CHECK(t.ranks[0][1].microbatch == 1);
  CHECK(t.ranks[0][2].kind == TorchActionKind::kBackward);
  CHECK(t.ranks[0][2].column == 4);
  REQUIRE(t.ranks[1].size() == 2);
  CHECK(t.ranks[1][0].kind == TorchActionKind::kBackwardInput);
  CHECK(t.ranks[1][1].kind == TorchActionKind::kBackwardWeight);
  CHECK(t.stages == 2);
  CHECK(t.microbatches == 2);
  CHECK(FormatTorchCsv(t) == "0F0,0F1,1B0\n1I0,1W0\n");
  CHECK_THROWS_WITH(ParseTorchCsv("0F0,0X1\n", "t.csv"), "t.csv:1:2: '0X1': unknown action type");
  CHECK_THROWS_WITH(ParseTorchCsv("F0\n", "t.csv"),
                    "t.csv:1:1: 'F0' is not an action (expected e.g. 0F0, 1B0, 0I0, 0W0)");
}

TEST_CASE("torch-csv import keeps PyTorch's order and checks", "[torch_csv]") {
  // Looped BFS as PyTorch writes it for P = 2, V = 2, M = 2: terasim's own looped-bfs order.
  const TorchActionTable bfs = ParseTorchCsv(Golden("looped_bfs_p2_v2_m2.csv"), "bfs.csv");
  const GenerateOptions o = ImportedOptions(bfs, TinyBase(), "bfs.csv");
  CHECK(o.pp == 2);
  CHECK(o.virtual_stages == 2);
  CHECK(o.microbatches == 2);
  for (int r = 0; r < 2; ++r) CHECK(o.imported_steps[r] == LoopedBfsOrder(2, 2));
  Schedule s = Generate(o);
  CHECK(CheckSchedule(s).empty());
  // The same schedule as the generator's looped-bfs, op for op but the strategy name.
  GenerateOptions own = TinyBase();
  own.strategy = Strategy::kLoopedBfs;
  own.pp = 2;
  own.virtual_stages = 2;
  own.microbatches = 2;
  Schedule mine = Generate(own);
  REQUIRE(mine.ops.size() == s.ops.size());
  for (size_t i = 0; i < s.ops.size(); ++i) CHECK(s.ops[i].key == mine.ops[i].key);

  // A V placement with split backward and PyTorch's communication actions (dropped): stages
  // 0 and 3 on rank 0, 1 and 2 on rank 1; 1 -> 2 is handed over in memory.
  const TorchActionTable zbv = ParseTorchCsv(Golden("zbv_p2_m2_comms.csv"), "zbv.csv");
  const GenerateOptions v = ImportedOptions(zbv, TinyBase(), "zbv.csv");
  CHECK(v.stage_ranks == std::vector<int>{0, 1, 1, 0});
  Schedule vs = Generate(v);
  CHECK(CheckSchedule(vs).empty());
  int sends = 0;
  for (const Op& op : vs.ops) sends += op.kind == OpKind::kSend ? 1 : 0;
  // Boundaries 0->1 and 2->3 cross ranks (1->2 does not): 2 boundaries x 2 micro-batches x
  // (activation + gradient).
  CHECK(sends == 8);
}

TEST_CASE("torch-csv import names the cell that breaks the rules", "[torch_csv]") {
  CHECK(ErrorOf("0F0,0B0\n0F1,0B1\n") ==
        "t.csv:2:1: stage 0 runs on rank 0 and on rank 1; each stage has one rank");
  CHECK(ErrorOf("0B0\n") == "t.csv:1:1: 0B0: a backward before its forward");
  CHECK(ErrorOf("0F0,0W0\n") ==
        "t.csv:1:2: 0W0: a weight gradient without its input gradient first");
  CHECK(ErrorOf("0F0,0I0\n") ==
        "t.csv: stage 0 micro-batch 0 has no weight gradient (W) after its input gradient (I)");
  CHECK(ErrorOf("0F0,0B0,0F0\n") ==
        "t.csv:1:3: 0F0: a second forward of this stage and micro-batch");
}

TEST_CASE("interleaved 1F1B runs PyTorch's per-rank order for M >= P", "[torch_csv]") {
  // Tables computed by torch's ScheduleInterleaved1F1B (tests/golden/torch_csv/README.md):
  // M = P (PyTorch's warm-up, where Megatron-LM would run every forward first), M a multiple
  // of P, M = 6 with P = 4 (one round of 6) and M = 10 (two rounds of 5).
  struct Case {
    int p, v, m;
  };
  for (const Case& c : {Case{2, 2, 2}, Case{2, 2, 4}, Case{4, 2, 6}, Case{4, 2, 10}}) {
    const std::string name = "interleaved_p" + std::to_string(c.p) + "_v" + std::to_string(c.v) +
                             "_m" + std::to_string(c.m) + ".csv";
    INFO(name);
    const GenerateOptions o = ImportedOptions(ParseTorchCsv(Golden(name), name), TinyBase(), name);
    REQUIRE(o.pp == c.p);
    REQUIRE(o.virtual_stages == c.v);
    REQUIRE(o.microbatches == c.m);
    for (int r = 0; r < c.p; ++r) {
      INFO("rank " << r);
      CHECK(InterleavedOrder(c.p, c.v, r, c.m) == o.imported_steps[r]);
    }
  }
}

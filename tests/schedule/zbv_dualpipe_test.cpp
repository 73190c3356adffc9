// The zero-bubble schedules with several chunks per rank (schedule/pipeline_order.h):
// interleaved zero bubble, ZB-V and DualPipeV. Their per-rank orders against the tables
// PyTorch's own schedule classes compute (tests/golden/torch_csv/README.md), the V placement,
// the checker, the in-flight activations and the refusals.
#include <catch2/catch.hpp>

#include <string>

#include "models/json_reader.h"
#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/pipeline_order.h"
#include "schedule/pir_format.h"
#include "schedule/torch_csv.h"

using namespace terasim;

namespace {

// The tiny model with 16 layers: up to 16 stages.
ModelCard Model() {
  ModelCard model = LoadModelCard("tiny");
  model.layers = 16;
  return model;
}

GenerateOptions Options(Strategy strategy, int pp, int v, int m) {
  GenerateOptions o;
  o.model = Model();
  o.strategy = strategy;
  o.pp = pp;
  o.virtual_stages = v;
  o.microbatches = m;
  return o;
}

std::string Golden(const std::string& name) {
  return ReadTextFile(std::string(TERASIM_TEST_DATA) + "/../golden/torch_csv/" + name);
}

GenerateOptions Imported(const std::string& name) {
  GenerateOptions base;
  base.model = Model();
  return ImportedOptions(ParseTorchCsv(Golden(name), name), base, name);
}

// The .pir of `s` without its first lines up to the ops (the strategy name differs between a
// generated and an imported schedule).
std::string OpsText(const Schedule& s) {
  const std::string text = WritePir(s);
  return text.substr(text.find("\nop "));
}

struct Case {
  Strategy strategy;
  int p, v, m;
  std::string golden;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {Strategy::kZbV, 2, 2, 2, "zbv_p2_m2.csv"},
      {Strategy::kZbV, 2, 2, 4, "zbv_p2_m4.csv"},
      {Strategy::kZbV, 4, 2, 3, "zbv_p4_m3.csv"},
      {Strategy::kZbV, 4, 2, 8, "zbv_p4_m8.csv"},
      {Strategy::kDualPipeV, 2, 2, 4, "dualpipev_p2_m4.csv"},
      {Strategy::kDualPipeV, 2, 2, 5, "dualpipev_p2_m5.csv"},
      {Strategy::kDualPipeV, 4, 2, 8, "dualpipev_p4_m8.csv"},
      {Strategy::kDualPipeV, 4, 2, 11, "dualpipev_p4_m11.csv"},
      {Strategy::kInterleavedZb, 2, 2, 4, "interleaved_zb_p2_v2_m4.csv"},
      {Strategy::kInterleavedZb, 2, 3, 4, "interleaved_zb_p2_v3_m4.csv"},
      {Strategy::kInterleavedZb, 4, 2, 2, "interleaved_zb_p4_v2_m2.csv"},
      {Strategy::kInterleavedZb, 4, 2, 8, "interleaved_zb_p4_v2_m8.csv"},
      {Strategy::kInterleavedZb, 4, 2, 10, "interleaved_zb_p4_v2_m10.csv"},
  };
  return cases;
}

std::vector<PipelineStep> Order(Strategy strategy, int p, int v, int r, int m) {
  switch (strategy) {
    case Strategy::kZbV:
      return ZbvOrder(p, r, m);
    case Strategy::kDualPipeV:
      return DualPipeVOrder(p, r, m);
    default:
      return InterleavedZeroBubbleOrder(p, v, r, m);
  }
}

}  // namespace

TEST_CASE("zb-v, dualpipe-v and interleaved-zb run PyTorch's per-rank order", "[zbv][dualpipe]") {
  for (const Case& c : Cases()) {
    INFO(c.golden);
    const GenerateOptions o = Imported(c.golden);
    REQUIRE(o.pp == c.p);
    REQUIRE(o.virtual_stages == c.v);
    REQUIRE(o.microbatches == c.m);
    for (int r = 0; r < c.p; ++r) {
      INFO("rank " << r);
      CHECK(Order(c.strategy, c.p, c.v, r, c.m) == o.imported_steps[r]);
    }
    // The stages of each rank: the V (r and 2P - 1 - r) or interleaved (chunk * P + r).
    for (int s = 0; s < c.p * c.v; ++s) {
      const bool v_shape = c.strategy != Strategy::kInterleavedZb;
      CHECK(o.stage_ranks[s] == (v_shape ? VShapeRank(c.p, s) : s % c.p));
    }
    // The generated schedule is the imported one, op for op, and checks.
    const Schedule generated = Generate(Options(c.strategy, c.p, c.v, c.m));
    RequireValidSchedule(generated);
    CHECK(OpsText(generated) == OpsText(Generate(o)));
  }
}

TEST_CASE("The V placement: rank r holds stages r and 2P - 1 - r", "[zbv][dualpipe]") {
  // P = 4: stages 0..7 on ranks 0 1 2 3 3 2 1 0.
  const std::vector<int> want = {0, 1, 2, 3, 3, 2, 1, 0};
  for (int s = 0; s < 8; ++s) CHECK(VShapeRank(4, s) == want[s]);
  // The last rank's two stages (3 and 4) hand over in memory: P = 4 ranks, 2P - 1 = 7
  // boundaries, of which 6 cross ranks; each of the M = 8 micro-batches sends one activation
  // forward and one gradient back over each: 2 x 6 x 8 = 96 SENDs.
  const Schedule s = Generate(Options(Strategy::kZbV, 4, 2, 8));
  int sends = 0;
  for (const Op& op : s.ops) sends += op.kind == OpKind::kSend ? 1 : 0;
  CHECK(sends == 96);
}

TEST_CASE("The new schedules check over a range of P, M and V, with tp and dp", "[zbv][dualpipe]") {
  for (int p : {1, 2, 3, 4}) {
    for (int m = 1; m <= 9; ++m) {
      INFO("p " << p << " m " << m);
      Schedule zbv = Generate(Options(Strategy::kZbV, p, 2, m));
      RequireValidSchedule(zbv);
      if (m >= 2 * p) RequireValidSchedule(Generate(Options(Strategy::kDualPipeV, p, 2, m)));
      for (int v : {1, 2, 3}) {
        if (p * v > 8 || (p >= 2 && !InterleavedSupports(p, m)) || (v > 1 && p < 2)) continue;
        INFO("v " << v);
        RequireValidSchedule(Generate(Options(Strategy::kInterleavedZb, p, v, m)));
      }
    }
  }
  GenerateOptions o = Options(Strategy::kDualPipeV, 2, 2, 4);
  o.tp = 2;
  o.dp = 2;
  RequireValidSchedule(Generate(o));
  o.strategy = Strategy::kZbV;
  o.zero = 3;
  RequireValidSchedule(Generate(o));
}

TEST_CASE("Interleaved zero bubble with one chunk is ZB-H1", "[zbv][dualpipe]") {
  // Warm-up (V - 1) G + P - r - 1 = P - r - 1 and the W lag r: ZB-H1's.
  for (int p : {2, 4}) {
    for (int m : {2, 4, 8}) {
      for (int r = 0; r < p; ++r) {
        CHECK(InterleavedZeroBubbleOrder(p, 1, r, m) == ZeroBubbleOrder(ZeroBubble::kH1, p, r, m));
      }
    }
  }
}

TEST_CASE("Activations in flight on rank 0: ZB-V as 1F1B, DualPipeV one chunk more",
          "[zbv][dualpipe]") {
  for (int p : {2, 4, 8}) {
    const int m = 4 * p;
    INFO("p " << p);
    // 1F1B holds P micro-batches of its whole stage; ZB-V 2 P chunks of half of it (2 P - 1
    // chunk-0 forwards of its warm-up, then a chunk-1 forward before any W).
    CHECK(PeakChunksInFlight(OneFOneBOrder(p, 0, std::vector<int>(m, 1))) == p);
    CHECK(PeakChunksInFlight(ZbvOrder(p, 0, m)) == 2 * p);
    // DualPipeV: 2 P chunks after its warm-up, then each pair's forward before its backward:
    // 2 P + 1 (the DeepSeek-V3 report's P + 1 per device, in chunks of a V of 2 P stages).
    CHECK(PeakChunksInFlight(DualPipeVOrder(p, 0, m)) == 2 * p + 1);
  }
}

TEST_CASE("The new schedules refuse what they cannot run", "[zbv][dualpipe]") {
  CHECK_THROWS_WITH(Generate(Options(Strategy::kDualPipeV, 4, 2, 7)),
                    "--microbatches 7 with --pp 4: dualpipe-v needs M >= 2 P = 8 (PyTorch's rule)");
  CHECK_THROWS_WITH(Generate(Options(Strategy::kZbV, 2, 1, 4)),
                    "--virtual-stages 1: --strategy zb-v places exactly 2 stages per device (a V)");
  CHECK_THROWS_WITH(Generate(Options(Strategy::kInterleavedZb, 4, 2, 9)),
                    "--microbatches 9 with --pp 4: interleaved zero bubble runs floor(M / P) = 2 "
                    "rounds of equal size (PyTorch's rule), which must divide M");
  CHECK(ParseStrategy("dualpipe-v") == Strategy::kDualPipeV);
  CHECK(ParseStrategy("zb-v") == Strategy::kZbV);
  CHECK(ParseStrategy("interleaved-zb") == Strategy::kInterleavedZb);
}

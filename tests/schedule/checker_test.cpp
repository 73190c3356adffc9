// CheckSchedule, the schedule grid and `terasim check` / `terasim show`. The broken schedules
// live in tests/golden/bad/ (one per class of error, each listed with its expected first
// message in tests/golden/bad/README.md); the valid ones are tests/golden/bad/ok_*.pir.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <catch2/catch.hpp>

#include "models/errors.h"
#include "schedule/checker.h"
#include "schedule/pir_format.h"
#include "schedule/schedule_grid.h"

using namespace terasim;

namespace {

const std::string kBadDir = std::string(TERASIM_TEST_DATA) + "/../golden/bad";

// Reads tests/golden/bad/NAME with Schedule::source set to NAME, so messages read "NAME:LINE".
Schedule Load(const std::string& name) {
  Schedule s = ReadPirFile(kBadDir + "/" + name);
  s.source = name;
  return s;
}

std::vector<std::string> Messages(const Schedule& s) {
  std::vector<std::string> out;
  for (const Diagnostic& d : CheckSchedule(s)) out.push_back(FormatDiagnostic(s, d));
  return out;
}

// The one message that contains `needle`, or "" (with every message printed on failure).
std::string Find(const std::vector<std::string>& messages, const std::string& needle) {
  for (const std::string& m : messages) {
    if (m.find(needle) != std::string::npos) return m;
  }
  return "";
}

Op& OpWithKey(Schedule& s, const std::string& key) {
  for (Op& op : s.ops) {
    if (op.key == key) return op;
  }
  FAIL("no op " << key);
  throw std::logic_error("unreachable");
}

// The rows "| `FILE` | `MESSAGE` |" of tests/golden/bad/README.md.
std::map<std::string, std::string> ExpectedMessages() {
  std::ifstream in(kBadDir + "/README.md");
  REQUIRE(in);
  std::map<std::string, std::string> expected;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    const size_t file_end = line.find("` | `");
    const size_t message_end = line.rfind("` |");
    REQUIRE(file_end != std::string::npos);
    REQUIRE(message_end > file_end);
    expected[line.substr(3, file_end - 3)] =
        line.substr(file_end + 5, message_end - (file_end + 5));
  }
  return expected;
}

struct Run {
  int exit_code;
  std::string out;  // stdout and stderr together
};

Run RunTerasim(const std::string& args) {
  const std::string command = std::string(TERASIM_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, got);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

TEST_CASE("every broken schedule fails the checker with the first message its README lists",
          "[schedule][checker]") {
  const std::map<std::string, std::string> expected = ExpectedMessages();
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kBadDir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".pir" || name.rfind("ok_", 0) == 0) continue;
    ++files;
    INFO(name);
    REQUIRE(expected.count(name) == 1);
    const std::vector<std::string> messages = Messages(Load(name));
    REQUIRE_FALSE(messages.empty());
    // The README's message, word for word, comes first.
    CHECK(messages.front() == expected.at(name));
  }
  // One README row per broken file, no stale rows.
  CHECK(files == static_cast<int>(expected.size()));
}

TEST_CASE("the hand-written valid schedules pass the checker", "[schedule][checker]") {
  for (const char* name :
       {"ok_terapipe_2x1.pir", "ok_gpipe_2x2.pir", "ok_1f1b_4x8.pir", "ok_tp2.pir", "ok_dp2.pir"}) {
    INFO(name);
    // A valid schedule yields no diagnostic and RequireValidSchedule does not throw.
    CHECK(Messages(Load(name)).empty());
    CHECK_NOTHROW(RequireValidSchedule(Load(name)));
  }
}

TEST_CASE("two devices that each RECV before they SEND on one stream deadlock, both named",
          "[schedule][checker]") {
  const std::vector<std::string> messages = Messages(Load("deadlock_recv_first.pir"));
  const std::string deadlock = Find(messages, "deadlock:");
  // Each device heads its stream with a RECV whose SEND sits behind the other device's RECV.
  CHECK(deadlock.find("dev 0 waits at R.0 (peer 1 has not reached S.1)") != std::string::npos);
  CHECK(deadlock.find("dev 1 waits at R.1 (peer 0 has not reached S.0)") != std::string::npos);
  // Only dev 0's compute stream (F, B) ran: 2 of the 6 ops.
  CHECK(deadlock.find("[2 of 6 ops ran]") != std::string::npos);
  // The same wait is a cycle of the order graph: R.0 -> S.0 -> R.1 -> S.1 -> R.0.
  CHECK(Find(messages, "dependency cycle") ==
        "deadlock_recv_first.pir:10: R.0: dependency cycle: R.0 -> S.0 -> R.1 -> S.1 -> R.0");
}

TEST_CASE("two devices that each SEND before they RECV on one stream deadlock in the dry run",
          "[schedule][checker]") {
  const std::vector<std::string> messages = Messages(Load("deadlock_send_first.pir"));
  // A SEND completes only with its RECV, so both SENDs wait; no order edge forms a cycle.
  CHECK(Find(messages, "dependency cycle").empty());
  CHECK(Find(messages,
             "deadlock: dev 0 waits at S.0 (peer 1 has not reached R.1); dev 1 waits "
             "at S.1 (peer 0 has not reached R.0)") != "");
}

TEST_CASE("a device whose compute waits for a blocked RECV is reported at the RECV",
          "[schedule][checker]") {
  Schedule s = Load("ok_terapipe_2x1.pir");
  // Stage 1 sends its first gradient only after its last one: its send stream now waits for
  // B.s1 t0-16, which follows B.s1 t16-32, whose gradient stage 0 must receive first.
  Op& send = OpWithKey(s, "SB.s1.m0.t16-32");
  send.after = {"B.s1.m0.t0-16"};
  std::swap(s.ops[s.FindOp("SB.s1.m0.t16-32")], s.ops[s.FindOp("SB.s1.m0.t0-16")]);
  const std::string deadlock = Find(Messages(s), "deadlock:");
  // dev 0's recv stream waits for the t16-32 gradient, dev 1's send stream offers t0-16 first.
  CHECK(deadlock.find("dev 0 waits at RB.s0.m0.t16-32 (peer 1 has not reached SB.s1.m0.t16-32)") !=
        std::string::npos);
  CHECK(deadlock.find("dev 1 waits at SB.s1.m0.t0-16 (peer 0 has not reached RB.s0.m0.t0-16)") !=
        std::string::npos);
}

TEST_CASE("an after-dep on a later op of the same stream is a cycle listing its keys",
          "[schedule][checker]") {
  const std::vector<std::string> messages = Messages(Load("after_cycle.pir"));
  // F t0-16 waits for B t0-16, which the compute stream runs after F t0-16.
  CHECK(messages.front() ==
        "after_cycle.pir:11: F.s0.m0.t0-16: dependency cycle: F.s0.m0.t0-16 -> F.s0.m0.t16-32 "
        "-> B.s0.m0.t16-32 -> B.s0.m0.t0-16 -> F.s0.m0.t0-16");
}

TEST_CASE("collectives of three pairwise groups in rotated order form a cycle and deadlock",
          "[schedule][checker]") {
  const Schedule s = ReadPir(
      "terasim-pir 1\nmodel tiny\nlayers 1\nsequence 8\ndevices 3\nbatch 0\n"
      "shape strategy=- dp=1 pp=1 tp=1 v=1\n"
      "group g01 0,1\ngroup g12 1,2\ngroup g02 0,2\n"
      "op A01.0 ALLREDUCE dev=0 stream=c group=g01 tensor=a bytes=8\n"
      "op A02.0 ALLREDUCE dev=0 stream=c group=g02 tensor=b bytes=8\n"
      "op A12.1 ALLREDUCE dev=1 stream=c group=g12 tensor=c bytes=8\n"
      "op A01.1 ALLREDUCE dev=1 stream=c group=g01 tensor=a bytes=8\n"
      "op A02.2 ALLREDUCE dev=2 stream=c group=g02 tensor=b bytes=8\n"
      "op A12.2 ALLREDUCE dev=2 stream=c group=g12 tensor=c bytes=8\n",
      "ring.pir");
  const std::vector<std::string> messages = Messages(s);
  REQUIRE(messages.size() == 2);
  // Each group agrees on its one collective, but dev 0 runs g01 before g02, dev 2 g02 before
  // g12 and dev 1 g12 before g01: a cycle through the three collectives ("==" joins members).
  CHECK(messages[0] ==
        "ring.pir:11: A01.0: dependency cycle: A01.1 == A01.0 -> A02.0 == A02.2 -> A12.2 == "
        "A12.1 -> A01.1");
  // Every device heads its stream with a collective that another member has not reached.
  CHECK(messages[1] ==
        "ring.pir:11: A01.0: deadlock: dev 0 waits at A01.0 (group g01: dev 1 has not reached "
        "A01.1); dev 1 waits at A12.1 (group g12: dev 2 has not reached A12.2); dev 2 waits at "
        "A02.2 (group g02: dev 0 has not reached A02.0) [0 of 6 ops ran]");
}

TEST_CASE("collectives issued in another order name both devices", "[schedule][checker]") {
  const std::vector<std::string> messages = Messages(Load("collective_order.pir"));
  // Rank 1 runs the MLP block first, so its first all-reduce is the MLP's.
  REQUIRE(messages.size() == 1);
  CHECK(messages[0].find("group tp.d0.s0: collective #1 differs: dev 1 issues ALLREDUCE of "
                         "tpf.l0.mlp.m0.t0-16 (2048 bytes), dev 0 issues ALLREDUCE of "
                         "tpf.l0.attn.m0.t0-16 (2048 bytes)") != std::string::npos);
}

TEST_CASE("coverage reports the first gap and the first overlap of a micro-batch",
          "[schedule][checker]") {
  // Stage 1's second slice starts at token 20: tokens 16-20 of layers 2-4 never run forward.
  CHECK(Find(Messages(Load("coverage_gap.pir")), "forward") ==
        "coverage_gap.pir:21: F.s1.m0.t0-16: micro-batch 0: layers 2-4 tokens 16-20 forward "
        "not covered");
  // Stage 0's backward of slice 0 reaches token 20: tokens 16-20 run backward twice, found at
  // the slice that starts inside the other.
  CHECK(Find(Messages(Load("coverage_overlap.pir")), "backward") ==
        "coverage_overlap.pir:13: B.s0.m0.t16-32: micro-batch 0: layers 0-2 tokens 16-20 "
        "backward covered twice (B.s0.m0.t0-16, B.s0.m0.t16-32)");
}

TEST_CASE("coverage counts a tensor-parallel layer once both of its parts ran",
          "[schedule][checker]") {
  Schedule s = Load("ok_tp2.pir");
  // Rank 1's forward MLP block now claims the attention block: attention twice, MLP never.
  OpWithKey(s, "F.s0.m0.t0-16.l0.mlp.r1").part = LayerPart::kAttention;
  const std::vector<std::string> messages = Messages(s);
  CHECK(Find(messages, "forward") ==
        "ok_tp2.pir:22: F.s0.m0.t0-16.l0.mlp.r1: micro-batch 0 (tp rank 1): layer 0 attn tokens "
        "0-16 forward covered twice (F.s0.m0.t0-16.l0.attn.r1, F.s0.m0.t0-16.l0.mlp.r1)");
  // Rank 0 is untouched.
  CHECK(Find(messages, "tp rank 0").empty());
}

TEST_CASE("a split backward needs weight gradients covered exactly once", "[schedule][checker]") {
  Schedule s = Load("ok_terapipe_2x1.pir");
  // Stage 0 computes input gradients only (BWD_INPUT) and weight gradients for slice 1 alone.
  OpWithKey(s, "B.s0.m0.t16-32").kind = OpKind::kBwdInput;
  OpWithKey(s, "B.s0.m0.t0-16").kind = OpKind::kBwdInput;
  Op weight = OpWithKey(s, "B.s0.m0.t16-32");
  weight.key = "W.s0.m0.t16-32";
  weight.kind = OpKind::kBwdWeight;
  weight.after.clear();
  s.ops.insert(s.ops.begin() + s.FindOp("OPT.s0.d0"), weight);
  const std::vector<std::string> messages = Messages(s);
  REQUIRE(messages.size() == 1);
  // Weight gradients of layers 0-2 for tokens 0-16 are never computed (the W op kept the
  // line of the op it was copied from).
  CHECK(messages[0] ==
        "ok_terapipe_2x1.pir:13: W.s0.m0.t16-32: micro-batch 0: layers 0-2 tokens 0-16 "
        "weight-gradient not covered");
}

TEST_CASE("forward slices must ascend and backward slices descend on a stage",
          "[schedule][checker]") {
  CHECK(Find(Messages(Load("slice_order.pir")), "slice") ==
        "slice_order.pir:12: F.s0.m0.t0-16: micro-batch 0: forward slice 0-16 issued after slice "
        "16-32 (F.s0.m0.t16-32) on dev 0 stage 0; forward slices must run in ascending token "
        "order");
  Schedule s = Load("ok_terapipe_2x1.pir");
  std::swap(s.ops[s.FindOp("B.s1.m0.t16-32")], s.ops[s.FindOp("B.s1.m0.t0-16")]);
  // Backward of slice 0 first: slice 1's backward then comes after it.
  CHECK(Find(Messages(s), "backward slice 16-32 issued after slice 0-16") != "");
}

TEST_CASE("later checks wait for the structural ones", "[schedule][checker]") {
  // An unknown dep would also break the dry run; only the dep is reported.
  const std::vector<std::string> messages = Messages(Load("after_unknown.pir"));
  REQUIRE(messages.size() == 1);
  CHECK(messages[0] ==
        "after_unknown.pir:21: F.s1.m0.t0-16: after: no op has key 'RF.s1.m0.t0-61'");
}

TEST_CASE("FormatDiagnostic leaves out the parts it does not know", "[schedule][checker]") {
  Schedule s;
  // Generated schedule: no file, no line.
  CHECK(FormatDiagnostic(s, {0, "F.x", "bad"}) == "F.x: bad");
  CHECK(FormatDiagnostic(s, {0, "", "bad"}) == "bad");
  s.source = "a.pir";
  CHECK(FormatDiagnostic(s, {7, "F.x", "bad"}) == "a.pir:7: F.x: bad");
  CHECK(FormatDiagnostic(s, {0, "", "bad"}) == "a.pir: bad");
}

TEST_CASE("a header without devices stops the checker at the header", "[schedule][checker]") {
  Schedule s = Load("ok_dp2.pir");
  s.devices = 0;
  // Nothing else can be judged without devices.
  CHECK(Messages(s) == std::vector<std::string>{"ok_dp2.pir: devices must be >= 1 (found 0)"});
}

TEST_CASE("RequireValidSchedule throws every diagnostic, one per line", "[schedule][checker]") {
  Schedule s = Load("ok_terapipe_2x1.pir");
  OpWithKey(s, "F.s0.m0.t0-16").tokens = {0, 40};
  OpWithKey(s, "F.s1.m0.t0-16").stage = -1;
  try {
    RequireValidSchedule(s);
    FAIL("no exception");
  } catch (const InputError& e) {
    // Two problems, in file order.
    CHECK(std::string(e.what()) ==
          "ok_terapipe_2x1.pir:11: F.s0.m0.t0-16: tokens 0-40 are outside the sequence 0-32\n"
          "ok_terapipe_2x1.pir:21: F.s1.m0.t0-16: FWD needs stage");
  }
}

// The field rules of an op depend on its kind and which fields it has (its shape); the checker
// remembers shapes that passed, never ones that failed: every op of a failing shape is
// reported, and an op of a passing shape after them still passes.
TEST_CASE("every op of a shape missing a field is reported, not only the first",
          "[schedule][checker]") {
  Schedule s = Load("ok_terapipe_2x1.pir");
  OpWithKey(s, "F.s0.m0.t0-16").stage = -1;
  OpWithKey(s, "F.s1.m0.t0-16").stage = -1;  // the same shape as the op above
  CHECK(Messages(s) ==
        std::vector<std::string>{"ok_terapipe_2x1.pir:11: F.s0.m0.t0-16: FWD needs stage",
                                 "ok_terapipe_2x1.pir:21: F.s1.m0.t0-16: FWD needs stage"});
}

TEST_CASE("the grid of a 4-stage 8-micro-batch 1F1B shows warm-up, steady state and cool-down",
          "[schedule][grid]") {
  const std::string grid = RenderScheduleGrid(Load("ok_1f1b_4x8.pir"), GridOptions{});
  std::istringstream lines(grid);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line) && !line.empty();) rows.push_back(line);
  REQUIRE(rows.size() == 4);
  // One step per compute op. Stage s starts s steps late and runs P - s - 1 = 3 - s warm-up
  // forwards before its first 1F1B forward. The last stage runs B0 at step 3 + 1 = 4 and the
  // gradient walks back one stage per step, so dev 0 idles steps 4-6 (P - 1 = 3 steps) and runs
  // B0 at step 7; then it alternates B / F, and in the cool-down waits one step per backward.
  CHECK(rows[0] == "dev 0 | F0 F1 F2 F3 .  .  .  B0 F4 B1 F5 B2 F6 B3 F7 B4 .  B5 .  B6 .  B7 O");
  CHECK(rows[3] == "dev 3 | .  .  .  F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 O");
  CHECK(grid.find("F3 forward of micro-batch 3; B backward; O optimizer; . idle") !=
        std::string::npos);
}

TEST_CASE("the grid wraps at the width and marks sends and receives with --comm",
          "[schedule][grid]") {
  GridOptions options;
  options.width_chars = 40;
  options.show_comm = true;
  const std::string grid = RenderScheduleGrid(Load("ok_terapipe_2x1.pir"), options);
  std::istringstream lines(grid);
  for (std::string line; std::getline(lines, line);) {
    // Rows wrap before 40 characters (the legend excepted).
    if (line.rfind("dev", 0) == 0) CHECK(line.size() <= 40);
  }
  // Stage 0 sends slice 0 while it runs slice 1 (">1"), stage 1 receives it ("<0").
  CHECK(grid.find("dev 0 | F0.0 F0.1") != std::string::npos);
  CHECK(grid.find(">1") != std::string::npos);
  CHECK(grid.find("<0") != std::string::npos);
}

TEST_CASE("the grid refuses a schedule that fails the checker", "[schedule][grid]") {
  CHECK_THROWS_WITH(RenderScheduleGrid(Load("deadlock_send_first.pir"), GridOptions{}),
                    Catch::Contains("deadlock") && Catch::Contains("(see terasim check)"));
}

TEST_CASE("terasim check prints FILE:LINE: KEY lines and exits 1 on a broken schedule",
          "[schedule][cli]") {
  const Run bad = RunTerasim("check " + kBadDir + "/bytes_mismatch.pir");
  // One mismatch: exit 1, the message names the file, line 10 and the RECV's key.
  CHECK(bad.exit_code == 1);
  CHECK(bad.out.find(kBadDir + "/bytes_mismatch.pir:10: RB.s0.m0.t0-16: RECV of grad.l2.m0.t0-16 "
                               "expects 4096 bytes") != std::string::npos);
  const Run ok = RunTerasim("check " + kBadDir + "/ok_tp2.pir");
  // 2 ranks x (4 compute + 4 all-reduce + optimizer) = 18 ops.
  CHECK(ok.exit_code == 0);
  CHECK(ok.out == kBadDir + "/ok_tp2.pir: ok (18 ops on 2 devices)\n");
  const Run json = RunTerasim("check --json " + kBadDir + "/ok_dp2.pir");
  CHECK(json.exit_code == 0);
  CHECK(json.out.find("\"ok\": true") != std::string::npos);
  const Run missing = RunTerasim("check " + kBadDir + "/no_such_file.pir");
  // A file that cannot be read is an input error: exit 1 with one line.
  CHECK(missing.exit_code == 1);
  CHECK(missing.out.rfind("terasim: ", 0) == 0);
}

TEST_CASE("terasim show prints the grid of a valid schedule", "[schedule][cli]") {
  const Run show = RunTerasim("show " + kBadDir + "/ok_1f1b_4x8.pir");
  CHECK(show.exit_code == 0);
  // 4 devices x (8 F + 8 B + O) + 3 boundaries x 2 directions x 8 x (SEND + RECV) = 164 ops.
  CHECK(show.out.find("ok_1f1b_4x8.pir: 1f1b, 164 ops on 4 devices, 8 micro-batches") !=
        std::string::npos);
  CHECK(show.out.find("dev 3 | .  .  .  F0 B0 F1 B1") != std::string::npos);
}

// Data flow (schedule/data_flow.h, docs/execution_rules.md rule 5). The three schedules of
// issue 15 that `check` accepted and `simulate` timed, but `exec` stalled on or crashed with:
// each is now refused with the cycle of waits, before anything runs.

TEST_CASE("a last-stage backward moved before its own forward is a cycle of waits",
          "[schedule][checker][dataflow]") {
  // tests/golden/1f1b_p3_m4.pir with lines 62 and 63 swapped (sed '62{h;d};63G'): B.s2.m2 reads
  // the loss gradient grad.l4.m2 that F.s2.m2 writes, and F.s2.m2 now follows it on the stream.
  const std::vector<std::string> messages = Messages(Load("dataflow_bwd_before_fwd.pir"));
  REQUIRE(messages.size() == 1);
  CHECK(messages[0] ==
        "dataflow_bwd_before_fwd.pir:62: B.s2.m2.t0-32: deadlock: cycle of waits: B.s2.m2.t0-32 "
        "(line 62) waits for grad.l4.m2.t0-32, which F.s2.m2.t0-32 (line 63) writes; "
        "F.s2.m2.t0-32 waits for B.s2.m2.t0-32 (line 62, before it on stream compute)");
}

TEST_CASE("a tp backward moved after its own all-reduce is a cycle of waits",
          "[schedule][checker][dataflow]") {
  // tests/golden/broadcast_gpipe_p2_t2.pir, sed '65{h;d};66G': on dev 2 the all-reduce of
  // tpb.l2.mlp.m0 now comes before the backward that writes it.
  const std::vector<std::string> messages = Messages(Load("dataflow_bwd_after_its_allreduce.pir"));
  REQUIRE_FALSE(messages.empty());
  CHECK(messages[0].find("dataflow_bwd_after_its_allreduce.pir:65: ARB.s1.m0.t0-32.l2.mlp.r0: "
                         "deadlock: cycle of waits: ARB.s1.m0.t0-32.l2.mlp.r0 (line 65) waits "
                         "for tpb.l2.mlp.m0.t0-32, which B.s1.m0.t0-32.l2.mlp.r0 (line 66) "
                         "writes") == 0);
}

TEST_CASE(
    "an attention backward before the mlp all-reduce it needs is refused, on one stream "
    "or two",
    "[schedule][checker][dataflow]") {
  // tests/golden/tp2_1f1b_p2_m2.pir, sed '115{h;d};116G': B.l3.attn needs the finished mlp
  // backward, which the all-reduce ARB.l3.mlp (now after it on the stream) completes. The
  // executor died on a back-end assertion here.
  const std::vector<std::string> swapped = Messages(Load("dataflow_allreduce_swapped.pir"));
  REQUIRE_FALSE(swapped.empty());
  CHECK(swapped[0].find("dataflow_allreduce_swapped.pir:115: B.s1.m1.t0-32.l3.attn.r0: "
                        "deadlock: cycle of waits") == 0);
  CHECK(swapped[0].find("the finished backward of layer 3 mlp (micro-batch 1, tokens 0-32)") !=
        std::string::npos);
  // The all-reduce on a stream of its own: nothing orders it after the backward that writes its
  // input, nor before the backward that reads its output.
  Schedule own = Load("dataflow_allreduce_own_stream.pir");
  const std::vector<std::string> messages = Messages(own);
  REQUIRE_FALSE(messages.empty());
  CHECK(messages[0] ==
        "dataflow_allreduce_own_stream.pir:115: ARB.s1.m1.t0-32.l3.mlp.r0: reads "
        "tpb.l3.mlp.m1.t0-32, which B.s1.m1.t0-32.l3.mlp.r0 (line 114, dev 2 stream compute) "
        "writes, but nothing orders B.s1.m1.t0-32.l3.mlp.r0 before it (add "
        "after=B.s1.m1.t0-32.l3.mlp.r0 or put both on one stream)");
  // Following the advice on both sides makes the schedule valid: the order now carries the data.
  OpWithKey(own, "ARB.s1.m1.t0-32.l3.mlp.r0").after.push_back("B.s1.m1.t0-32.l3.mlp.r0");
  OpWithKey(own, "B.s1.m1.t0-32.l3.attn.r0").after.push_back("ARB.s1.m1.t0-32.l3.mlp.r0");
  CHECK(Messages(own).empty());
}

TEST_CASE("a cycle of waits through another device names each step",
          "[schedule][checker][dataflow]") {
  // 1F1B on 3 stages: dev 1's SEND of act.l3.m0 no longer waits for the forward that writes it,
  // and that forward now waits for the gradient of micro-batch 0 from dev 2, which dev 2 can
  // only compute from that very activation: SF.s1 -> RF.s2 -> F.s2 -> B.s2 -> SB.s2 -> RB.s1 ->
  // F.s1, which writes what SF.s1 reads.
  Schedule s = ReadPirFile(std::string(TERASIM_TEST_DATA) + "/../golden/1f1b_p3_m4.pir");
  s.source = "1f1b_p3_m4.pir";
  OpWithKey(s, "SF.s1.m0.t0-32").after.clear();
  OpWithKey(s, "F.s1.m0.t0-32").after.push_back("RB.s1.m0.t0-32");
  const std::vector<std::string> messages = Messages(s);
  const std::string cycle = Find(messages, "cycle of waits");
  INFO(cycle);
  CHECK(cycle.find("SF.s1.m0.t0-32: deadlock: cycle of waits: SF.s1.m0.t0-32") !=
        std::string::npos);
  CHECK(cycle.find("waits for act.l3.m0.t0-32, which F.s1.m0.t0-32") != std::string::npos);
  CHECK(cycle.find("F.s1.m0.t0-32 waits for RB.s1.m0.t0-32") != std::string::npos);
  // The steps through dev 2: each RECV runs together with its SEND there.
  CHECK(cycle.find("which runs together with SB.s2.m0.t0-32 (dev 2)") != std::string::npos);
  CHECK(cycle.find("SB.s2.m0.t0-32 waits for B.s2.m0.t0-32") != std::string::npos);
}

TEST_CASE("terasim check and exec refuse the data-flow cycles with exit 1",
          "[schedule][cli][dataflow]") {
  for (const char* name : {"dataflow_bwd_before_fwd.pir", "dataflow_bwd_after_its_allreduce.pir",
                           "dataflow_allreduce_swapped.pir"}) {
    INFO(name);
    const Run check = RunTerasim(std::string("check ") + kBadDir + "/" + name);
    CHECK(check.exit_code == 1);
    CHECK(check.out.find("cycle of waits") != std::string::npos);
    // exec checks first: exit 1 (bad input) in well under its 120 s stall timeout, not exit 3.
    const Run exec = RunTerasim(std::string("exec --model tiny ") + kBadDir + "/" + name);
    CHECK(exec.exit_code == 1);
    CHECK(exec.out.find("cycle of waits") != std::string::npos);
  }
}

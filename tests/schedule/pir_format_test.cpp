#include <catch2/catch.hpp>

#include "models/errors.h"
#include "schedule/pir_format.h"

using namespace terasim;

namespace {

// Two stages, one micro-batch, one slice: F0 -> SEND -> RECV -> F1, then the backward back.
Schedule TwoStage() {
  Schedule s;
  s.model = "tiny";
  s.layers = 4;
  s.sequence = 32;
  s.devices = 2;
  s.batch = 1;
  s.shape.strategy = "gpipe";
  s.shape.pp = 2;
  auto compute = [](std::string key, OpKind kind, int dev, int l0, int l1) {
    Op op;
    op.key = std::move(key);
    op.kind = kind;
    op.device = dev;
    op.stream = "compute";
    op.stage = dev;
    op.layers = {l0, l1};
    op.microbatch = 0;
    op.rows = 1;
    op.tokens = {0, 32};
    return op;
  };
  auto p2p = [](std::string key, OpKind kind, int dev, int peer, std::string tensor,
                std::vector<std::string> after) {
    Op op;
    op.key = std::move(key);
    op.kind = kind;
    op.device = dev;
    op.stream = "p2p";
    op.stage = dev;
    op.microbatch = 0;
    op.rows = 1;
    op.tokens = {0, 32};
    op.peer = peer;
    op.tensor = std::move(tensor);
    op.bytes = 32 * 64 * 2;
    op.after = std::move(after);
    return op;
  };
  s.ops.push_back(compute("F.s0.m0.t0-32", OpKind::kFwd, 0, 0, 2));
  s.ops.push_back(p2p("SF.s0.m0.t0-32", OpKind::kSend, 0, 1, "act.s0.m0.t0-32", {"F.s0.m0.t0-32"}));
  s.ops.push_back(p2p("RB.s0.m0.t0-32", OpKind::kRecv, 0, 1, "grad.s1.m0.t0-32", {}));
  s.ops.push_back(compute("B.s0.m0.t0-32", OpKind::kBwd, 0, 0, 2));
  s.ops.back().after = {"RB.s0.m0.t0-32"};
  s.ops.push_back(p2p("RF.s1.m0.t0-32", OpKind::kRecv, 1, 0, "act.s0.m0.t0-32", {}));
  s.ops.push_back(compute("F.s1.m0.t0-32", OpKind::kFwd, 1, 2, 4));
  s.ops.back().after = {"RF.s1.m0.t0-32"};
  s.ops.push_back(compute("B.s1.m0.t0-32", OpKind::kBwd, 1, 2, 4));
  s.ops.push_back(
      p2p("SB.s1.m0.t0-32", OpKind::kSend, 1, 0, "grad.s1.m0.t0-32", {"B.s1.m0.t0-32"}));
  s.groups.push_back({"dp.s0", {0}, 0});
  return s;
}

std::string ErrorOf(const std::string& text) {
  try {
    ReadPir(text, "t.pir");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("WritePir then ReadPir then WritePir gives the same bytes", "[schedule][pir]") {
  Schedule s = TwoStage();
  std::string text = WritePir(s);
  Schedule back = ReadPir(text, "t.pir");
  CHECK(WritePir(back) == text);
  REQUIRE(back.ops.size() == s.ops.size());
  CHECK(back.ops[1].after == std::vector<std::string>{"F.s0.m0.t0-32"});
  CHECK(back.ops[1].bytes == 4096);
  CHECK(back.ops[0].layers == Range{0, 2});
  CHECK(back.shape.strategy == "gpipe");
  CHECK(back.shape.pp == 2);
  CHECK(back.groups.at(0).ranks == std::vector<int>{0});
  // Line numbers: magic + 6 header lines + 1 group line + "# device 0" comment -> first op on 10.
  CHECK(back.ops[0].line == 10);
}

TEST_CASE("the first line names the format and its version", "[schedule][pir]") {
  std::string text = WritePir(TwoStage());
  CHECK(text.rfind("terasim-pir 1\n", 0) == 0);
  CHECK(ErrorOf("terasim-pir 2\n") ==
        "t.pir:1: format version 2 is not supported (this terasim reads version 1)");
  CHECK(ErrorOf("hello\n") == "t.pir:1: first line must be 'terasim-pir 1'");
  CHECK(ErrorOf("") == "t.pir:1: empty file (expected 'terasim-pir 1')");
}

TEST_CASE("ReadPir names the line and key of a malformed op", "[schedule][pir]") {
  std::string head =
      "terasim-pir 1\nmodel tiny\nlayers 4\nsequence 32\ndevices 2\nbatch 1\n"
      "shape strategy=- dp=1 pp=1 tp=1 v=1\n";
  CHECK(ErrorOf(head + "op A FROB dev=0 stream=c\n") == "t.pir:8: A: unknown op kind 'FROB'");
  CHECK(ErrorOf(head + "op A FWD dev=x stream=c\n") == "t.pir:8: A: dev: 'x' is not an integer");
  CHECK(ErrorOf(head + "op A FWD stream=c\n") == "t.pir:8: A: missing field 'dev'");
  CHECK(ErrorOf(head + "op A FWD dev=0 stream=c tokens=5-5\n") ==
        "t.pir:8: A: tokens: range 5-5 is empty");
  CHECK(ErrorOf(head + "op A FWD dev=0 stream=c color=red\n") ==
        "t.pir:8: A: unknown field 'color'");
  CHECK(ErrorOf(head + "op A FWD dev=0 dev=1 stream=c\n") == "t.pir:8: A: field 'dev' given twice");
  CHECK(ErrorOf(head + "frob\n") == "t.pir:8: unknown directive 'frob'");
  CHECK(ErrorOf("terasim-pir 1\nlayers 4\n") ==
        "t.pir:2: expected header line 'model', found 'layers'");
}

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

// The reader takes plain digits, "A-B" ranges and names in place and hands anything else to its
// checked path: each malformed value below gets the message the checked path always gave.
TEST_CASE("ReadPir reports malformed values read in place as the checked path does",
          "[schedule][pir]") {
  std::string head =
      "terasim-pir 1\nmodel tiny\nlayers 4\nsequence 32\ndevices 2\nbatch 1\n"
      "shape strategy=- dp=1 pp=1 tp=1 v=1\n";
  auto error = [&](const std::string& op) { return ErrorOf(head + op + "\n"); };
  CHECK(error("op A FWD dev=1x stream=c") == "t.pir:8: A: dev: '1x' is not an integer");
  CHECK(error("op A FWD dev= stream=c") == "t.pir:8: A: dev: '' is not an integer");
  // 20 digits: more than the 18 read in place, out of int64's range on the checked path.
  CHECK(error("op A FWD dev=0 stream=c bytes=99999999999999999999") ==
        "t.pir:8: A: bytes: '99999999999999999999' exceeds the limit 1125899906842624 "
        "(kMaxBytes, models/limits.h)");
  CHECK(error("op A FWD dev=0 stream=c tokens=5-") == "t.pir:8: A: tokens: '' is not an integer");
  CHECK(error("op A FWD dev=0 stream=c tokens=-5") ==
        "t.pir:8: A: tokens: '-5' is not a range A-B");
  // kMaxSequence is 2^22 = 4194304.
  CHECK(error("op A FWD dev=0 stream=c tokens=0-4194305") ==
        "t.pir:8: A: tokens: 4194305 exceeds the limit 4194304 (kMaxSequence, models/limits.h)");
  CHECK(error("op A FWD dev=0 stream=c layers=3-2") == "t.pir:8: A: layers: range 3-2 is empty");
  CHECK(error("op A FWD dev=0 stream=a,b") ==
        "t.pir:8: A: stream: 'a,b' must not contain ',' or '='");
  // The ',' past the first eight bytes of the name.
  CHECK(error("op A FWD dev=0 stream=averyveryverylongstream,name") ==
        "t.pir:8: A: stream: 'averyveryverylongstream,name' must not contain ',' or '='");
  CHECK(error("op A FWD dev=0 stream=") == "t.pir:8: A: stream: must not be empty");
  CHECK(error("op A,B FWD dev=0 stream=c") == "t.pir:8: key: 'A,B' must not contain ',' or '='");
  // Field names: seven characters are matched by one load, "recompute" (nine) by FieldBit.
  CHECK(error("op A FWD dev=0 stream=c recompu=full") == "t.pir:8: A: unknown field 'recompu'");
  CHECK(error("op A FWD dev=0 stream=c recompute=half") ==
        "t.pir:8: A: recompute: 'half' must be selective or full");
  CHECK(error("op A FWD dev=0 stream=c =3") == "t.pir:8: A: unknown field ''");
  CHECK(error("op A FWD dev=0 stream=c tokens") ==
        "t.pir:8: A: 'tokens' is not a name=value field");
  CHECK(error("op A FWD dev=0 stream=c mb=65536") ==
        "t.pir:8: A: mb: 65536 exceeds the limit 65535 (kMaxMicrobatches, models/limits.h)");
  CHECK(error("op A FWD dev=0 stream=c rows=0") == "t.pir:8: A: rows: 0 must be >= 1");
  CHECK(error("op A FWD dev=0\tstream=c\tsp=2") == "t.pir:8: A: sp: '2' must be 1");
  CHECK(error("op A ALLREDUCEX dev=0 stream=c") == "t.pir:8: A: unknown op kind 'ALLREDUCEX'");
}

// Names are scanned sixteen bytes at a time where the line has sixteen left: a ',', '=', tab or
// control byte at any place of a long name is found where the byte-at-a-time scan finds it.
TEST_CASE("ReadPir finds the end and separators of long names at every place", "[schedule][pir]") {
  const std::string head =
      "terasim-pir 1\nmodel tiny\nlayers 4\nsequence 32\ndevices 2\nbatch 1\n"
      "shape strategy=- dp=1 pp=1 tp=1 v=1\n";
  for (size_t at = 0; at < 40; ++at) {
    std::string name(40, 'k');
    name[at] = ',';
    // The key: a ',' anywhere is an error naming the whole key.
    CHECK(ErrorOf(head + "op " + name + " FWD dev=0 stream=c\n") ==
          "t.pir:8: key: '" + name + "' must not contain ',' or '='");
    name[at] = '=';
    CHECK(ErrorOf(head + "op A FWD dev=0 stream=" + name + " rows=1\n") ==
          "t.pir:8: A: stream: '" + name + "' must not contain ',' or '='");
    // A tab ends the key: the rest is the kind, an unknown one (at 39, "dev=0" is).
    name[at] = '\t';
    const std::string kind = at + 1 < name.size() ? name.substr(at + 1) : "dev=0";
    if (at > 0) {
      CHECK(ErrorOf(head + "op " + name + " dev=0 stream=c\n") ==
            "t.pir:8: " + name.substr(0, at) + ": unknown op kind '" + kind + "'");
    }
    // A control byte is part of the name (not a separator).
    name[at] = '\x01';
    const Schedule s = ReadPir(
        head + "op " + name + " FWD dev=0 stream=" + name + " tensor=" + name + "\n", "t.pir");
    REQUIRE(s.ops.size() == 1);
    CHECK(s.ops[0].key == name);
    CHECK(s.ops[0].stream == name);
    CHECK(s.ops[0].tensor == name);
  }
}

// Values read in place: a "-0" device is 0 on the checked path (from_chars), as before.
TEST_CASE("ReadPir reads digits, ranges and names of an op", "[schedule][pir]") {
  const Schedule s = ReadPir(
      "terasim-pir 1\nmodel tiny\nlayers 4\nsequence 32\ndevices 2\nbatch 1\n"
      "shape strategy=- dp=1 pp=1 tp=1 v=1\n"
      "op A FWD dev=-0 stream=compute stage=1 layers=0-4 mb=7 rows=2 tokens=16-32 "
      "group=tp.d0.s1.with.a.long.name\n"
      "op B ALLREDUCE dev=1 stream=compute bytes=1125899906842624 tensor=t.x\r\n",
      "t.pir");
  REQUIRE(s.ops.size() == 2);
  CHECK(s.ops[0].device == 0);
  CHECK(s.ops[0].stream == "compute");
  CHECK(s.ops[0].stage == 1);
  CHECK(s.ops[0].layers.begin == 0);
  CHECK(s.ops[0].layers.end == 4);
  CHECK(s.ops[0].microbatch == 7);
  CHECK(s.ops[0].rows == 2);
  CHECK(s.ops[0].tokens.begin == 16);
  CHECK(s.ops[0].tokens.end == 32);
  CHECK(s.ops[0].group == "tp.d0.s1.with.a.long.name");
  CHECK(s.ops[1].kind == OpKind::kAllReduce);
  CHECK(s.ops[1].bytes == (int64_t{1} << 50));  // kMaxBytes itself is allowed
  CHECK(s.ops[1].tensor == "t.x");              // the '\r' before the newline is a space
}

// Numbers of up to seven digits are read eight bytes at a time where the line has eight bytes
// left, longer ones and those near the line's end a digit at a time: every length, at the end
// of a line and before another field, reads the same value.
TEST_CASE("ReadPir reads numbers of every length wherever they stand", "[schedule][pir]") {
  const std::string head =
      "terasim-pir 1\nmodel tiny\nlayers 4\nsequence 32\ndevices 2\nbatch 1\n"
      "shape strategy=- dp=1 pp=1 tp=1 v=1\n";
  int64_t value = 0;
  // Up to 15 digits: kMaxBytes is 2^50, about 1.1e15.
  for (int digits = 1; digits <= 15; ++digits) {
    value = value * 10 + digits % 10;  // 1, 12, 123, ..., 123456789012345
    const std::string number = std::to_string(value);
    for (const std::string tail : {"", " sp=1", "\tsp=1 tensor=abcdefgh", "\r"}) {
      const Schedule s =
          ReadPir(head + "op A FWD dev=0 stream=c bytes=" + number + tail + "\n", "t.pir");
      REQUIRE(s.ops.size() == 1);
      CHECK(s.ops[0].bytes == value);
      CHECK(s.ops[0].sequence_parallel == (tail.find("sp") != std::string::npos));
    }
    // Leading zeros count as digits: the same value.
    CHECK(ReadPir(head + "op A FWD dev=0 stream=c bytes=000" + number + " sp=1 tensor=t\n", "t.pir")
              .ops[0]
              .bytes == value);
    // A digit run that does not end the value: the checked path's message.
    CHECK(ErrorOf(head + "op A FWD dev=0 stream=c bytes=" + number + "x sp=1\n") ==
          "t.pir:8: A: bytes: '" + number + "x' is not an integer");
  }
}

// Field names of up to seven characters are found by a perfect hash, op kinds by a guess
// confirmed against a table: each name is recognised and a near miss is not.
TEST_CASE("ReadPir knows every field name and op kind, and no near miss", "[schedule][pir]") {
  const std::string head =
      "terasim-pir 1\nmodel tiny\nlayers 4\nsequence 32\ndevices 2\nbatch 1\n"
      "shape strategy=- dp=1 pp=1 tp=1 v=1\n";
  // Each field with a value it takes.
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"dev", "1"},          {"stream", "s"}, {"stage", "1"},  {"layers", "0-1"},
      {"part", "attn"},      {"mb", "1"},     {"rows", "1"},   {"tokens", "0-1"},
      {"group", "g"},        {"peer", "1"},   {"tensor", "t"}, {"bytes", "1"},
      {"recompute", "full"}, {"sp", "1"},     {"zero", "1"},   {"after", "B"}};
  for (const auto& [name, value] : fields) {
    // Given twice: only a known field, read with its value, gets that far.
    const std::string field = " " + name + "=" + value;
    CHECK(ErrorOf(head + "op A FWD dev=0 stream=c" + field + field + "\n") ==
          "t.pir:8: A: field '" + name + "' given twice");
    for (const std::string& miss : {name + "s", name.substr(1), name.substr(0, name.size() - 1)}) {
      CHECK(ErrorOf(head + "op A FWD dev=0 stream=c " + miss + "=1\n") ==
            "t.pir:8: A: unknown field '" + miss + "'");
    }
  }
  for (const std::string kind :
       {"FWD", "BWD", "BWD_INPUT", "BWD_WEIGHT", "SEND", "RECV", "ALLREDUCE", "ALLGATHER",
        "REDUCE_SCATTER", "BROADCAST", "OPTIMIZER", "RECOMPUTE"}) {
    const Schedule s = ReadPir(head + "op A " + kind + " dev=0 stream=c\n", "t.pir");
    REQUIRE(s.ops.size() == 1);
    CHECK(OpKindName(s.ops[0].kind) == kind);
    const std::string miss = kind.substr(0, kind.size() - 1) + "X";
    CHECK(ErrorOf(head + "op A " + miss + " dev=0 stream=c\n") ==
          "t.pir:8: A: unknown op kind '" + miss + "'");
  }
}

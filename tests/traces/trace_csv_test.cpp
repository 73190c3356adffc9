// Trace CSV: header, quoting, determinism, round trip and reader errors.
#include "traces/trace_csv.h"

#include <algorithm>
#include <sstream>

#include <catch2/catch.hpp>

#include "models/errors.h"
#include "tests/traces/sample_trace.h"

namespace terasim {
namespace {

using testing::CanonicalRows;
using testing::SameRows;
using testing::SampleTrace;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_CASE("Trace CSV starts with the fixed header and has one line per row") {
  Trace trace = SampleTrace();
  std::vector<std::string> lines = Lines(TraceCsv(trace, "run-7"));
  REQUIRE(lines.size() == trace.rows.size() + 1);
  CHECK(lines[0] == "run,iteration,key,kind,device,stream,start_ns,end_ns,bytes,flops");
  // The earliest row (start 0 ns) is device 0's forward: 1.25e12 FLOPs in shortest digits.
  CHECK(lines[1] == "run-7,0,F.s0.m0.t0-4,FWD,0,compute,0,1500,0,1250000000000");
  // A key holding a comma and quotes is quoted with the quotes doubled.
  CHECK(std::count(lines.begin(), lines.end(),
                   "run-7,0,\"odd \"\"key\"\", with comma\",OPTIMIZER,1,compute,9001,9002,0,7") ==
        1);
}

TEST_CASE("Trace CSV round trip restores every row and takes the run as the label") {
  Trace trace = SampleTrace();
  Trace back = ReadTraceCsv(TraceCsv(trace), "sample.csv");
  CHECK(SameRows(back.rows, CanonicalRows(trace)));
  // With no run given, the run column is the trace's label.
  CHECK(back.label == "sample");
}

TEST_CASE("Trace CSV output is byte-identical for the same rows in any order") {
  Trace a = SampleTrace();
  Trace b = SampleTrace();
  std::reverse(b.rows.begin(), b.rows.end());
  CHECK(TraceCsv(a, "r") == TraceCsv(b, "r"));
}

TEST_CASE("Trace CSV reader accepts CRLF line ends and a quoted line break") {
  std::string text =
      "run,iteration,key,kind,device,stream,start_ns,end_ns,bytes,flops\r\n"
      "1,0,\"two\nlines\",SEND,2,send,10,20,64,0\r\n";
  Trace t = ReadTraceCsv(text, "crlf.csv");
  REQUIRE(t.rows.size() == 1);
  CHECK(t.rows[0].key == "two\nlines");
  CHECK(t.rows[0].kind == OpKind::kSend);
  CHECK(t.rows[0].bytes == 64);
}

TEST_CASE("Trace CSV reader names the file, line and column of bad input") {
  std::string header = "run,iteration,key,kind,device,stream,start_ns,end_ns,bytes,flops\n";
  CHECK_THROWS_WITH(ReadTraceCsv("run,key\n", "h.csv"),
                    "h.csv:1: header must be "
                    "'run,iteration,key,kind,device,stream,start_ns,end_ns,bytes,flops'");
  CHECK_THROWS_WITH(
      ReadTraceCsv(header + "r,0,k,FWD,0,compute,0,10,0,0\nr,0,k,FOO,0,c,0,1,0,0\n", "k.csv"),
      "k.csv:3: kind: unknown op kind 'FOO'");
  CHECK_THROWS_WITH(ReadTraceCsv(header + "r,0,k,FWD,0,compute,x,10,0,0\n", "n.csv"),
                    "n.csv:2: start_ns: 'x' is not an integer");
  CHECK_THROWS_WITH(ReadTraceCsv(header + "r,0,k,FWD,0,compute,10,5,0,0\n", "e.csv"),
                    "e.csv:2: end_ns: must be >= 10 (got 5)");
  CHECK_THROWS_WITH(ReadTraceCsv(header + "r,0,k,FWD,0,compute\n", "f.csv"),
                    "f.csv:2: expected 10 fields, got 6");
  CHECK_THROWS_WITH(
      ReadTraceCsv(header + "a,0,k,FWD,0,c,0,1,0,0\nb,0,k,FWD,0,c,0,1,0,0\n", "r.csv"),
      "r.csv:3: run: 'b' differs from 'a' above (one run per file)");
  CHECK_THROWS_AS(ReadTraceCsv("", "empty.csv"), InputError);
}

}  // namespace
}  // namespace terasim

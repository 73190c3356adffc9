// The executor's two thread modes (ExecOptions::threads): one thread per (device, stream) and
// one thread per device running its streams' ops as they become ready. They compute the same
// numbers; auto picks per-device threads exactly where they can run; a receive that never comes
// is a stall in either mode.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "exec/executor.h"
#include "models/errors.h"
#include "schedule/checker.h"
#include "schedule/generator.h"

using namespace terasim;

namespace {

Schedule TeraPipeTwoStages() {
  GenerateOptions o;
  o.model = LoadModelCard("tiny-lm");
  o.strategy = Strategy::kTeraPipe;
  o.pp = 2;
  o.microbatches = 2;
  o.microbatch_size = 2;
  o.uniform_slices = 4;
  Schedule s = Generate(o);
  RequireValidSchedule(s);
  return s;
}

ExecResult Run(const Schedule& s, StreamThreads threads, int iterations = 2) {
  ExecOptions options;
  options.iterations = iterations;
  options.seed = 5;
  options.stall_timeout_s = 60;
  options.threads = threads;
  return ExecuteInProcess(s, LoadModelCard(s.model), options);
}

}  // namespace

TEST_CASE("Per-device and per-stream threads give bit-identical losses and gradients",
          "[exec][threads]") {
  const Schedule s = TeraPipeTwoStages();
  const ExecResult by_stream = Run(s, StreamThreads::kStream);
  const ExecResult by_device = Run(s, StreamThreads::kDevice);
  CHECK(by_stream.threads == StreamThreads::kStream);
  CHECK(by_device.threads == StreamThreads::kDevice);
  CHECK(by_device.trace.metadata.at("threads") == "device");
  // The same ops in the same order on each device's back end: the same bits, both iterations
  // (the second after an optimizer step).
  REQUIRE(by_device.losses.size() == 2);
  CHECK(by_device.losses == by_stream.losses);
  CHECK(by_device.grad_norm == by_stream.grad_norm);
  CHECK(by_device.gradients.values == by_stream.gradients.values);
  // One trace row per op per iteration in both.
  CHECK(by_device.trace.rows.size() == 2 * s.ops.size());
  CHECK(by_stream.trace.rows.size() == 2 * s.ops.size());
}

TEST_CASE("Per-device threads run a device's ops one at a time, each stream in order",
          "[exec][threads]") {
  const Schedule s = TeraPipeTwoStages();
  const ExecResult r = Run(s, StreamThreads::kDevice, 1);
  for (int device = 0; device < s.devices; ++device) {
    std::vector<TraceRow> rows;
    for (const TraceRow& row : r.trace.rows) {
      // A RECV's row starts when it was posted (it waits, the thread does not): skip it.
      if (row.device == device && row.kind != OpKind::kRecv) rows.push_back(row);
    }
    std::sort(rows.begin(), rows.end(),
              [](const TraceRow& a, const TraceRow& b) { return a.start_ns < b.start_ns; });
    INFO("device " << device);
    // One thread: no two ops of a device overlap in time.
    for (size_t i = 1; i < rows.size(); ++i) CHECK(rows[i].start_ns >= rows[i - 1].end_ns);
    // Each stream's ops ran in the schedule's order.
    std::map<std::string, std::vector<std::string>> order;
    for (const TraceRow& row : rows) order[row.stream].push_back(row.key);
    for (const auto& [stream, keys] : order) {
      std::vector<std::string> want;
      for (const Op& op : s.ops) {
        if (op.device == device && op.stream == stream && op.kind != OpKind::kRecv) {
          want.push_back(op.key);
        }
      }
      CHECK(keys == want);
    }
  }
}

TEST_CASE("Auto picks per-device threads for point-to-point schedules only", "[exec][threads]") {
  CHECK(Run(TeraPipeTwoStages(), StreamThreads::kAuto, 1).threads == StreamThreads::kDevice);
  // Tensor parallel: the all-reduces block their caller, so every stream needs its own thread.
  GenerateOptions o;
  o.model = LoadModelCard("tiny-lm");
  o.strategy = Strategy::kGpipe;
  o.tp = 2;
  o.microbatch_size = 4;
  Schedule tp = Generate(o);
  RequireValidSchedule(tp);
  tp.source = "tp.pir";
  CHECK(Run(tp, StreamThreads::kAuto, 1).threads == StreamThreads::kStream);
  try {
    Run(tp, StreamThreads::kDevice, 1);
    FAIL("no error");
  } catch (const InputError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("tp.pir") != std::string::npos);
    CHECK(what.find("ALLREDUCE") != std::string::npos);
  }
}

TEST_CASE("A receive that never comes stalls with the waiting ops named, in either mode",
          "[exec][threads]") {
  Schedule s = TeraPipeTwoStages();
  // Drop device 0's first forward send: device 1 waits for it forever.
  const auto send = std::find_if(s.ops.begin(), s.ops.end(), [](const Op& op) {
    return op.kind == OpKind::kSend && op.device == 0;
  });
  REQUIRE(send != s.ops.end());
  const std::string recv_key = "RF.s1" + send->key.substr(send->key.find('.', 3));
  s.ops.erase(send);
  for (StreamThreads threads : {StreamThreads::kStream, StreamThreads::kDevice}) {
    INFO(StreamThreadsName(threads));
    ExecOptions options;
    options.threads = threads;
    options.stall_timeout_s = 0.3;
    try {
      ExecuteInProcess(s, LoadModelCard(s.model), options);
      FAIL("no error");
    } catch (const InternalError& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find("stalled") != std::string::npos);
      // Device 1 waits for the lost message from the start; device 0 later for the gradients
      // device 1 never sends. Either may report first: each names a receive it waits for.
      if (threads == StreamThreads::kDevice) {
        CHECK(
            (what.find(recv_key) != std::string::npos || what.find("RB.s0.") != std::string::npos));
      }
    }
  }
}

TEST_CASE("Thread mode names round-trip and unknown ones are rejected", "[exec][threads]") {
  for (StreamThreads t : {StreamThreads::kAuto, StreamThreads::kStream, StreamThreads::kDevice}) {
    CHECK(ParseStreamThreads(StreamThreadsName(t), "x") == t);
  }
  CHECK_THROWS_AS(ParseStreamThreads("core", "--exec-threads"), InputError);
}

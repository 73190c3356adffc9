#include "tests/fuzz/differential.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "exec/executor.h"
#include "models/errors.h"
#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/pir_format.h"
#include "sim/simulator.h"
#include "tests/sim/fake_cost.h"
#include "tests/sim/fake_topology.h"

namespace terasim::fuzz {
namespace {

// Draws by modulo: std::uniform_int_distribution differs between standard libraries, and a
// seed must name the same case everywhere.
class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed) {}
  int Below(int n) { return n <= 1 ? 0 : static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(static_cast<int>(v.size()))];
  }

 private:
  std::mt19937_64 rng_;
};

const ModelCard& Tiny() {
  static const ModelCard card = LoadModelCard("tiny");
  return card;
}

// A generated schedule of at most 4 devices; `what` describes its options.
Schedule Generated(Draw& draw, std::string& what) {
  for (int attempt = 0;; ++attempt) {
    GenerateOptions o;
    o.model = Tiny();
    o.strategy = draw.Pick(std::vector<Strategy>{Strategy::kGpipe, Strategy::kOneFOneB,
                                                 Strategy::kInterleaved, Strategy::kTeraPipe});
    o.tp = draw.Pick(std::vector<int>{1, 1, 2});
    o.dp = draw.Pick(std::vector<int>{1, 1, 2});
    const int max_pp = 4 / (o.tp * o.dp);
    o.pp = 1 + draw.Below(max_pp);
    o.microbatches = 1 + draw.Below(4);
    o.microbatch_size = 1 + draw.Below(2);
    if (o.strategy == Strategy::kInterleaved) o.virtual_stages = 2;
    if (o.strategy == Strategy::kTeraPipe) {
      o.uniform_slices = draw.Pick(std::vector<int>{2, 4});
      o.microbatches = 1 + draw.Below(2);
      o.order = draw.Below(2) == 0 ? SliceOrder::kFlush : SliceOrder::kOneFOneB;
    }
    if (o.tp > 1 && o.pp > 1 && draw.Below(2) == 0) o.boundary = Boundary::kBroadcast;
    what = fmt::format("{} dp={} pp={} tp={} m={} rows={} v={} slices={} order={} boundary={}",
                       StrategyName(o.strategy), o.dp, o.pp, o.tp, o.microbatches,
                       o.microbatch_size, o.virtual_stages, o.uniform_slices,
                       SliceOrderName(o.order), BoundaryName(o.boundary));
    try {
      return Generate(o);
    } catch (const InputError&) {
      if (attempt > 50) throw;  // the draw keeps asking for impossible options
    }
  }
}

// Ops of `device`, by position.
std::vector<int> OpsOf(const Schedule& s, int device) {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(s.ops.size()); ++i) {
    if (s.ops[i].device == device) out.push_back(i);
  }
  return out;
}

// One random mutation; returns what it did ("" when it found nothing to do).
std::string Mutate(Schedule& s, Draw& draw) {
  const int i = draw.Below(static_cast<int>(s.ops.size()));
  Op& op = s.ops[i];
  const std::vector<int> mine = OpsOf(s, op.device);
  switch (draw.Below(5)) {
    case 0: {  // swap with the next op of its stream
      for (int j = i + 1; j < static_cast<int>(s.ops.size()); ++j) {
        if (s.ops[j].device == op.device && s.ops[j].stream == op.stream) {
          const std::string what = fmt::format("swapped {} and {}", op.key, s.ops[j].key);
          std::swap(s.ops[i], s.ops[j]);
          return what;
        }
      }
      return "";
    }
    case 1: {  // move to another place in the device's program
      const int to = draw.Pick(mine);
      if (to == i) return "";
      const std::string what = fmt::format("moved {} to {}'s place", op.key, s.ops[to].key);
      Op moved = std::move(s.ops[i]);
      s.ops.erase(s.ops.begin() + i);
      s.ops.insert(s.ops.begin() + to, std::move(moved));
      return what;
    }
    case 2: {  // to another stream of the device, or a new one
      std::vector<std::string> streams{"fz"};
      for (int j : mine) {
        if (std::find(streams.begin(), streams.end(), s.ops[j].stream) == streams.end()) {
          streams.push_back(s.ops[j].stream);
        }
      }
      const std::string to = draw.Pick(streams);
      if (to == op.stream) return "";
      const std::string what = fmt::format("moved {} from stream {} to {}", op.key, op.stream, to);
      op.stream = to;
      return what;
    }
    case 3: {  // drop an after dep
      if (op.after.empty()) return "";
      const int k = draw.Below(static_cast<int>(op.after.size()));
      const std::string what = fmt::format("dropped {} after={}", op.key, op.after[k]);
      op.after.erase(op.after.begin() + k);
      return what;
    }
    default: {  // add an after dep on another op of the device
      const int j = draw.Pick(mine);
      if (j == i || std::find(op.after.begin(), op.after.end(), s.ops[j].key) != op.after.end()) {
        return "";
      }
      op.after.push_back(s.ops[j].key);
      return fmt::format("added {} after={}", op.key, s.ops[j].key);
    }
  }
}

}  // namespace

Schedule MakeCase(uint64_t seed, int index, std::string& mutation) {
  Draw draw(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(index) * 0xBF58476D1CE4E5B9ULL +
            1);
  std::string what;
  Schedule s = Generated(draw, what);
  mutation = what + ";";
  // One case in eight stays as generated: the generators' own output must pass everywhere.
  if (draw.Below(8) == 0) return s;
  const int mutations = 1 + draw.Below(3);
  for (int m = 0, tries = 0; m < mutations && tries < 20; ++tries) {
    const std::string done = Mutate(s, draw);
    if (done.empty()) continue;
    mutation += " " + done + ";";
    ++m;
  }
  return s;
}

DifferentialCounts RunDifferential(const DifferentialOptions& options) {
  DifferentialCounts counts;
  const testing::FakeCost cost(1, 2, 1);
  for (int index = options.first_case; index < options.first_case + options.cases; ++index) {
    std::string mutation;
    Schedule s = MakeCase(options.seed, index, mutation);
    s.source = fmt::format("case{}.pir", index);
    ++counts.cases;
    if (options.progress && counts.cases % 500 == 0) {
      std::cerr << counts.cases << " cases: " << counts.accepted << " accepted, " << counts.rejected
                << " rejected, " << counts.failures.size() << " failures\n";
    }
    const bool unmutated = mutation.find("; ") == std::string::npos;
    if (unmutated) ++counts.unmutated;
    auto fail = [&](std::string what) {
      if (options.verbose) std::cerr << "case " << index << ": FAIL " << what << "\n";
      DifferentialFailure f{index, std::move(what), mutation, WritePir(s)};
      if (!options.failure_dir.empty()) {
        std::filesystem::create_directories(options.failure_dir);
        std::ofstream(fmt::format("{}/case{}.pir", options.failure_dir, index))
            << "# " << f.mutation << "\n# " << f.what << "\n"
            << f.pir;
      }
      counts.failures.push_back(std::move(f));
    };
    const std::vector<Diagnostic> diagnostics = CheckSchedule(s);
    if (!diagnostics.empty()) {
      ++counts.rejected;
      if (unmutated)
        fail("check rejected a generated schedule: " + FormatDiagnostic(s, diagnostics[0]));
      if (options.verbose) {
        std::cerr << "case " << index << ": rejected: " << FormatDiagnostic(s, diagnostics[0])
                  << "\n";
      }
      continue;
    }
    ++counts.accepted;
    if (options.verbose) std::cerr << "case " << index << ": accepted: " << mutation << "\n";
    try {
      const auto topology = testing::FreeTopology(s.devices);
      Simulate(s, topology, cost);
    } catch (const std::exception& e) {
      fail(std::string("simulate: ") + e.what());
      continue;
    }
    try {
      ExecOptions exec;
      exec.stall_timeout_s = options.stall_timeout_s;
      // Both ways of giving streams threads: one thread per stream, and (where the schedule
      // allows it) one per device.
      exec.threads = index % 2 == 0 ? StreamThreads::kStream : StreamThreads::kAuto;
      ExecuteInProcess(s, Tiny(), exec, "cpu");
    } catch (const std::exception& e) {
      fail(std::string("exec: ") + e.what());
    }
  }
  return counts;
}

}  // namespace terasim::fuzz

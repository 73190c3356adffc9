// A small trace used by the traces tests: two devices, three streams, compute and
// communication ops over two iterations, rows deliberately out of canonical order, and keys
// that need quoting in CSV and escaping in JSON.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "traces/trace.h"
#include "traces/trace_order.h"

namespace terasim::testing {

inline Trace SampleTrace() {
  Trace t;
  t.run_kind = "sim";
  t.label = "sample";
  t.metadata = {{"model", "tiny"}, {"cluster", "p3.16xlarge:1"}};
  auto row = [&](int it, std::string key, OpKind kind, int dev, std::string stream, TimeNs s,
                 TimeNs e, Bytes b, Flops f) {
    t.rows.push_back({it, std::move(key), kind, dev, std::move(stream), s, e, b, f});
  };
  row(0, "B.s0.m0.t0-4", OpKind::kBwd, 0, "compute", 5000, 9001, 0, 2.5e12);
  row(0, "F.s0.m0.t0-4", OpKind::kFwd, 0, "compute", 0, 1500, 0, 1.25e12);
  row(0, "SF.s0.m0.t0-4", OpKind::kSend, 0, "send", 1500, 2250, 16384, 0);
  row(0, "RF.s1.m0.t0-4", OpKind::kRecv, 1, "recv", 100, 2250, 16384, 0);
  row(0, "F.s1.m0.t0-4", OpKind::kFwd, 1, "compute", 2250, 3751, 0, 1.25e12);
  row(0, "odd \"key\", with comma", OpKind::kOptimizer, 1, "compute", 9001, 9002, 0, 7);
  row(1, "F.s0.m0.t0-4", OpKind::kFwd, 0, "compute", 10000, 11500, 0, 1.25e12);
  row(1, "DP.s0.d0", OpKind::kAllReduce, 0, "dp", 12000, 123456789012, 1 << 20, 0);
  return t;
}

// The rows in the writers' canonical order.
inline std::vector<TraceRow> CanonicalRows(const Trace& t) {
  std::vector<TraceRow> rows;
  for (size_t i : CanonicalRowOrder(t.rows)) rows.push_back(t.rows[i]);
  return rows;
}

// Every field of every row equal (flops compared exactly: the writers print round-trip digits).
inline bool SameRows(const std::vector<TraceRow>& a, const std::vector<TraceRow>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const TraceRow& x = a[i];
    const TraceRow& y = b[i];
    if (x.iteration != y.iteration || x.key != y.key || x.kind != y.kind || x.device != y.device ||
        x.stream != y.stream || x.start_ns != y.start_ns || x.end_ns != y.end_ns ||
        x.bytes != y.bytes || x.flops != y.flops) {
      return false;
    }
  }
  return true;
}

// A fresh path in the temp directory, removed (with its -wal/-shm files) on construction and
// destruction. `name` must be unique among the paths a test process holds at once.
class TempPath {
 public:
  explicit TempPath(const std::string& name) {
    path_ = (std::filesystem::temp_directory_path() /
             ("terasim-test-" + std::to_string(getpid()) + "-" + name))
                .string();
    Remove();
  }
  ~TempPath() { Remove(); }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::string& str() const { return path_; }

 private:
  void Remove() {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      std::filesystem::remove(path_ + suffix, ec);
    }
  }
  std::string path_;
};

}  // namespace terasim::testing

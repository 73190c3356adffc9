#include "exec/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <numeric>
#include <tuple>
#include <type_traits>

#include "models/errors.h"
#if TERASIM_HAVE_MPI
#include "exec/mpi_transport.h"
#endif

namespace terasim {

BackendFactory MakeBackendFactory(const std::string& name, const ModelCard& card, uint64_t seed) {
  if (name == "cpu") {
    return [card, seed](int device, const ShardSpec& shard) -> std::unique_ptr<ComputeBackend> {
      return std::make_unique<CpuBackend>(card, shard, seed);
    };
  }
  if (name == "cuda") ThrowInput("exec: --backend: cuda back end not built");
  ThrowInput("exec: --backend: unknown back end '{}' (known: cpu, cuda)", name);
}

ExecResult ExecuteInProcess(const Schedule& schedule, const ModelCard& card,
                            const ExecOptions& options, const std::string& backend) {
  BackendFactory factory = MakeBackendFactory(backend, card, options.seed);
  if (schedule.devices > kMaxDevicesPerProcess) {
    ThrowInput(
        "{}: devices {}: exec runs at most {} devices in one process (as threads); run "
        "it under mpirun, one rank per device",
        schedule.source.empty() ? "schedule" : schedule.source, schedule.devices,
        kMaxDevicesPerProcess);
  }
  InProcessTransport transport(
      std::chrono::milliseconds(static_cast<int64_t>(options.stall_timeout_s * 1000)));
  std::vector<int> devices(schedule.devices);
  std::iota(devices.begin(), devices.end(), 0);
  return RunSchedule(schedule, card, options, factory, transport, devices);
}

#if TERASIM_HAVE_MPI
namespace {

// What one rank sends to rank 0 after its run, as bytes (every rank runs the same binary).
class ByteWriter {
 public:
  template <typename T>
  void Put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const char* p = reinterpret_cast<const char*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  template <typename T>
  void PutVector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    Put<uint64_t>(v.size());
    const char* p = reinterpret_cast<const char*>(v.data());
    bytes_.insert(bytes_.end(), p, p + v.size() * sizeof(T));
  }
  const std::vector<char>& Data() const { return bytes_; }

 private:
  std::vector<char> bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::vector<char>& bytes) : bytes_(bytes) {}
  template <typename T>
  T Get() {
    T value;
    Read(&value, sizeof(T));
    return value;
  }
  std::string GetString() {
    std::string s(Get<uint64_t>(), '\0');
    Read(s.data(), s.size());
    return s;
  }
  template <typename T>
  std::vector<T> GetVector() {
    std::vector<T> v(Get<uint64_t>());
    Read(v.data(), v.size() * sizeof(T));
    return v;
  }

 private:
  void Read(void* to, size_t n) {
    TERASIM_CHECK(at_ + n <= bytes_.size(), "rank result truncated at {} of {} bytes", at_,
                  bytes_.size());
    if (n > 0) std::memcpy(to, bytes_.data() + at_, n);
    at_ += n;
  }
  const std::vector<char>& bytes_;
  size_t at_ = 0;
};

std::vector<char> EncodeRankResult(const ExecResult& r) {
  ByteWriter w;
  w.PutVector(r.losses);
  w.PutVector(r.iteration_times_s);
  w.Put<uint64_t>(r.gradients.values.size());
  for (const auto& [name, values] : r.gradients.values) {
    w.PutString(name);
    w.PutVector(values);
    w.PutVector(r.gradients.covered.at(name));
  }
  w.Put<uint64_t>(r.trace.rows.size());
  for (const TraceRow& row : r.trace.rows) {
    w.Put(row.iteration);
    w.PutString(row.key);
    w.Put(row.kind);
    w.Put(row.device);
    w.PutString(row.stream);
    w.Put(row.start_ns);
    w.Put(row.end_ns);
    w.Put(row.bytes);
    w.Put(row.flops);
  }
  w.Put<uint64_t>(r.resident_state.size());
  for (const auto& [device, bytes] : r.resident_state) {
    w.Put(device);
    w.Put(bytes);
  }
  return w.Data();
}

ExecResult DecodeRankResult(const std::vector<char>& bytes) {
  ByteReader in(bytes);
  ExecResult r;
  r.losses = in.GetVector<double>();
  r.iteration_times_s = in.GetVector<double>();
  const uint64_t tensors = in.Get<uint64_t>();
  for (uint64_t i = 0; i < tensors; ++i) {
    const std::string name = in.GetString();
    r.gradients.values[name] = in.GetVector<float>();
    r.gradients.covered[name] = in.GetVector<uint8_t>();
  }
  const uint64_t rows = in.Get<uint64_t>();
  for (uint64_t i = 0; i < rows; ++i) {
    TraceRow row;
    row.iteration = in.Get<int>();
    row.key = in.GetString();
    row.kind = in.Get<OpKind>();
    row.device = in.Get<int>();
    row.stream = in.GetString();
    row.start_ns = in.Get<TimeNs>();
    row.end_ns = in.Get<TimeNs>();
    row.bytes = in.Get<Bytes>();
    row.flops = in.Get<Flops>();
    r.trace.rows.push_back(std::move(row));
  }
  const uint64_t devices = in.Get<uint64_t>();
  for (uint64_t i = 0; i < devices; ++i) {
    const int device = in.Get<int>();
    r.resident_state[device] = in.Get<StateBytes>();
  }
  return r;
}

// Rank 0's view of the run: losses summed in rank order (a rank without the last layer
// contributes 0), gradients merged in rank order, the slowest rank's iteration time.
ExecResult CombineRankResults(const std::vector<std::vector<char>>& ranks, ExecResult own) {
  ExecResult out;
  out.trace.run_kind = own.trace.run_kind;
  out.trace.metadata = own.trace.metadata;
  out.losses.assign(own.losses.size(), 0.0);
  out.iteration_times_s.assign(own.iteration_times_s.size(), 0.0);
  for (const std::vector<char>& bytes : ranks) {
    ExecResult r = DecodeRankResult(bytes);
    TERASIM_CHECK(r.losses.size() == out.losses.size(), "ranks ran {} and {} iterations",
                  r.losses.size(), out.losses.size());
    for (size_t i = 0; i < out.losses.size(); ++i) {
      out.losses[i] += r.losses[i];
      out.iteration_times_s[i] = std::max(out.iteration_times_s[i], r.iteration_times_s[i]);
    }
    MergeGathered(out.gradients, r.gradients);
    out.resident_state.merge(r.resident_state);
    for (TraceRow& row : r.trace.rows) out.trace.rows.push_back(std::move(row));
  }
  out.grad_norm = GradNorm(out.gradients);
  std::sort(out.trace.rows.begin(), out.trace.rows.end(), [](const TraceRow& a, const TraceRow& b) {
    return std::tie(a.iteration, a.start_ns, a.device, a.key) <
           std::tie(b.iteration, b.start_ns, b.device, b.key);
  });
  return out;
}

}  // namespace
#endif

bool UnderMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

bool MpiTransportBuilt() {
#if TERASIM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::optional<ExecResult> ExecuteMpi(const Schedule& schedule, const ModelCard& card,
                                     const ExecOptions& options, const std::string& backend) {
#if TERASIM_HAVE_MPI
  BackendFactory factory = MakeBackendFactory(backend, card, options.seed);
  MpiSession session;
  if (session.Size() != schedule.devices) {
    ThrowInput(
        "exec: --transport mpi: {} MPI processes but schedule {} has {} devices (run mpirun -np "
        "{})",
        session.Size(), schedule.source.empty() ? "schedule" : schedule.source, schedule.devices,
        schedule.devices);
  }
  std::vector<std::vector<char>> ranks;
  ExecResult own;
  // Only here a library catches: a throw would leave the other ranks waiting on this one, so
  // the failing rank reports and ends the job (MPI_Abort does not return: no destructor that
  // might wait on a peer runs).
  std::unique_ptr<MpiTransport> transport;
  try {
    transport = std::make_unique<MpiTransport>(
        schedule, std::chrono::milliseconds(static_cast<int64_t>(options.stall_timeout_s * 1000)));
    transport->Barrier();  // the ranks' clocks start together
    own = RunSchedule(schedule, card, options, factory, *transport, {session.Rank()});
    transport->Flush();
    ranks = transport->GatherToRoot(EncodeRankResult(own));
  } catch (const std::exception& e) {
    std::cerr << "terasim: rank " << session.Rank() << ": " << e.what() << std::endl;
    session.Abort(1);
  }
  transport.reset();  // frees the communicators before MPI_Finalize
  if (session.Rank() != 0) return std::nullopt;
  return CombineRankResults(ranks, std::move(own));
#else
  (void)schedule;
  (void)card;
  (void)options;
  (void)backend;
  ThrowInput("exec: --transport mpi: this terasim was built without MPI");
#endif
}

}  // namespace terasim

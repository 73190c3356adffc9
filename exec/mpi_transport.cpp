#include "exec/mpi_transport.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "models/errors.h"

namespace terasim {

namespace {

int WorldRank() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return -1;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// FNV-1a: a fixed hash, the same in every process (std::hash need not be).
uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Message layout: uint32 name length, the name, then the floats.
std::vector<char> Encode(const std::string& name, std::span<const float> data) {
  const uint32_t length = static_cast<uint32_t>(name.size());
  std::vector<char> bytes(sizeof(length) + name.size() + data.size_bytes());
  std::memcpy(bytes.data(), &length, sizeof(length));
  std::memcpy(bytes.data() + sizeof(length), name.data(), name.size());
  if (!data.empty()) {
    std::memcpy(bytes.data() + sizeof(length) + name.size(), data.data(), data.size_bytes());
  }
  return bytes;
}

std::pair<std::string, std::vector<float>> Decode(const std::vector<char>& bytes) {
  uint32_t length = 0;
  TERASIM_CHECK(bytes.size() >= sizeof(length), "MPI message of {} bytes", bytes.size());
  std::memcpy(&length, bytes.data(), sizeof(length));
  const size_t header = sizeof(length) + length;
  TERASIM_CHECK(bytes.size() >= header && (bytes.size() - header) % sizeof(float) == 0,
                "MPI message of {} bytes with a {}-byte name", bytes.size(), length);
  std::string name(bytes.data() + sizeof(length), length);
  std::vector<float> data((bytes.size() - header) / sizeof(float));
  if (!data.empty()) std::memcpy(data.data(), bytes.data() + header, bytes.size() - header);
  return {std::move(name), std::move(data)};
}

// Polling waits: spin briefly, then sleep up to 200 us (the executor's stream threads share
// few cores with the other ranks).
class Backoff {
 public:
  void Wait() {
    if (spins_ < 16) {
      ++spins_;
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
    sleep_us_ = std::min(sleep_us_ * 2, 200);
  }
  void Reset() {
    spins_ = 0;
    sleep_us_ = 5;
  }

 private:
  int spins_ = 0;
  int sleep_us_ = 5;
};

}  // namespace

void CheckMpi(int code, const char* call, const char* file, int line) {
  if (code == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, message, &length) != MPI_SUCCESS) {
    std::snprintf(message, sizeof(message), "MPI error code %d", code);
  }
  throw InternalError(
      fmt::format("{}:{}: {} failed on rank {}: {}", file, line, call, WorldRank(), message));
}

MpiSession::MpiSession() {
  int provided = MPI_THREAD_SINGLE;
  TERASIM_MPI(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
  TERASIM_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  TERASIM_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  TERASIM_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    ThrowInput(
        "exec: --transport mpi: the MPI library provides thread level {} but the executor needs "
        "MPI_THREAD_MULTIPLE ({}); use an MPI built with thread support",
        provided, MPI_THREAD_MULTIPLE);
  }
}

MpiSession::~MpiSession() { MPI_Finalize(); }

void MpiSession::Abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; should it, end this process at least
}

MpiTransport::MpiTransport(const Schedule& schedule, std::chrono::milliseconds stall_timeout)
    : stall_timeout_(stall_timeout) {
  TERASIM_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  TERASIM_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  TERASIM_CHECK(size_ == schedule.devices, "MPI world of {} ranks for {} devices", size_,
                schedule.devices);
  void* value = nullptr;
  int found = 0;
  TERASIM_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found));
  if (found && value != nullptr) tag_upper_bound_ = *static_cast<int*>(value);

  MPI_Comm p2p = MPI_COMM_NULL;
  TERASIM_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &p2p));
  comms_.push_back(p2p);
  TERASIM_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &results_comm_));
  MPI_Group world = MPI_GROUP_NULL;
  TERASIM_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
  // Every rank walks the groups in the same order, so the lowest group not yet created always
  // has all its members waiting in it.
  for (size_t g = 0; g < schedule.groups.size(); ++g) {
    const Group& group = schedule.groups[g];
    if (std::find(group.ranks.begin(), group.ranks.end(), rank_) == group.ranks.end()) continue;
    MPI_Group members = MPI_GROUP_NULL;
    TERASIM_MPI(
        MPI_Group_incl(world, static_cast<int>(group.ranks.size()), group.ranks.data(), &members));
    MPI_Comm comm = MPI_COMM_NULL;
    TERASIM_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, members, static_cast<int>(g), &comm));
    TERASIM_MPI(MPI_Group_free(&members));
    TERASIM_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    group_comm_[group.name] = static_cast<int>(comms_.size());
    comms_.push_back(comm);
  }
  TERASIM_MPI(MPI_Group_free(&world));
}

MpiTransport::~MpiTransport() {
  try {
    if (!stop_.Stopped()) Flush();
  } catch (const std::exception&) {
    // A failing flush in a destructor has nowhere to go; the run has already reported.
  }
  for (MPI_Comm& comm : comms_) MPI_Comm_free(&comm);
  MPI_Comm_free(&results_comm_);
}

int MpiTransport::Tag(const std::string& name) const {
  return static_cast<int>(Fnv1a(name) % (static_cast<uint64_t>(tag_upper_bound_) + 1));
}

int MpiTransport::CommOf(const CollectiveCall& call) const {
  auto it = group_comm_.find(call.group);
  TERASIM_CHECK(it != group_comm_.end(), "rank {} has no communicator for group {}", rank_,
                call.group);
  return it->second;
}

void MpiTransport::Post(int comm, int dest, const std::string& name, std::span<const float> data) {
  std::vector<char> bytes = Encode(name, data);
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    ThrowInput("exec: MPI message {} of {} bytes exceeds the {} bytes of one MPI message", name,
               bytes.size(), INT_MAX);
  }
  std::lock_guard<std::mutex> lock(send_mutex_);
  Pending& p = pending_.emplace_back();
  p.buffer = std::move(bytes);
  TERASIM_MPI(MPI_Isend(p.buffer.data(), static_cast<int>(p.buffer.size()), MPI_BYTE, dest,
                        Tag(name), comms_[comm], &p.request));
  // Drop the buffers of sends that have completed.
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    TERASIM_MPI(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE));
    it = done ? pending_.erase(it) : std::next(it);
  }
}

std::vector<float> MpiTransport::Take(int comm, int source, const std::string& name,
                                      const std::string& what) {
  const auto key = std::make_tuple(comm, source, name);
  const int tag = Tag(name);
  const auto deadline = std::chrono::steady_clock::now() + stall_timeout_;
  Backoff backoff;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(receive_mutex_);
      auto it = mailbox_.find(key);
      if (it != mailbox_.end()) {
        std::vector<float> data = std::move(it->second.front());
        it->second.pop_front();
        if (it->second.empty()) mailbox_.erase(it);
        return data;
      }
      int flag = 0;
      MPI_Message message = MPI_MESSAGE_NULL;
      MPI_Status status;
      TERASIM_MPI(MPI_Improbe(source, tag, comms_[comm], &flag, &message, &status));
      if (flag) {
        int count = 0;
        TERASIM_MPI(MPI_Get_count(&status, MPI_BYTE, &count));
        std::vector<char> bytes(count);
        TERASIM_MPI(MPI_Mrecv(bytes.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE));
        auto [got, data] = Decode(bytes);
        if (got == name) return std::move(data);
        // Another tensor with the same tag: keep it for the thread that asks for it.
        mailbox_[std::make_tuple(comm, source, std::move(got))].push_back(std::move(data));
        backoff.Reset();
        continue;
      }
    }
    if (stop_.Stopped()) throw StoppedError();
    if (std::chrono::steady_clock::now() >= deadline) {
      throw InternalError(fmt::format("executor stalled for {} s waiting for {} (MPI rank {})",
                                      stall_timeout_.count() / 1000.0, what, rank_));
    }
    backoff.Wait();
  }
}

void MpiTransport::Send(int from, int to, const std::string& tensor, std::span<const float> data) {
  TERASIM_CHECK(from == rank_, "rank {} asked to send {} as device {}", rank_, tensor, from);
  Post(0, to, tensor, data);
}

std::vector<float> MpiTransport::Recv(int to, int from, const std::string& tensor) {
  TERASIM_CHECK(to == rank_, "rank {} asked to receive {} as device {}", rank_, tensor, to);
  return Take(0, from, tensor,
              fmt::format("device {} to receive {} from device {}", to, tensor, from));
}

std::vector<std::vector<float>> MpiTransport::GatherGroup(const CollectiveCall& call, int comm,
                                                          std::span<const float> data) {
  const int n = static_cast<int>(call.ranks.size());
  const int position = GroupPosition(call, call.device);
  const std::string name = "up:" + call.tensor;
  if (position != 0) {
    Post(comm, 0, name, data);
    return {};
  }
  std::vector<std::vector<float>> all(n);
  all[0].assign(data.begin(), data.end());
  for (int m = 1; m < n; ++m) {
    all[m] = Take(comm, m, name,
                  fmt::format("device {}: collective {} on group {} (from device {})", call.device,
                              call.tensor, call.group, call.ranks[m]));
  }
  return all;
}

std::vector<float> MpiTransport::ScatterResult(const CollectiveCall& call, int comm,
                                               std::span<const float> data) {
  const int n = static_cast<int>(call.ranks.size());
  const std::string name = "down:" + call.tensor;
  if (GroupPosition(call, call.device) == 0) {
    for (int m = 1; m < n; ++m) Post(comm, m, name, data);
    return std::vector<float>(data.begin(), data.end());
  }
  return Take(comm, 0, name,
              fmt::format("device {}: collective {} on group {} (result from device {})",
                          call.device, call.tensor, call.group, call.ranks[0]));
}

void MpiTransport::AllReduce(const CollectiveCall& call, std::span<float> data) {
  const int comm = CommOf(call);
  std::vector<std::vector<float>> all = GatherGroup(call, comm, data);
  std::vector<float> sum;
  if (!all.empty()) {
    for (const auto& c : all) {
      TERASIM_CHECK(c.size() == data.size(), "all-reduce {} sizes differ: {} vs {}", call.tensor,
                    c.size(), data.size());
    }
    // Fixed rank order, as InProcessTransport: the same bits as the in-process run.
    sum.resize(data.size());
    for (size_t i = 0; i < data.size(); ++i) {
      float s = all[0][i];
      for (size_t m = 1; m < all.size(); ++m) s += all[m][i];
      sum[i] = s;
    }
  }
  std::vector<float> result = ScatterResult(call, comm, sum);
  TERASIM_CHECK(result.size() == data.size(), "all-reduce {} result of {} values for {}",
                call.tensor, result.size(), data.size());
  std::copy(result.begin(), result.end(), data.begin());
}

void MpiTransport::Broadcast(const CollectiveCall& call, int root, std::vector<float>& data) {
  const int comm = CommOf(call);
  const int n = static_cast<int>(call.ranks.size());
  const int root_position = GroupPosition(call, root);
  const std::string name = "bcast:" + call.tensor;
  if (call.device == root) {
    for (int m = 0; m < n; ++m) {
      if (m != root_position) Post(comm, m, name, data);
    }
    return;
  }
  data = Take(comm, root_position, name,
              fmt::format("device {}: broadcast {} on group {} from device {}", call.device,
                          call.tensor, call.group, root));
}

std::vector<float> MpiTransport::AllGather(const CollectiveCall& call,
                                           std::span<const float> data) {
  const int comm = CommOf(call);
  std::vector<float> joined;
  for (const auto& c : GatherGroup(call, comm, data))
    joined.insert(joined.end(), c.begin(), c.end());
  return ScatterResult(call, comm, joined);
}

void MpiTransport::Abort() { stop_.Stop(); }

void MpiTransport::Flush() {
  std::lock_guard<std::mutex> lock(send_mutex_);
  for (Pending& p : pending_) TERASIM_MPI(MPI_Wait(&p.request, MPI_STATUS_IGNORE));
  pending_.clear();
}

void MpiTransport::Barrier() { TERASIM_MPI(MPI_Barrier(results_comm_)); }

std::vector<std::vector<char>> MpiTransport::GatherToRoot(std::span<const char> bytes) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    ThrowInput("exec: rank {}'s results of {} bytes exceed one MPI message", rank_, bytes.size());
  }
  int count = static_cast<int>(bytes.size());
  std::vector<int> counts(rank_ == 0 ? size_ : 0);
  TERASIM_MPI(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, results_comm_));
  std::vector<int> displacements(counts.size());
  int64_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    displacements[r] = static_cast<int>(total);
    total += counts[r];
  }
  if (total > INT_MAX)
    ThrowInput("exec: the ranks' results of {} bytes exceed one MPI message", total);
  std::vector<char> all(static_cast<size_t>(total));
  TERASIM_MPI(MPI_Gatherv(bytes.data(), count, MPI_BYTE, all.data(), counts.data(),
                          displacements.data(), MPI_BYTE, 0, results_comm_));
  std::vector<std::vector<char>> out;
  for (size_t r = 0; r < counts.size(); ++r) {
    out.emplace_back(all.begin() + displacements[r], all.begin() + displacements[r] + counts[r]);
  }
  return out;
}

}  // namespace terasim

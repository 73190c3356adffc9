#include "exec/mpi_transport.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

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
    : TransportBase(Delivery::kPulled, stall_timeout, fmt::format("MPI rank {}", WorldRank())) {
  TERASIM_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  TERASIM_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  TERASIM_CHECK(size_ == schedule.devices, "MPI world of {} ranks for {} devices", size_,
                schedule.devices);
  TERASIM_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &messages_comm_));
  TERASIM_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &results_comm_));
}

MpiTransport::~MpiTransport() {
  try {
    if (!Stopped()) Flush();
  } catch (const std::exception&) {
    // A failing flush in a destructor has nowhere to go; the run has already reported.
  }
  MPI_Comm_free(&messages_comm_);
  MPI_Comm_free(&results_comm_);
}

void MpiTransport::Post(int from, int to, const std::string& name, std::span<const float> data) {
  TERASIM_CHECK(from == rank_, "rank {} asked to send {} as device {}", rank_, name, from);
  std::vector<char> bytes = Encode(name, data);
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    ThrowInput("exec: MPI message {} of {} bytes exceeds the {} bytes of one MPI message", name,
               bytes.size(), INT_MAX);
  }
  std::lock_guard<std::mutex> lock(send_mutex_);
  Pending& p = pending_.emplace_back();
  p.buffer = std::move(bytes);
  TERASIM_MPI(MPI_Isend(p.buffer.data(), static_cast<int>(p.buffer.size()), MPI_BYTE, to, 0,
                        messages_comm_, &p.request));
  // Drop the buffers of sends that have completed.
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    TERASIM_MPI(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE));
    it = done ? pending_.erase(it) : std::next(it);
  }
}

bool MpiTransport::Pull(int to, int, const std::string& name) {
  TERASIM_CHECK(to == rank_, "rank {} asked to receive {} as device {}", rank_, name, to);
  std::lock_guard<std::mutex> lock(receive_mutex_);
  int flag = 0;
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  TERASIM_MPI(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, messages_comm_, &flag, &message, &status));
  if (!flag) return false;
  int count = 0;
  TERASIM_MPI(MPI_Get_count(&status, MPI_BYTE, &count));
  std::vector<char> bytes(count);
  TERASIM_MPI(MPI_Mrecv(bytes.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE));
  auto [got, data] = Decode(bytes);
  Deliver(status.MPI_SOURCE, rank_, got, std::move(data));
  return true;
}

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

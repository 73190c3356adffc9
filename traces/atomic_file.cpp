#include "traces/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "models/errors.h"

namespace terasim {
namespace {

// The temporaries of live AtomicFiles, for the signal handler. A slot is free (0), being
// filled (1) or holds a path to unlink (2); the handler reads only slots in state 2.
constexpr int kSlots = 64;
constexpr size_t kMaxTempPath = 4096;
struct Slot {
  std::atomic<int> state{0};
  char path[kMaxTempPath] = {};
};
std::array<Slot, kSlots> pending_slots;

int Register(const std::string& temp) {
  if (temp.size() >= kMaxTempPath) return -1;  // still removed by the destructor
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (pending_slots[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(pending_slots[i].path, temp.c_str(), temp.size() + 1);
      pending_slots[i].state.store(2);
      return i;
    }
  }
  return -1;
}

void Unregister(int slot) {
  if (slot >= 0) pending_slots[slot].state.store(0);
}

void OnTerminatingSignal(int signal_number) {
  RemovePendingTemporaries();
  // End as the signal would have ended us, so the parent sees the usual status (128 + signal).
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

// Checked at every AtomicFile (two system calls), not once: a handler someone else installed
// and later removed leaves the default action, which we then take over.
void InstallSignalHandlers() {
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old = {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    // Leave a handler that someone else installed (or an ignored signal) alone.
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction action = {};
    action.sa_handler = OnTerminatingSignal;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, nullptr);
  }
}

// "a directory", "a symlink", ... for a file type that is not a regular file.
const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symlink";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The target's permission bits when it is a regular file, -1 when absent; throws otherwise.
int ExistingMode(const std::string& path) {
  struct stat st = {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return -1;
    ThrowInput("{}: cannot write: {}", path, std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    ThrowInput("{}: is {}: terasim replaces only regular files", path, KindOf(st.st_mode));
  }
  return static_cast<int>(st.st_mode & 07777);
}

}  // namespace

void RemovePendingTemporaries() {
  for (Slot& slot : pending_slots) {
    if (slot.state.load() == 2) unlink(slot.path);
  }
}

void RequireReplaceableOutput(const std::string& path) { ExistingMode(path); }

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  const std::filesystem::path target(path_);
  if (path_.empty() || !target.has_filename()) {
    ThrowInput("{}: is a directory: terasim replaces only regular files", path_);
  }
  const int mode = ExistingMode(path_);
  const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : ".";
  InstallSignalHandlers();
  // A name no other writer uses: our pid and a counter, created with O_EXCL (so an existing
  // file of that name, e.g. PATH.tmp, is never opened or clobbered).
  static std::atomic<uint64_t> counter{0};
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temp_path_ = (folder / fmt::format(".{}.{}-{}.tmp", target.filename().string(),
                                       static_cast<long>(getpid()), counter.fetch_add(1)))
                     .string();
    fd = open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) {
      ThrowInput("{}: cannot write: {}", path_, std::strerror(errno));
    }
  }
  if (fd < 0) ThrowInput("{}: cannot write: no free temporary name", path_);
  slot_ = Register(temp_path_);
  // Replacing a file keeps its permissions; a new file gets 0666 less the umask.
  if (mode >= 0) fchmod(fd, static_cast<mode_t>(mode));
  close(fd);
  out_.open(temp_path_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    unlink(temp_path_.c_str());
    Unregister(slot_);
    ThrowInput("{}: cannot write", path_);
  }
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  out_.close();
  unlink(temp_path_.c_str());
  Unregister(slot_);
}

void AtomicFile::Commit() {
  TERASIM_CHECK(!committed_, "{}: committed twice", path_);
  out_.flush();
  out_.close();
  if (!out_) ThrowInput("{}: cannot write (disk full?)", path_);
  const int fd = open(temp_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fsync(fd) != 0) {
    const int error = errno;
    if (fd >= 0) close(fd);
    ThrowInput("{}: cannot write: {}", path_, std::strerror(error));
  }
  close(fd);
  ExistingMode(path_);  // something may have appeared at the target meanwhile
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    ThrowInput("{}: cannot write: {}", path_, std::strerror(errno));
  }
  committed_ = true;
  Unregister(slot_);
  // Make the rename itself durable; a folder that cannot be opened only loses that guarantee.
  const std::filesystem::path folder = std::filesystem::path(path_).has_parent_path()
                                           ? std::filesystem::path(path_).parent_path()
                                           : std::filesystem::path(".");
  const int dir_fd = open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    fsync(dir_fd);
    close(dir_fd);
  }
}

void WriteFileAtomically(const std::string& path, std::string_view contents) {
  AtomicFile file(path);
  file.stream().write(contents.data(), static_cast<std::streamsize>(contents.size()));
  file.Commit();
}

}  // namespace terasim

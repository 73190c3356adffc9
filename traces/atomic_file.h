// AtomicFile: every output file terasim writes (traces, CSVs, SVGs, calibration tables, .pir
// schedules) goes through here, so that a reader never sees half a file: the bytes go to a
// fresh temporary beside the target (".NAME.XXXXXX.tmp" in the same folder, created with
// mkstemp, so an existing PATH.tmp is never touched), are fsync'ed, and the temporary is renamed
// over the target. The target is whole (old or new contents) or absent at every instant,
// including a kill -9 at any point.
//
// Only a regular file (or nothing) is ever replaced: a directory, a symlink, a device node, a
// FIFO or a socket at the target is refused with InputError "PATH: is a symlink: terasim
// replaces only regular files", before anything is written.
//
// SIGINT and SIGTERM: while a temporary exists, a handler (installed on first use, only where
// the signal still has its default action) removes the pending temporaries and re-raises the
// signal with its default action, so the process ends as killed by it (exit status 128 + signal
// in a shell: 130, 143) leaving no temporaries and no partial outputs. A program with its own
// handler may call RemovePendingTemporaries() from it (async-signal-safe).
//
// Thread safety: one AtomicFile per thread; the pending-temporaries registry is lock-free.
#pragma once

#include <fstream>
#include <string>
#include <string_view>

namespace terasim {

class AtomicFile {
 public:
  // Creates the temporary beside `path`. Throws InputError "PATH: is a directory: ..." (or a
  // symlink, device, ...) when the target exists and is not a regular file, and "PATH: cannot
  // write: REASON" when the folder is missing or not writable.
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Removes the temporary unless Commit() ran: a failed or abandoned write leaves the target
  // as it was.
  ~AtomicFile();

  // The stream writing the temporary.
  std::ostream& stream() { return out_; }
  // Flushes, fsyncs and renames the temporary over the target (checking again that the target
  // is a regular file or absent). Throws InputError "PATH: cannot write: REASON".
  void Commit();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_path_;
  std::ofstream out_;
  int slot_ = -1;  // index in the pending-temporaries registry, -1 when not registered
  bool committed_ = false;
};

// Writes `contents` to `path` through an AtomicFile. Throws as AtomicFile does.
void WriteFileAtomically(const std::string& path, std::string_view contents);

// Throws InputError "PATH: is a KIND: terasim replaces only regular files" when `path` exists
// and is not a regular file (symlinks are not followed). Lets a command refuse a bad output path
// before it starts long work.
void RequireReplaceableOutput(const std::string& path);

// Unlinks every temporary of a live AtomicFile. Async-signal-safe: for signal handlers.
void RemovePendingTemporaries();

}  // namespace terasim

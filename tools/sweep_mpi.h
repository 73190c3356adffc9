// SweepRanks: the processes of one `terasim sweep` and the messages between them. Under
// mpirun, in a build with MPI (TERASIM_HAVE_MPI), every rank simulates its share of the grid
// and sends each finished point to rank 0, the only process that opens the results store:
//   rank 0                                   ranks 1..N-1
//   Broadcast(which points are stored)  ->   Broadcast (receive it)
//   PollResult() ... until AllOthersDone()   SendResult(point) ... SendDone()
// Started without mpirun, or in a build without MPI, a SweepRanks is rank 0 of a job of one
// and holds no MPI state (Distributed() is false): the sweep writes its own store as before.
//
// A SweepResult travels as JSON text (EncodeSweepResult / DecodeSweepResult): the run record
// with its metrics and trace rows, or the point's error.
//
// Thread safety: MPI is initialised with MPI_THREAD_FUNNELED; only the thread that built the
// SweepRanks may call its members (the sweep's worker threads never do).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/sweep/sweep_workers.h"
#include "traces/result_store.h"
#include "traces/trace.h"

namespace terasim::cli {

// One simulated grid point (tools/sweep/sweep_workers.h), under its old name too.
using terasim::SweepResult;

// The result as JSON text. An empty record.host becomes this machine's host name, so that the
// run names the host that simulated it rather than the one that stores it. A non-finite
// metric or FLOP count travels as null and comes back as NaN (which the store then rejects,
// as it would have on the simulating rank). Never throws for a well-formed result.
std::string EncodeSweepResult(const SweepResult& result);
// The inverse of EncodeSweepResult. Throws InternalError naming what is malformed.
SweepResult DecodeSweepResult(std::string_view text);

class SweepRanks {
 public:
  // Whether a SweepRanks built now would join an MPI job (see the constructor).
  static bool WouldJoin();
  // Joins the MPI job when this process was started by mpirun (UnderMpirun()) and terasim
  // was built with MPI; otherwise a job of one process, without MPI. Throws InternalError
  // when an MPI call fails.
  SweepRanks();
  // Finalizes MPI when joined.
  ~SweepRanks();
  SweepRanks(const SweepRanks&) = delete;
  SweepRanks& operator=(const SweepRanks&) = delete;

  // Whether this process joined an MPI job (rank 0 then collects every rank's results).
  bool Distributed() const { return joined_; }
  int Rank() const { return rank_; }
  int Size() const { return size_; }

  // Collective: every rank gets rank 0's `bytes` (the other ranks' argument is ignored).
  // Without MPI returns `bytes`. Throws InternalError when MPI fails.
  std::string Broadcast(const std::string& bytes);
  // Ranks other than 0: sends one result to rank 0 (returns once MPI holds it).
  void SendResult(const SweepResult& result);
  // Ranks other than 0: tells rank 0 that this rank sends no more results.
  void SendDone();
  // Rank 0: a result another rank has sent, if one has arrived; does not wait. Counts the
  // ranks that said they are done. Throws InternalError for a malformed message.
  std::optional<SweepResult> PollResult();
  // Rank 0: whether every other rank has said it is done. Messages from one rank arrive in
  // order, so by then PollResult has returned all their results.
  bool AllOthersDone() const { return others_done_ == size_ - 1; }
  // Ends every process of the job (MPI_Abort) with `exit_code`; without MPI, std::exit.
  [[noreturn]] void AbortJob(int exit_code) const;

 private:
  bool joined_ = false;
  int rank_ = 0;
  int size_ = 1;
  int others_done_ = 0;
};

}  // namespace terasim::cli

// MpiTransport: the Transport (exec/transport.h) for one process per device under mpirun; the
// device of a process is its rank in MPI_COMM_WORLD. Built only where MPI is found
// (TERASIM_HAVE_MPI); include it only from code built under that condition.
//
// The moves of a TransportBase (exec/transport_base.h), which owns matching, buffering, stall
// detection and the collectives. Every message is bytes: its name (length-prefixed) then the
// float payload, sent with MPI_Isend of a private copy on a duplicate of MPI_COMM_WORLD (Post
// returns at once; Flush() waits for the sends). A waiting receiver pulls whatever has arrived
// with matched probes (MPI_Improbe / MPI_Mrecv, safe with many threads) into the base's
// mailboxes, one message at a time under a lock, so messages between two ranks keep their
// order. The collectives are the base's: named point-to-point messages gathered at the group's
// first rank, summed there in rank order (bit-identical to the in-process run) and sent back;
// named messages, rather than MPI collectives, let several stream threads of one process use
// the same group at once in any order.
//
// Every MPI call goes through TERASIM_MPI, which throws InternalError naming the call,
// file:line, the rank and MPI's error string. Thread-safe (MPI_THREAD_MULTIPLE).
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <mpi.h>

#include "exec/transport_base.h"
#include "schedule/schedule_ir.h"

namespace terasim {

// Throws InternalError "FILE:LINE: CALL failed on rank R: MPI's message" unless `code` is
// MPI_SUCCESS.
void CheckMpi(int code, const char* call, const char* file, int line);

#define TERASIM_MPI(call) ::terasim::CheckMpi((call), #call, __FILE__, __LINE__)

// MPI_Init_thread with MPI_THREAD_MULTIPLE for the lifetime of the object; MPI_Finalize in the
// destructor. One per process. Throws InputError when MPI provides a lower thread level.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int Rank() const { return rank_; }
  int Size() const { return size_; }
  // Ends every process of the job (MPI_Abort) with exit code `code`.
  [[noreturn]] void Abort(int code) const;

 private:
  int rank_ = 0;
  int size_ = 1;
};

class MpiTransport : public TransportBase {
 public:
  // Collective over MPI_COMM_WORLD: duplicates it for the messages and for Gather. Requires
  // an MpiSession and world size == schedule.devices. Waits longer than `stall_timeout` throw
  // InternalError naming what was awaited.
  MpiTransport(const Schedule& schedule, std::chrono::milliseconds stall_timeout);
  // Waits for pending sends (unless aborted) and frees the communicators.
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int Rank() const { return rank_; }
  int Size() const { return size_; }

  // Waits until every Send so far has left this process's buffers.
  void Flush();
  // Waits until every rank has called Barrier (MPI_Barrier on the results communicator).
  void Barrier();
  // Collective over all ranks, called from one thread of each: rank 0 gets every rank's
  // `bytes`, in rank order; the other ranks get an empty vector.
  std::vector<std::vector<char>> GatherToRoot(std::span<const char> bytes);

 protected:
  void Post(int from, int to, const std::string& name, std::span<const float> data) override;
  bool Pull(int to, int from, const std::string& name) override;

 private:
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<char> buffer;
  };

  int rank_ = 0;
  int size_ = 1;
  MPI_Comm messages_comm_ = MPI_COMM_NULL;  // Post and Pull
  MPI_Comm results_comm_ = MPI_COMM_NULL;   // Barrier and GatherToRoot
  std::mutex send_mutex_;
  std::list<Pending> pending_;  // list: buffers stay put while MPI reads them
  std::mutex receive_mutex_;    // held over probe, receive and delivery, keeping the order
};

}  // namespace terasim

// MpiTransport: the Transport (exec/transport.h) for one process per device under mpirun; the
// device of a process is its rank in MPI_COMM_WORLD. Built only where MPI is found
// (TERASIM_HAVE_MPI); include it only from code built under that condition.
//
// Messages. Every message is bytes: the tensor identity (length-prefixed) then the float
// payload. Its tag is a hash of the identity, so different tensors rarely share a tag; the
// identity in the message decides. A receiver takes messages off MPI with matched probes
// (MPI_Improbe / MPI_Mrecv, safe with many threads) and keeps any it did not ask for in a FIFO
// mailbox for the thread that will; polling lets a wait notice Abort() and the stall timeout.
// Sends are MPI_Isend of a private copy (they return at once, as in-process); Flush() waits
// for them.
//
// Collectives run on one communicator per schedule group (MPI_Comm_create_group over the
// group's ranks, created once in the constructor, in the schedule's group order, so the
// creation cannot deadlock). They are built from point-to-point messages named after the
// tensor: every member sends its data to the group's first rank, which combines the
// contributions in rank order exactly as InProcessTransport does (so the sums are
// bit-identical to the in-process run) and sends the result back. Named messages, rather than
// MPI collectives, let several stream threads of one process use the same group at once in
// any order.
//
// Every MPI call goes through TERASIM_MPI, which throws InternalError naming the call,
// file:line, the rank and MPI's error string. Thread-safe (MPI_THREAD_MULTIPLE).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <mpi.h>

#include "exec/stop_flag.h"
#include "exec/transport.h"
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

class MpiTransport : public Transport {
 public:
  // Collective over MPI_COMM_WORLD: duplicates it for point-to-point messages and for Gather,
  // and creates the communicator of every group of `schedule` holding this rank. Requires an
  // MpiSession and world size == schedule.devices. Waits longer than `stall_timeout` throw
  // InternalError naming what was awaited.
  MpiTransport(const Schedule& schedule, std::chrono::milliseconds stall_timeout);
  // Waits for pending sends (unless aborted) and frees the communicators.
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int Rank() const { return rank_; }
  int Size() const { return size_; }

  void Send(int from, int to, const std::string& tensor, std::span<const float> data) override;
  std::vector<float> Recv(int to, int from, const std::string& tensor) override;
  void AllReduce(const CollectiveCall& call, std::span<float> data) override;
  void Broadcast(const CollectiveCall& call, int root, std::vector<float>& data) override;
  std::vector<float> AllGather(const CollectiveCall& call, std::span<const float> data) override;
  void Abort() override;

  // Waits until every Send so far has left this process's buffers.
  void Flush();
  // Waits until every rank has called Barrier (MPI_Barrier on the results communicator).
  void Barrier();
  // Collective over all ranks, called from one thread of each: rank 0 gets every rank's
  // `bytes`, in rank order; the other ranks get an empty vector.
  std::vector<std::vector<char>> GatherToRoot(std::span<const char> bytes);

 private:
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<char> buffer;
  };
  // Index into comms_: 0 is point-to-point, then one per group of this rank.
  int CommOf(const CollectiveCall& call) const;
  void Post(int comm, int dest, const std::string& name, std::span<const float> data);
  std::vector<float> Take(int comm, int source, const std::string& name, const std::string& what);
  // Every member's data at position 0 (in rank order); empty on the other members.
  std::vector<std::vector<float>> GatherGroup(const CollectiveCall& call, int comm,
                                              std::span<const float> data);
  // Position 0 sends `data` to every other member; they receive it.
  std::vector<float> ScatterResult(const CollectiveCall& call, int comm,
                                   std::span<const float> data);
  int Tag(const std::string& name) const;

  int rank_ = 0;
  int size_ = 1;
  int tag_upper_bound_ = 32767;
  std::chrono::milliseconds stall_timeout_;
  StopFlag stop_;
  std::vector<MPI_Comm> comms_;            // [0] point to point, then the groups'
  std::map<std::string, int> group_comm_;  // group name -> index into comms_
  MPI_Comm results_comm_ = MPI_COMM_NULL;  // Barrier and GatherToRoot
  std::mutex send_mutex_;
  std::list<Pending> pending_;  // list: buffers stay put while MPI reads them
  std::mutex receive_mutex_;    // held over "look in the mailbox, else probe", keeping FIFO
  std::map<std::tuple<int, int, std::string>, std::deque<std::vector<float>>> mailbox_;
};

}  // namespace terasim

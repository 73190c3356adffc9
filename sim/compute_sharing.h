// ComputeSharing: each GPU's compute as a processor-sharing queue, on the event engine.
//
// A job is an amount of work in ns (at full speed); the jobs running on one GPU share it
// equally (k jobs: each at 1/k speed). GPUs never share anything with each other or with the
// network, so a GPU's queue is solved on its own: a job alone on an idle GPU gets its finish
// event at its start (start + work) and nothing else; when jobs join or leave a busy GPU, its
// jobs' remaining work is brought to now and those whose rate changed get a new finish event
// (older ones are dropped by a version).
//
// It reproduces a compute channel of the FlowNetwork (sim/flow_network.h: capacity 1e9 ns of
// work per s, one crossing per job) bit for bit: the same arithmetic (remaining -= rate x 1e-9 x
// elapsed ns, at every recomputation of the GPU; finish = now + ceil(remaining / rate x 1e9 -
// 1e-6)), recomputations deferred to one event per instant after the changes that call for them
// (as the network's), GPUs recomputed in the order they changed and each one's jobs in the order
// they joined, a job rescheduled only when its rate changed. Zero work finishes now. Finishes
// due at one time and scheduled back to back share one engine event (as the network's do).
//
// The listener (borrowed, as is the engine) hears OnFlowDone(tag) when a job is done. Not
// thread-safe.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "models/units.h"
#include "sim/engine.h"
#include "sim/flow_network.h"

namespace terasim {

class ComputeSharing : public EventHandler {
 public:
  ComputeSharing(Engine& engine, int num_gpus, FlowListener& listener);

  // Starts a job of `work_ns` ns of work on `gpu` now; `tag` goes to the listener when it is
  // done. Throws InternalError on an unknown GPU.
  void Start(int gpu, double work_ns, int64_t tag);

  // Jobs started since construction.
  int64_t JobsStarted() const { return jobs_started_; }

  void Handle(const Event& event) override;

 private:
  // kFinish carries one job's finish in the event itself (a = the job, b = its version): most
  // finish events have one job, and they keep no batch. The finishes that join the event go to
  // a batch, found through its job (Job::conv_batch) or by the event's seq (converted_).
  enum EventKind { kFinish = 0, kSolve = 1 };

  struct Job {
    double remaining = 0;  // ns of work still to do at last_update_ns
    double rate = 0;       // ns of work per s
    TimeNs last_update_ns = 0;
    uint64_t version = 0;  // bumped on every (re)scheduling; stale finish events are ignored
    int64_t tag = 0;
    int gpu = -1;  // -1: a zero-work job, on no GPU
    // The batch joined to the event of seq conv_seq, which carries this job (-1: none); a second
    // such event at once keeps its batch in converted_.
    int conv_batch = -1;
    uint64_t conv_seq = 0;
    int converted = 0;  // entries of converted_ whose event carries this job
  };
  struct Gpu {
    std::vector<int> jobs;  // running, in join order
    bool dirty = false;
  };
  // Jobs (with their version when added) whose finish is due at one time. Finishes scheduled
  // for one time with nothing else scheduled in between share one engine event: the engine
  // would have dispatched their events back to back anyway, in the same order.
  struct Batch {
    std::vector<std::pair<int, uint64_t>> jobs;
  };

  // Lists `gpu` for the recomputation due at this instant, scheduling it if none is.
  void MarkDirty(int gpu);
  // Recomputes every listed GPU (its jobs at 1e9 / k) in listed order.
  void Solve();
  void ScheduleFinish(int job);
  void Finish(int job);
  // Finishes the jobs of batch `b` still at the version they joined with, and frees it.
  void FinishBatch(int b);

  Engine& engine_;
  FlowListener& listener_;
  int handler_id_;
  std::vector<Gpu> gpus_;
  std::vector<Job> jobs_;
  std::vector<int> free_jobs_;
  std::vector<int> dirty_;
  std::vector<Batch> batches_;
  std::vector<int> free_batches_;
  std::vector<std::pair<uint64_t, int>>
      converted_;  // (seq of a finish event, the batch joined to it)
  // The finish event later finishes may join (none if open_job_ is -1): the one of open_job_,
  // alone (open_batch_ -1) or since joined by others (in open_batch_).
  int open_job_ = -1;
  int open_batch_ = -1;
  TimeNs open_time_ns_ = 0;
  uint64_t open_seq_ = 0;
  bool solve_pending_ = false;
  int64_t jobs_started_ = 0;
};

}  // namespace terasim

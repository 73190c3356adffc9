#include "sim/compute_sharing.h"

#include <algorithm>
#include <cmath>

#include "models/errors.h"
#include "sim/free_slots.h"

namespace terasim {

ComputeSharing::ComputeSharing(Engine& engine, int num_gpus, FlowListener& listener)
    : engine_(engine),
      listener_(listener),
      handler_id_(engine.AddHandler(this)),
      gpus_(static_cast<size_t>(std::max(0, num_gpus))) {}

void ComputeSharing::Start(int gpu, double work_ns, int64_t tag) {
  TERASIM_CHECK(gpu >= 0 && gpu < static_cast<int>(gpus_.size()), "unknown GPU {}", gpu);
  const int id = TakeSlot(free_jobs_, jobs_);
  ++jobs_started_;
  Job& job = jobs_[id];
  job.remaining = std::max(0.0, work_ns);
  job.rate = 0;
  job.last_update_ns = engine_.Now();
  job.tag = tag;
  job.gpu = -1;
  if (job.remaining <= 0) {
    ScheduleFinish(id);  // nothing to do: done now
    return;
  }
  job.gpu = gpu;
  Gpu& on = gpus_[gpu];
  on.jobs.push_back(id);
  if (on.jobs.size() == 1 && !solve_pending_) {
    // Alone, with no recomputation due now: the one it would get gives it the whole GPU.
    job.rate = 1e9;
    ScheduleFinish(id);
    return;
  }
  MarkDirty(gpu);
}

void ComputeSharing::MarkDirty(int gpu) {
  Gpu& on = gpus_[gpu];
  if (!on.dirty) {
    on.dirty = true;
    dirty_.push_back(gpu);
  }
  if (!solve_pending_) {
    solve_pending_ = true;
    engine_.Schedule(engine_.Now(), handler_id_, kSolve);
  }
}

void ComputeSharing::Solve() {
  const TimeNs now = engine_.Now();
  for (int g : dirty_) {
    Gpu& on = gpus_[g];
    on.dirty = false;
    if (on.jobs.empty()) continue;
    for (int id : on.jobs) {
      Job& job = jobs_[id];
      job.remaining = std::max(0.0, job.remaining - job.rate * 1e-9 * (now - job.last_update_ns));
      job.last_update_ns = now;
    }
    const double share = 1e9 / static_cast<int>(on.jobs.size());
    for (int id : on.jobs) {
      Job& job = jobs_[id];
      if (job.rate != share) {
        job.rate = share;
        ScheduleFinish(id);
      }
    }
  }
  dirty_.clear();
}

void ComputeSharing::ScheduleFinish(int id) {
  Job& job = jobs_[id];
  ++job.version;
  TimeNs duration_ns = 0;
  if (job.gpu >= 0 && job.remaining > 0) {
    // A tolerance well below one ns keeps exact quotients from rounding up a whole ns.
    const double ns = job.remaining / job.rate * 1e9;
    duration_ns = CeilToNs(ns - 1e-6);
  }
  const TimeNs time_ns = engine_.Now() + duration_ns;
  if (open_job_ >= 0 && open_time_ns_ == time_ns && open_seq_ + 1 == engine_.NextSeq()) {
    if (open_batch_ < 0) {
      // The first finish to join a one-job event: a batch for the joiners, behind that job.
      open_batch_ = TakeSlot(free_batches_, batches_);
      Job& first = jobs_[open_job_];
      if (first.conv_batch < 0) {
        first.conv_batch = open_batch_;
        first.conv_seq = open_seq_;
      } else {
        converted_.emplace_back(open_seq_, open_batch_);
        ++first.converted;
      }
    }
    batches_[open_batch_].jobs.emplace_back(id, job.version);
    return;
  }
  open_job_ = id;
  open_batch_ = -1;
  open_time_ns_ = time_ns;
  open_seq_ =
      engine_.Schedule(time_ns, handler_id_, kFinish, id, static_cast<int64_t>(job.version));
}

void ComputeSharing::Finish(int id) {
  Job& job = jobs_[id];
  ++job.version;
  if (job.gpu >= 0) {
    std::vector<int>& on = gpus_[job.gpu].jobs;
    if (on.size() == 1) {
      on.clear();  // it was alone there
    } else {
      on.erase(std::find(on.begin(), on.end(), id));  // the others keep their order
      MarkDirty(job.gpu);
    }
  }
  const int64_t tag = job.tag;
  free_jobs_.push_back(id);
  listener_.OnFlowDone(tag);
}

void ComputeSharing::Handle(const Event& event) {
  if (event.kind == kSolve) {
    solve_pending_ = false;
    Solve();
    return;
  }
  TERASIM_CHECK(event.kind == kFinish, "unknown compute event kind {}", event.kind);
  if (open_seq_ == event.seq) open_job_ = -1;  // seqs are unique: this is the open event
  const int id = static_cast<int>(event.a);
  const uint64_t version = static_cast<uint64_t>(event.b);
  Job& job = jobs_[id];
  int joined = -1;  // the batch joined to this event, if any
  if (job.conv_batch >= 0 && job.conv_seq == event.seq) {
    joined = job.conv_batch;
    job.conv_batch = -1;
  } else if (job.converted > 0) {
    for (size_t k = 0; k < converted_.size(); ++k) {
      if (converted_[k].first == event.seq) {
        joined = converted_[k].second;
        converted_[k] = converted_.back();
        converted_.pop_back();
        --job.converted;
        break;
      }
    }
  }
  if (job.version == version) Finish(id);  // else rescheduled since
  if (joined >= 0) FinishBatch(joined);
}

void ComputeSharing::FinishBatch(int b) {
  // By index: finishing a job may start jobs, which may add batches.
  for (size_t k = 0; k < batches_[b].jobs.size(); ++k) {
    const auto [id, version] = batches_[b].jobs[k];
    if (jobs_[id].version == version) Finish(id);  // else rescheduled since
  }
  batches_[b].jobs.clear();
  free_batches_.push_back(b);
}

}  // namespace terasim

// PointWriter: the one writer of a sweep. Each point goes into the store in its own
// transaction (BEGIN IMMEDIATE) that both checks its config_key and inserts it, so sweeps
// sharing a store (shards, concurrent runs, a resumed run) never store a point twice. A failed
// point is reported on stderr and counted.
//
// Thread safety: none; the sweep's owning thread writes.
#pragma once

#include <vector>

#include "tools/sweep/sweep_workers.h"
#include "traces/result_store.h"

namespace terasim {

class PointWriter {
 public:
  // `kill_after` > 0: raise SIGKILL after storing that many points (for resume tests).
  PointWriter(ResultStore& store, const SweepInputs& in, int kill_after, int ranks)
      : store_(store), in_(in), kill_after_(kill_after), stored_by_rank_(ranks, 0) {}

  // Throws what ResultStore::WriteRunUnlessStored throws.
  void Write(const SweepResult& r);
  int Stored() const;
  int Failed() const { return failed_; }
  // Points found in the store at write time.
  int AlreadyStored() const { return already_stored_; }
  const std::vector<int>& StoredByRank() const { return stored_by_rank_; }

 private:
  ResultStore& store_;
  const SweepInputs& in_;
  const int kill_after_;
  std::vector<int> stored_by_rank_;
  int failed_ = 0;
  int already_stored_ = 0;
};

}  // namespace terasim

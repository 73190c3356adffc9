// Placement: where each (data-parallel replica, pipeline stage, tensor-parallel rank) runs.
//
// Ranks are laid out operator-innermost (schedule/README.md):
//   rank = dp * (P * T) + stage * T + tp_rank
// so the T ranks of one stage are neighbours (Op = 8 puts one stage on one p3 instance). By
// default rank r runs on global GPU r; a custom placement maps ranks to any distinct GPUs.
// A plain value.
#pragma once

#include <string>
#include <vector>

namespace terasim {

struct ParallelDegrees {
  int dp = 1;  // data-parallel replicas (D)
  int pp = 1;  // pipeline stages (P)
  int tp = 1;  // tensor (operator) parallel ranks per stage (T)

  int Ranks() const { return dp * pp * tp; }
};

struct RankCoord {
  int dp = 0;
  int stage = 0;
  int tp = 0;

  bool operator==(const RankCoord&) const = default;
};

// dp * (P * T) + stage * T + tp. Precondition: the coordinate is inside the degrees.
int RankOf(const ParallelDegrees& degrees, const RankCoord& coord);
// The inverse of RankOf. Precondition: 0 <= rank < degrees.Ranks().
RankCoord CoordOf(const ParallelDegrees& degrees, int rank);

class Placement {
 public:
  // Rank r on GPU r. Throws InputError "--dp/--pp/--tp: ..." when a degree is < 1 or the ranks
  // (D x P x T) exceed `num_gpus`.
  Placement(const ParallelDegrees& degrees, int num_gpus);
  // Rank r on gpu_of_rank[r]. Throws InputError when the list does not have one entry per rank,
  // names a GPU outside [0, num_gpus) or names a GPU twice.
  Placement(const ParallelDegrees& degrees, std::vector<int> gpu_of_rank, int num_gpus);

  const ParallelDegrees& Degrees() const { return degrees_; }
  int NumGpus() const { return static_cast<int>(rank_of_gpu_.size()); }

  // Precondition: 0 <= rank < Degrees().Ranks().
  int GpuOfRank(int rank) const { return gpu_of_rank_[rank]; }
  int GpuOf(const RankCoord& coord) const { return GpuOfRank(RankOf(degrees_, coord)); }
  // The rank on `gpu`, or -1 when the GPU runs none (more GPUs than ranks).
  int RankOfGpu(int gpu) const { return rank_of_gpu_[gpu]; }
  // The coordinate of the rank on `gpu`. Throws InputError when the GPU runs no rank.
  RankCoord CoordOfGpu(int gpu) const;

  // GPUs of one stage's tensor-parallel group (tp order) and of one stage shard's data-parallel
  // group (dp order), as in schedule/README.md's groups tp.d{dp}.s{stage} and dp.s{stage}.r{tp}.
  std::vector<int> TpGroup(int dp, int stage) const;
  std::vector<int> DpGroup(int stage, int tp) const;

 private:
  ParallelDegrees degrees_;
  std::vector<int> gpu_of_rank_;
  std::vector<int> rank_of_gpu_;
};

}  // namespace terasim

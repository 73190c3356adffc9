#include "topologies/placement.h"

#include "models/errors.h"

namespace terasim {
namespace {

void CheckDegrees(const ParallelDegrees& d, int num_gpus) {
  if (d.dp < 1) ThrowInput("--dp: must be >= 1 (got {})", d.dp);
  if (d.pp < 1) ThrowInput("--pp: must be >= 1 (got {})", d.pp);
  if (d.tp < 1) ThrowInput("--tp: must be >= 1 (got {})", d.tp);
  if (static_cast<int64_t>(d.dp) * d.pp * d.tp > num_gpus) {
    ThrowInput("--dp {} x --pp {} x --tp {} = {} ranks, but the cluster has {} GPUs", d.dp, d.pp,
               d.tp, static_cast<int64_t>(d.dp) * d.pp * d.tp, num_gpus);
  }
}

}  // namespace

int RankOf(const ParallelDegrees& d, const RankCoord& c) {
  TERASIM_CHECK(
      c.dp >= 0 && c.dp < d.dp && c.stage >= 0 && c.stage < d.pp && c.tp >= 0 && c.tp < d.tp,
      "coordinate ({}, {}, {}) outside degrees {} x {} x {}", c.dp, c.stage, c.tp, d.dp, d.pp,
      d.tp);
  return c.dp * (d.pp * d.tp) + c.stage * d.tp + c.tp;
}

RankCoord CoordOf(const ParallelDegrees& d, int rank) {
  TERASIM_CHECK(rank >= 0 && rank < d.Ranks(), "rank {} of {}", rank, d.Ranks());
  return {rank / (d.pp * d.tp), (rank / d.tp) % d.pp, rank % d.tp};
}

Placement::Placement(const ParallelDegrees& degrees, int num_gpus) : degrees_(degrees) {
  CheckDegrees(degrees, num_gpus);
  rank_of_gpu_.assign(num_gpus, -1);
  for (int r = 0; r < degrees.Ranks(); ++r) {
    gpu_of_rank_.push_back(r);
    rank_of_gpu_[r] = r;
  }
}

Placement::Placement(const ParallelDegrees& degrees, std::vector<int> gpu_of_rank, int num_gpus)
    : degrees_(degrees), gpu_of_rank_(std::move(gpu_of_rank)) {
  CheckDegrees(degrees, num_gpus);
  if (static_cast<int>(gpu_of_rank_.size()) != degrees.Ranks()) {
    ThrowInput("placement: {} GPUs listed for {} ranks", gpu_of_rank_.size(), degrees.Ranks());
  }
  rank_of_gpu_.assign(num_gpus, -1);
  for (int r = 0; r < degrees.Ranks(); ++r) {
    const int gpu = gpu_of_rank_[r];
    if (gpu < 0 || gpu >= num_gpus) {
      ThrowInput("placement: rank {}: GPU {} is not in [0, {})", r, gpu, num_gpus);
    }
    if (rank_of_gpu_[gpu] >= 0) {
      ThrowInput("placement: rank {}: GPU {} already runs rank {}", r, gpu, rank_of_gpu_[gpu]);
    }
    rank_of_gpu_[gpu] = r;
  }
}

RankCoord Placement::CoordOfGpu(int gpu) const {
  if (gpu < 0 || gpu >= NumGpus() || rank_of_gpu_[gpu] < 0) {
    ThrowInput("placement: GPU {} runs no rank", gpu);
  }
  return CoordOf(degrees_, rank_of_gpu_[gpu]);
}

std::vector<int> Placement::TpGroup(int dp, int stage) const {
  std::vector<int> gpus;
  for (int t = 0; t < degrees_.tp; ++t) gpus.push_back(GpuOf({dp, stage, t}));
  return gpus;
}

std::vector<int> Placement::DpGroup(int stage, int tp) const {
  std::vector<int> gpus;
  for (int d = 0; d < degrees_.dp; ++d) gpus.push_back(GpuOf({d, stage, tp}));
  return gpus;
}

}  // namespace terasim

#include <catch2/catch.hpp>

#include "models/errors.h"
#include "topologies/topology.h"

using namespace terasim;

TEST_CASE("ranks are operator-innermost and CoordOf inverts RankOf", "[topologies]") {
  ParallelDegrees d{2, 12, 8};  // Table 1 setting 2: Data x Pipe x Op = 2 x 12 x 8
  CHECK(d.Ranks() == 192);
  // rank = dp * (P * T) + stage * T + tp = 1 * 96 + 5 * 8 + 3
  CHECK(RankOf(d, {1, 5, 3}) == 139);
  for (int r = 0; r < d.Ranks(); ++r) CHECK(RankOf(d, CoordOf(d, r)) == r);
  CHECK(CoordOf(d, 139) == RankCoord{1, 5, 3});
}

TEST_CASE("the default placement puts rank r on GPU r, one stage per p3 node at Op = 8",
          "[topologies]") {
  Cluster cluster = BuildCluster("p3.16xlarge:48");
  Placement p({1, 48, 8}, cluster.NumGpus());  // setting 8 / 10: 1 x 48 x 8
  for (int r = 0; r < 384; ++r) CHECK(p.GpuOfRank(r) == r);
  // stage s's tensor-parallel group is node s
  for (int g : p.TpGroup(0, 7)) CHECK(cluster.NodeOf(g) == 7);
  CHECK(p.CoordOfGpu(8 * 7 + 2) == RankCoord{0, 7, 2});
  // data-parallel group of stage 3, tp rank 1 with D = 2 x P = 24 x T = 8: ranks 25, 217
  Placement q({2, 24, 8}, cluster.NumGpus());
  CHECK(q.DpGroup(3, 1) == std::vector<int>{25, 217});
}

TEST_CASE("placements reject too many ranks and repeated GPUs", "[topologies]") {
  CHECK_THROWS_WITH(Placement({1, 48, 8}, 192),
                    "--dp 1 x --pp 48 x --tp 8 = 384 ranks, but the cluster has 192 GPUs");
  CHECK_THROWS_WITH(Placement({1, 0, 8}, 192), "--pp: must be >= 1 (got 0)");
  CHECK_THROWS_WITH(Placement({1, 2, 1}, {3, 3}, 8),
                    "placement: rank 1: GPU 3 already runs rank 0");
  CHECK_THROWS_WITH(Placement({1, 2, 1}, {3, 9}, 8), "placement: rank 1: GPU 9 is not in [0, 8)");
  // fewer ranks than GPUs: the rest run nothing
  Placement custom({1, 2, 1}, {6, 2}, 8);
  CHECK(custom.GpuOf({0, 1, 0}) == 2);
  CHECK(custom.RankOfGpu(6) == 0);
  CHECK(custom.RankOfGpu(0) == -1);
  CHECK_THROWS_AS(custom.CoordOfGpu(0), InputError);
}

// Shared inputs of the symmetry-fold tests (symmetry_fold_test.cpp, declared_fold_test.cpp):
// small generator options and a two-node topology whose replicas and tp pairs are symmetric.
#pragma once

#include "schedule/generator.h"
#include "tests/sim/fake_topology.h"
#include "tests/sim/test_model.h"

namespace terasim::testing {

// TestModel8 with 4 micro-batches; 2 model chunks for the chunked strategies, 2 token slices
// for TeraPipe.
inline GenerateOptions FoldOptions(Strategy strategy, int dp, int pp, int tp) {
  GenerateOptions o;
  o.model = TestModel8();
  o.strategy = strategy;
  o.dp = dp;
  o.pp = pp;
  o.tp = tp;
  o.microbatches = 4;
  if (strategy == Strategy::kInterleaved || strategy == Strategy::kLoopedBfs ||
      strategy == Strategy::kInterleavedZb || strategy == Strategy::kZbV ||
      strategy == Strategy::kDualPipeV) {
    o.virtual_stages = 2;
  }
  if (strategy == Strategy::kTeraPipe) o.uniform_slices = 2;
  return o;
}

// Two nodes of four GPUs: NVLink-like pairs (0,1) and (2,3), the rest over a shared host link,
// NIC out / in across nodes. dp2 pp2 tp2 puts one replica on each node.
inline FakeTopology TwoNodes() {
  FakeTopology topology(2, 4, 10e9, 1000, 5e9, 2000);
  topology.AddPair(0, 1, 50e9, 500);
  topology.AddPair(2, 3, 50e9, 500);
  topology.AddRing({0, 1, 3, 2});
  return topology;
}

}  // namespace terasim::testing

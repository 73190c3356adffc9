// Shared inputs of the symmetry-fold tests (symmetry_fold_test.cpp, declared_fold_test.cpp):
// small generator options, a two-node topology whose replicas and tp pairs are symmetric, and
// nodes whose GPUs share PCIe switches and one NIC (p3.16xlarge-like), and a topology with one
// link slowed (an asymmetric network).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "schedule/generator.h"
#include "sim/network_topology.h"
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

// Nodes whose GPUs reach the network through shared links, as on p3.16xlarge (without its
// second socket): GPU g of a node has its own link up to (and down from) PCIe switch
// switch_of[g]; each switch has one uplink (switch_bw) to (and downlink from) the node's one NIC,
// and the NIC one link out (and in). Across nodes a transfer crosses gpu up, switch up, NIC out,
// NIC in, switch down, gpu down; within a node the direct ring link (local g -> g + 1), else gpu
// up and gpu down (peer to peer below the switches).
class SharedNicTopology : public NetworkTopology {
 public:
  SharedNicTopology(int nodes, std::vector<int> switch_of, double switch_bw = 12e9)
      : nodes_(nodes), switch_of_(std::move(switch_of)) {
    const int gpus = static_cast<int>(switch_of_.size());
    int switches = 0;
    for (int s : switch_of_) switches = std::max(switches, s + 1);
    // Each direction's link ids, pushed per node (out / up first, then in / down).
    const auto both = [this](std::vector<int>& up, std::vector<int>& down, double bw,
                             TimeNs latency_ns, const std::string& name) {
      up.push_back(static_cast<int>(links_.size()));
      links_.push_back(NetLink{bw, latency_ns, name + " up"});
      down.push_back(static_cast<int>(links_.size()));
      links_.push_back(NetLink{bw, 0, name + " down"});
    };
    for (int n = 0; n < nodes; ++n) {
      const std::string node = "n" + std::to_string(n);
      for (int g = 0; g < gpus; ++g) {
        both(gpu_up_, gpu_down_, 12e9, 1000, node + ".gpu" + std::to_string(g));
        ring_.push_back(static_cast<int>(links_.size()));
        links_.push_back(NetLink{40e9, 500, node + ".gpu" + std::to_string(g) + " ring"});
      }
      for (int s = 0; s < switches; ++s) {
        both(switch_up_, switch_down_, switch_bw, 200, node + ".sw" + std::to_string(s));
      }
      both(nic_out_, nic_in_, 3e9, 20000, node + ".nic");
      std::vector<int> ring;
      for (int g = 0; g < gpus; ++g) ring.push_back(n * gpus + g);
      rings_.push_back({ring});
    }
    switches_ = switches;
  }

  int NumGpus() const override { return nodes_ * static_cast<int>(switch_of_.size()); }
  int NumNodes() const override { return nodes_; }
  int NodeOf(int gpu) const override { return gpu / static_cast<int>(switch_of_.size()); }
  const std::vector<NetLink>& Links() const override { return links_; }
  std::vector<int> Route(int src, int dst) const override {
    if (src == dst) return {};
    const int gpus = static_cast<int>(switch_of_.size());
    const int sn = NodeOf(src), dn = NodeOf(dst);
    if (sn == dn && (src % gpus + 1) % gpus == dst % gpus) return {ring_[src]};
    if (sn == dn) return {gpu_up_[src], gpu_down_[dst]};
    const int ss = sn * switches_ + switch_of_[src % gpus];
    const int ds = dn * switches_ + switch_of_[dst % gpus];
    return {gpu_up_[src], switch_up_[ss],   nic_out_[sn],
            nic_in_[dn],  switch_down_[ds], gpu_down_[dst]};
  }
  std::vector<std::vector<int>> NodeRings(int node) const override { return rings_[node]; }

 private:
  int nodes_;
  int switches_ = 0;
  std::vector<int> switch_of_;
  std::vector<NetLink> links_;
  std::vector<int> gpu_up_, gpu_down_, ring_, switch_up_, switch_down_, nic_out_, nic_in_;
  std::vector<std::vector<std::vector<int>>> rings_;
};

// A topology like `base` with one link slower (bandwidth x 1/2; none where `link` is -1). With
// `declared_alike` it declares its nodes node 0 shifted as `base` does (LinksPerNode,
// NetworkLinksPerNode), slow link or not: the shortcuts built on that declaration must notice
// the slower link; without, it declares nothing.
class SlowLink : public NetworkTopology {
 public:
  SlowLink(const NetworkTopology& base, int link, bool declared_alike = false)
      : base_(base),
        links_(base.Links()),
        links_per_node_(declared_alike ? base.LinksPerNode() : 0),
        network_links_per_node_(declared_alike ? base.NetworkLinksPerNode() : 0) {
    if (link >= 0) links_[link].bw_bytes_per_s /= 2;
  }
  int NumGpus() const override { return base_.NumGpus(); }
  int NumNodes() const override { return base_.NumNodes(); }
  int NodeOf(int gpu) const override { return base_.NodeOf(gpu); }
  const std::vector<NetLink>& Links() const override { return links_; }
  std::vector<int> Route(int src, int dst) const override { return base_.Route(src, dst); }
  std::vector<std::vector<int>> NodeRings(int node) const override { return base_.NodeRings(node); }
  const InstanceSpec* Instance() const override { return base_.Instance(); }
  int LinksPerNode() const override { return links_per_node_; }
  int NetworkLinksPerNode() const override { return network_links_per_node_; }

 private:
  const NetworkTopology& base_;
  std::vector<NetLink> links_;
  int links_per_node_;
  int network_links_per_node_;
};

}  // namespace terasim::testing

// ClusterOptions and cluster specs: how many instances of which type, joined by which fabric,
// plus what-if overrides of the network (faster NICs, lower latency).
//
// A cluster spec reads "INSTANCE:COUNT" ("p3.16xlarge:48"); "INSTANCE" alone means one node.
// INSTANCE is a name in topologies/data or a path to an instance JSON file.
#pragma once

#include <string>

namespace terasim {

enum class FabricKind {
  kSwitch,   // one non-blocking switch joins every NIC (the default)
  kFatTree,  // two levels: leaf switches of `nodes_per_leaf` nodes, one aggregated spine
};

// "switch" / "fat-tree".
const char* FabricKindName(FabricKind kind);
// Parses "switch" or "fat-tree"; throws InputError "--fabric: ..." otherwise.
FabricKind ParseFabricKind(const std::string& text);

struct ClusterOptions {
  FabricKind fabric = FabricKind::kSwitch;
  // Fat tree only: nodes under one leaf switch, and the leaf's down/up bandwidth ratio (1 is
  // non-blocking, 2 halves the uplinks).
  int nodes_per_leaf = 16;
  double oversubscription = 1.0;
  // What-if overrides of the instance file's network; a negative value keeps the instance's.
  double nic_gbps = -1;        // line rate per NIC, Gbit/s (> 0 when set)
  double nic_latency_us = -1;  // one-way NIC-to-NIC latency, microseconds (>= 0 when set)
  double nic_efficiency = -1;  // achieved fraction of line rate, (0, 1] when set
};

struct ClusterSpec {
  std::string instance;  // name or path
  int nodes = 1;
  bool explicit_count = false;  // the spec said ":COUNT"
};

// Parses "INSTANCE[:COUNT]". Throws InputError "--cluster: 'SPEC': WHAT" for an empty name or a
// count that is not an integer in [1, 65536].
ClusterSpec ParseClusterSpec(const std::string& spec);

// Throws InputError "--FLAG: ..." naming an option out of range (nodes_per_leaf < 1,
// oversubscription < 1, nic_gbps == 0, nic_efficiency 0 or > 1, non-finite values).
void ValidateClusterOptions(const ClusterOptions& options);

}  // namespace terasim

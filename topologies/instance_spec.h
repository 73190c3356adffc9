// InstanceSpec: what one node (a cloud instance type such as p3.16xlarge) contains and how its
// parts are wired, read from topologies/data/NAME.json (format: topologies/data/README.md).
//
// A plain value, validated once by ParseInstanceSpec; later code may assume it is sane: every
// endpoint exists, every bandwidth and latency is positive, every GPU reaches a CPU and a NIC,
// and the NVLink rings are permutations of the GPUs over existing NVLinks, edge-disjoint.
#pragma once

#include <string>
#include <vector>

#include "models/units.h"
#include "topologies/link.h"

namespace terasim {

// One class of physical link inside a node ("nvlink2", "pcie3x16", "qpi").
struct LinkType {
  std::string name;
  LinkKind kind = LinkKind::kPcie;  // nvlink, pcie or socket (network links: NetworkSpec)
  double raw_bw_bytes_per_s = 0;    // per lane, per direction
  double efficiency = 1;            // fraction of raw a transfer achieves, in (0, 1]
  TimeNs latency_ns = 0;            // per crossing
  std::string source;

  double EffectiveBwBytesPerS() const { return raw_bw_bytes_per_s * efficiency; }
};

// A part of the node. Components [0, gpus) are the GPUs "gpu0".."gpuN-1", in order.
struct Component {
  std::string name;
  VertexKind kind = VertexKind::kGpu;  // never kNetworkSwitch
};

// A full-duplex link between two components (both directions get the type's bandwidth x lanes).
struct InstanceLink {
  int a = 0;  // component indices
  int b = 0;
  int type = 0;   // index into InstanceSpec::link_types
  int lanes = 1;  // parallel links (NV2 pair: 2; GPU into NVSwitch: 12 on A100)
};

// The node's network interfaces (each NIC in `components` gets one port of this speed).
struct NetworkSpec {
  double nic_raw_bw_bytes_per_s = 0;  // per NIC, per direction (line rate)
  double efficiency = 1;              // achieved fraction of line rate (NCCL over TCP: 0.45-0.75)
  TimeNs latency_ns = 0;              // one way, NIC to NIC across the fabric (half the RTT)
  std::string transport;              // "tcp", "efa"
  bool gpudirect = false;             // false: traffic is staged through host memory (CPU)
  std::string source;
};

struct InstanceSpec {
  std::string name;  // "p3.16xlarge"
  std::string description;
  std::string device;  // the GPU's device spec name in models/data/devices ("v100-sxm2-16gb")
  int gpus = 0;
  std::vector<Component> components;  // GPUs first
  std::vector<LinkType> link_types;
  std::vector<InstanceLink> links;
  NetworkSpec network;
  std::vector<std::vector<int>> rings;  // local GPU indices; NVLink rings NCCL would build
  std::string file;                     // where it was read from

  int NumNics() const;
  bool HasNvSwitch() const;
  // Index of the component called `name`, or -1.
  int ComponentIndex(const std::string& name) const;
};

// Loads an instance by name (topologies/data/NAME.json under DataRoot()) or by path (anything
// containing '/' or ending in .json). Throws InputError naming the file and field on any
// problem, or "--cluster: unknown instance type 'X' (known: ...)" for an unknown name.
InstanceSpec LoadInstanceSpec(const std::string& name_or_path);

// Parses and validates an instance description; `origin` names the file in error messages,
// e.g. "x.json: links[3]: b: unknown component 'pcie9'". Throws InputError.
InstanceSpec ParseInstanceSpec(const std::string& json_text, const std::string& origin);

// Every instance in topologies/data, sorted by name. Throws InputError if one is malformed.
std::vector<InstanceSpec> ListInstanceSpecs();

}  // namespace terasim

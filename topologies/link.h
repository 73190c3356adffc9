// The elements of a cluster graph: vertices (GPUs, switches, CPUs, NICs) and directed links.
//
// Plain values. A Cluster (topologies/cluster.h) owns one vector of each; everything else refers
// to them by index (vertex id, link id). Global GPU g is vertex g, so GPU indices and vertex ids
// agree for GPUs.
#pragma once

#include <string>

#include "models/units.h"

namespace terasim {

// What a vertex of the cluster graph is.
enum class VertexKind {
  kGpu,
  kNvSwitch,       // an NVSwitch fabric inside a node (the 6 or 4 chips are one vertex)
  kPcieSwitch,     // a PCIe switch (PLX) that GPUs and NICs hang off
  kCpu,            // a CPU socket with its host memory (where p3 stages network traffic)
  kNic,            // a network interface (ENA, EFA)
  kNetworkSwitch,  // a switch of the fabric between nodes (not inside any node)
};

// What a directed link is made of.
enum class LinkKind {
  kNvLink,   // GPU-GPU NVLink, or GPU-NVSwitch
  kPcie,     // GPU / NIC to PCIe switch, PCIe switch to CPU
  kSocket,   // CPU to CPU (QPI / UPI / Infinity Fabric)
  kNetwork,  // NIC to its fabric switch
  kFabric,   // fabric switch to fabric switch (fat-tree uplinks)
};

// Lower-case names used in data files, text output and JSON ("gpu", "pcie_switch", "nvlink").
const char* VertexKindName(VertexKind kind);
const char* LinkKindName(LinkKind kind);

struct Vertex {
  int id = 0;
  VertexKind kind = VertexKind::kGpu;
  int node = -1;        // the node (instance) it belongs to; -1 for fabric switches
  int local_index = 0;  // index within its node's components (GPUs: the local GPU index)
  std::string name;     // e.g. "n3.gpu5", "n0.pcie1", "fabric.leaf2"
};

// A directed link. A physical full-duplex link is two Links, one per direction; each direction
// has its own bandwidth (NVLink's 25 GB/s is per direction).
//
// Parallel lanes: an NV2 pair (two NVLinks between the same GPUs) is ONE Link per direction with
// lanes = 2 and twice the bandwidth of one NVLink; a GPU's 12 links into an NVSwitch are one Link
// with lanes = 12. A single flow over an NV2 pair can therefore use both NVLinks (as NCCL does
// with two channels); flows sharing it share the sum.
struct Link {
  int id = 0;
  int src = 0;  // vertex ids
  int dst = 0;
  double bw_bytes_per_s = 0;      // what a flow can get: raw x efficiency (e.g. NVLink 2 x 20e9)
  double raw_bw_bytes_per_s = 0;  // line rate (e.g. NVLink 2 x 25e9); bisection uses this
  TimeNs latency_ns = 0;          // paid once per flow crossing the link
  LinkKind kind = LinkKind::kNvLink;
  int lanes = 1;     // parallel physical links folded into this one (NV2: 2)
  std::string name;  // e.g. "n0.gpu0->n0.gpu3"
};

}  // namespace terasim

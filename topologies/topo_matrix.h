// The GPU link matrix of one node in the layout of `nvidia-smi topo -m`: a header row
// "GPU0 .. GPUn", one row per GPU starting with its name, cells X / NV# / PIX / PHB / SYS, a
// NUMA affinity column, then a legend and the node's NICs.
#pragma once

#include <string>

#include "topologies/cluster.h"

namespace terasim {

// The matrix text of node 0 of `cluster`, ending with a newline.
std::string TopoMatrixText(const Cluster& cluster);

}  // namespace terasim

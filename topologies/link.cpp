#include "topologies/link.h"

namespace terasim {

const char* VertexKindName(VertexKind kind) {
  switch (kind) {
    case VertexKind::kGpu:
      return "gpu";
    case VertexKind::kNvSwitch:
      return "nvswitch";
    case VertexKind::kPcieSwitch:
      return "pcie_switch";
    case VertexKind::kCpu:
      return "cpu";
    case VertexKind::kNic:
      return "nic";
    case VertexKind::kNetworkSwitch:
      return "network_switch";
  }
  return "?";
}

const char* LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNvLink:
      return "nvlink";
    case LinkKind::kPcie:
      return "pcie";
    case LinkKind::kSocket:
      return "socket";
    case LinkKind::kNetwork:
      return "network";
    case LinkKind::kFabric:
      return "fabric";
  }
  return "?";
}

}  // namespace terasim

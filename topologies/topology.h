// topologies/: where things run. The front door: include this header, not the others.
//
//   InstanceSpec   one node type (p3.16xlarge, ...) read from topologies/data/*.json
//   Cluster        N nodes + a fabric as a Boost.Graph; routes, NVLink rings, bisection
//   BuildCluster   "p3.16xlarge:48" + ClusterOptions -> Cluster
//   Placement      (dp, stage, tp) ranks <-> GPUs, operator-innermost
//   TopoMatrixText the `nvidia-smi topo -m` view of a node
#pragma once

#include "topologies/cluster.h"
#include "topologies/cluster_options.h"
#include "topologies/instance_spec.h"
#include "topologies/link.h"
#include "topologies/placement.h"
#include "topologies/topo_matrix.h"

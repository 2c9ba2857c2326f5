// Spreading a fabric over partitions for the parallel runner: switches in contiguous runs of
// a breadth-first order (so that neighbours share a partition), balanced by the hosts and
// ports they carry. The NICs (hosts) of one GPU node stay together: all go with the switch
// that NIC k mod NICs of node k hangs off (with one NIC per node, each host goes with its own
// switch; on a rail-optimized fabric the nodes spread over the rails). A link
// between a NIC and its switch may then cross partitions and counts as a cut link.
#pragma once

#include <cstdint>
#include <vector>

#include "models/topology.h"

namespace fabtwin {

struct FabricPartitioning {
  std::vector<uint32_t> partition_of;  // node id -> partition
  uint32_t partitions = 1;
  Time lookahead = Time::max();  // smallest delay of a link between two partitions
  int cut_links = 0;
};

// At most `parts` partitions (fewer if the fabric has fewer switches). Throws ScenarioError if
// a link of zero delay would cross partitions: it leaves no lookahead.
FabricPartitioning partition_fabric(const Topology& topology, int parts);

}  // namespace fabtwin

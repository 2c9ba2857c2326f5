// Spreading a fabric over partitions for the parallel runner: switches in contiguous runs of
// a breadth-first order (so that neighbours share a partition), balanced by the hosts and
// ports they carry; each host goes with the switch it hangs off. With `keep_node_nics`, the
// NICs (hosts) of one GPU node stay together instead: all go with the switch that NIC k mod NICs
// of node k hangs off (on a rail-optimized fabric the nodes spread over the rails), and a link
// between a NIC and its switch may then cross partitions and counts as a cut link.
#pragma once

#include <cstdint>
#include <vector>

#include "models/fabric/topology.h"

namespace fabtwin {

struct FabricPartitioning {
  std::vector<uint32_t> partition_of;  // node id -> partition
  uint32_t partitions = 1;
  Time lookahead = Time::max();  // smallest delay of a link between two partitions
  int cut_links = 0;
};

// At most `parts` partitions (fewer if the fabric has fewer switches). Throws ScenarioError if
// a link of zero delay would cross partitions: it leaves no lookahead.
FabricPartitioning partition_fabric(const Topology& topology, int parts,
                                    bool keep_node_nics = false);

}  // namespace fabtwin

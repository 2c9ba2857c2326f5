// Spreading a fabric over partitions for the parallel runner. The switches carry weights (their
// ports plus two per host that goes with them) and are cut either into contiguous runs of a
// breadth-first order (so that neighbours share a partition), or by METIS's k-way graph
// partitioner over the switch graph (edges weighted by the links between two switches), which
// minimises the links cut for the same balance; each host goes with the switch it hangs off. With
// `keep_node_nics`, the NICs (hosts) of one GPU node stay together instead: all go with the switch
// that NIC k mod NICs of node k hangs off (on a rail-optimized fabric the nodes spread over the
// rails), and a link between a NIC and its switch may then cross partitions and counts as a cut
// link.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/fabric/topology.h"

namespace fabtwin {

enum class Partitioner { BreadthFirst, Metis };

// Whether METIS was found when this binary was built; without it Metis falls back to
// BreadthFirst (FabricPartitioning::partitioner says which one ran).
bool metis_available();
Partitioner partitioner_from_name(const std::string& name);  // "bfs" or "metis"
const char* partitioner_name(Partitioner partitioner);

struct FabricPartitioning {
  std::vector<uint32_t> partition_of;  // node id -> partition
  uint32_t partitions = 1;
  Time lookahead = Time::max();  // smallest delay of an edge between two partitions
  int cut_links = 0;
  bool node_nics_together = false;  // a GPU node's NICs share one partition
  // The partitioner that ran, and the heaviest partition's weight over the mean (1 = even).
  Partitioner partitioner = Partitioner::BreadthFirst;
  double imbalance = 1;
};

// At most `parts` partitions (fewer if the fabric has fewer switches). Throws ScenarioError if
// a link of zero delay would cross partitions: it leaves no lookahead.
FabricPartitioning partition_fabric(const Topology& topology, int parts,
                                    bool keep_node_nics = false,
                                    Partitioner partitioner = Partitioner::BreadthFirst);

// The same for a fabric whose GPU nodes reach their NICs over PCIe with `pcie_latency`. Each NIC
// may stay with its switch (packets stay inside a rail's partition, the node-NIC events cross
// partitions, so the lookahead is at most the PCIe latency), or a node's NICs go together (the
// links between NICs and switches may be cut, the PCIe events never are). Each NIC stays with
// its switch wherever that keeps windows of at least kLocalityWindow: on `make bench-nccl`'s
// rails the node cut sends a quarter of all events (every packet between a NIC and a rail of
// the other partition) through the mail and across cores, and ran 1.07 and 1.81 times as fast
// as one thread on 4 and 8 threads of a 16-core machine, against 2.12 and 3.30 for the cut that
// keeps NICs with their switches, whose windows are half as long (docs/performance.md). Where
// the windows would be shorter, the cut with the longer lookahead; with no PCIe latency a node's
// NICs must go together.
FabricPartitioning partition_gpu_fabric(const Topology& topology, int parts, Time pcie_latency,
                                        Partitioner partitioner = Partitioner::BreadthFirst);

// Partitions for cache locality, on any number of threads: within a window a partition's
// events touch only its own switches, ports, queues and NICs, so a partition of a large fabric
// keeps its share in a core's caches where one partition of it all would miss on nearly every
// event. One partition per kLocalityWeight of the partitioner's weight (a switch's ports plus
// two per host): a k=8 fat-tree (896) stays whole, k=16 (7,168) runs as 7 partitions, k=32 as 56.
// A finer cut is taken only where its windows (the lookahead) stay at least kLocalityWindow:
// at k=16, 7 partitions ran 1.38 times as fast as one with 50 ns links and 1.01 times with
// 10 ns links, where the windows' barriers eat what the caches save.
inline constexpr int64_t kHostWeight = 2;  // a host's NIC work, against one per switch port
inline constexpr int64_t kLocalityWeight = 1024;
inline constexpr Time kLocalityWindow{50'000};
int locality_partitions(const Topology& topology);

// A GPU fabric on several threads is cut into this many partitions per thread (where it has
// the switches; run.partitions overrides). Measured, not derived: `make bench-nccl` on 2 threads
// ran 1.91 times as fast as one thread in 4 partitions against 1.62 in 2 (8 alternating rounds
// on the 2-core machine), and its partitions' work on a 16-core machine's two threads took
// 1.8 - 2.5 s in 4 partitions against 2.9 - 3.4 s in 2 (docs/performance.md, "16 cores").
inline constexpr int kGpuPartitionsPerThread = 2;

// A run's cut. At least `threads` partitions (kGpuPartitionsPerThread per thread on a GPU fabric)
// and at least `partitions` (run.partitions); with partitions 0, locality_partitions() where
// that is more and the finer cut keeps windows of at least kLocalityWindow. A GPU fabric
// (`pcie_latency` set) is cut by partition_gpu_fabric.
FabricPartitioning partition_run(const Topology& topology, int threads, int partitions,
                                 std::optional<Time> pcie_latency, Partitioner partitioner);

}  // namespace fabtwin

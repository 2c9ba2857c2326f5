// Putting one run's results back together when its partitions ran on several MPI ranks: each
// rank sends what its own components recorded (the others' records are empty there), and
// rank 0 merges them into exactly what a single process would have produced.
#pragma once

#include <string>
#include <vector>

#include "models/collectives/gpu_node.h"
#include "models/fabric/run_result.h"

namespace fabtwin {

// `fingerprints`: each component's fingerprint on this rank (0 where another rank ran it).
// `collectives`: what this rank's GPU nodes recorded.
std::string encode_result(const RunResult& r, const std::vector<uint64_t>& fingerprints,
                          const GpuNodeRecords& collectives);

// Merges every rank's encode_result(); `seed` recombines the fingerprints. The GPU nodes'
// records of all ranks are gathered into `collectives`.
RunResult merge_results(const std::vector<std::string>& texts, uint64_t seed,
                        GpuNodeRecords& collectives);

}  // namespace fabtwin

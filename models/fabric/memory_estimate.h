// Start-up memory of a fabric, estimated from its size before anything is built, so that a
// fabric too large for the machine is refused with a sentence naming its size, rather than
// dying of std::bad_alloc part-way through building it.
#pragma once

#include <cstdint>
#include <string>

#include "models/fabric/topology.h"

namespace fabtwin {

// Bytes a fabric of `size` takes to start (topology, routes, switches, NICs, result records),
// from per-port and per-host costs measured on fat-trees and stars (docs/performance.md).
int64_t estimated_start_bytes(const TopologySize& size);

// The machine's physical memory in bytes (sysconf), or -1 if it cannot tell.
int64_t machine_memory_bytes();

// How the refusals write counts and sizes: "17,039,360" and "135.1 GB".
std::string with_commas(int64_t v);
std::string gigabytes(int64_t bytes);

// Throws ScenarioError at `topology`, naming the fabric's size, the estimate and `available`,
// when the estimate exceeds `available` bytes (negative: unknown, nothing is refused).
void check_fits_in_memory(const TopologySize& size, int64_t available = machine_memory_bytes());

}  // namespace fabtwin

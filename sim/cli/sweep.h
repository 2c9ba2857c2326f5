// `fabtwin sweep SWEEP.json`: runs every point and seed of a sweep file (concurrently, over MPI
// ranks under mpirun, resuming what an earlier run stored), then writes the table and ranks the
// points by their objectives.
#pragma once

#include <string>
#include <vector>

#include "sim/transport.h"

namespace fabtwin {

int command_sweep(const std::vector<std::string>& args, Transport* transport);

}  // namespace fabtwin

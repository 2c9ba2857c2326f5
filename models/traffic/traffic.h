// Traffic generators: turn the scenario's `traffic` list into flows (explicit flows, N->1
// incast, random permutation, all-to-all, Poisson arrivals with sizes from a CDF).
#pragma once

#include <filesystem>
#include <vector>

#include "models/fabric/topology.h"
#include "models/traffic/flow.h"
#include "sim/params.h"

namespace fabtwin {

// Reads `traffic` (an array of generator objects, each with a "type") and returns the flows,
// numbered 0.. in generator order. Each generator draws from its own random stream of `seed`.
std::vector<FlowSpec> generate_traffic(const nlohmann::json& scenario, const Topology& topology,
                                       uint64_t seed, const std::filesystem::path& scenario_dir);

const std::vector<const ParamGroup*>& traffic_param_groups();

}  // namespace fabtwin

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
// Poisson arrivals stop at `horizon` (the run's end), so the work of generating them is bounded
// by the run, and a generator that would exceed kMaxPoissonFlows is refused before it starts.
std::vector<FlowSpec> generate_traffic(const nlohmann::json& scenario, const Topology& topology,
                                       uint64_t seed, const std::filesystem::path& scenario_dir,
                                       Time horizon = Time::max());
inline constexpr int64_t kMaxPoissonFlows = 50'000'000;

const std::vector<const ParamGroup*>& traffic_param_groups();

}  // namespace fabtwin

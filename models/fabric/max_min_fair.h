// Max-min fair sharing of links by flows on fixed paths: the fluid reference for what an ideal
// transport gets from a set of paths. Rates by progressive filling (every flow not yet held by a
// saturated link grows at the same pace until some link it crosses is full), and the completion
// times of flows that start together and are re-shared max-min each time one of them ends.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace fabtwin {

// The links a flow loads: (link, weight), a rate r of the flow taking r x weight of the link
// (a weight above 1 for headers, a small one for the ACKs it draws on its reverse path).
using FlowPath = std::vector<std::pair<uint32_t, double>>;

// The max-min fair rate of each flow; paths[i] lists the links flow i loads (indices into
// `capacity`, in the unit the rates come out in). A flow with an empty path gets 0.
std::vector<double> max_min_rates(const std::vector<FlowPath>& paths,
                                  const std::vector<double>& capacity);

// When each flow of `bits[i]` on paths[i], all starting at 0, completes if the flows always
// share the links max-min fairly among those not yet complete (the same unit of time as
// capacity's rate: bits and bits per second give seconds).
std::vector<double> fluid_completion_times(const std::vector<FlowPath>& paths,
                                           const std::vector<double>& bits,
                                           const std::vector<double>& capacity);

}  // namespace fabtwin

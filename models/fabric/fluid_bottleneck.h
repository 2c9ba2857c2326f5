// The bottleneck of a scenario as the DCQCN fluid model (CoNEXT 2016) sees it: the flows of the
// scenario all sending into one receiver, whose switch egress port holds the one queue, with the
// scenario's RED marking and DCQCN knobs as the model's parameters. Used by `fabtwin fluid` and
// by the validation cases that compare a simulated queue with the model's fixed point.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/cc/dcqcn_fluid_model.h"
#include "models/fabric/fabric_spec.h"

namespace fabtwin {

struct FluidBottleneck {
  DcqcnFluidParams model;             // model.flows: every flow of the scenario
  std::vector<DcqcnFluidFlow> flows;  // start and size of each, in flow id order
  double line_rate_bps = 0;           // the senders' link rate
  double initial_alpha = 1;           // nic.cc.initial_alpha_value / 1024
  Time base_rtt;      // the default control-loop delay tau*: one data frame out, one CNP back
  int receiver = -1;  // host
  int switch_node = -1, switch_port = -1;  // the egress port toward the receiver
  // What the equations leave out of this scenario, one sentence each, for the user.
  std::vector<std::string> approximations;
};

// Throws ScenarioError naming the JSON path of what the model cannot express: no DCQCN, no
// flows or collectives, flows to several receivers, a second possible bottleneck on the way
// (a slower link, a slow receive pipeline), link events, or DCQCN knobs outside the equations
// (a monitor period above the CNP interval, rpg_gd other than 11, rpg_min_dec_fac above 50, no
// target clamp, rate_to_set_on_first_cnp), these all named in one message.
FluidBottleneck fluid_bottleneck(const FabricSpec& spec);

// How long and how finely to integrate; what is not given takes its default.
struct FluidOptions {
  std::optional<Time> duration;  // default: run.end
  std::optional<Time> delay;     // tau*; default: the bottleneck's base RTT
  std::optional<Time> step;      // largest integration step; default kFluidStep
  std::optional<Time> sample;    // output interval; default output.rate_sample_interval (10 us
                                 // when that is 0)
  std::optional<Time> after;     // the summary's window starts here; default duration / 2
};
inline constexpr Time kFluidStep{5'000'000};  // 5 us: half the authors' largest dde23 step

struct FluidSetup {
  DcqcnTrajectoryParams params;
  Time duration, delay, step, sample, after;  // the options as used
};

// The integration of `b` with `options`; throws std::invalid_argument naming the option
// (--duration, --delay, --step, --sample, --after) for a value out of range.
FluidSetup fluid_setup(const FabricSpec& spec, const FluidBottleneck& b,
                       const FluidOptions& options);

}  // namespace fabtwin

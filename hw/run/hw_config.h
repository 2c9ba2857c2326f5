// The scenario's `hw` section: what only a hardware run has (which real host plays which
// scenario host, the control network, the RDMA device and the queue pairs' settings). The
// simulator accepts the section and ignores it; `fabtwin run` and `fabtwin check` still read it
// strictly, so a mistake in it is caught by either tool.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/params.h"
#include "sim/units.h"

namespace fabtwin::hw {

struct HwConfig {
  std::string transport;        // "verbs" or "tcp"
  std::string memory;           // "host" or "cuda"
  int gpu = -1;                 // CUDA device; -1: the process's local rank on its host
  std::string hosts;            // hosts file; empty: ranks from mpirun, or one process
  std::string control_address;  // rank 0's control-network address; empty: see hw_config.cpp
  int control_port = 18600;
  std::string bind_address;  // where rank 0 listens; empty: control_address
  std::string data_address;  // TCP: where this rank's data listener binds; empty: its address
  std::string device;        // RDMA device (mlx5_0); empty: the first one
  int port = 1;              // its port
  int gid_index = -1;        // -1: automatic (RoCEv2 with an IPv4 address)
  int traffic_class = -1;    // GRH traffic class; -1: each flow's DSCP << 2
  int sl = 0;
  int tx_depth = 128;
  int inline_size = 220;
  Time join_deadline;       // every rank joined the control group
  Time handshake_deadline;  // one control connection authenticated
  Time run_deadline;        // the traffic, from the common start
  Time start_delay;         // from the barrier to the common start
  Bytes warmup;             // untimed bytes per connection before the timed run
  Time sample_period;       // counters sampled during the run (0: before and after only)

  bool operator==(const HwConfig&) const = default;
};

const ParamGroup& hw_params();

// Reads the `hw` section of a scenario document (the declared defaults when it has none).
// Throws ScenarioError naming the JSON path (hw.KEY).
HwConfig read_hw_config(const nlohmann::json& scenario);

// The GRH traffic class a flow of DSCP `dscp` is sent with: hw.traffic_class, or DSCP << 2 (the
// ECN bits zero) when that is automatic.
int traffic_class_of(const HwConfig& config, int dscp);

}  // namespace fabtwin::hw

// Everything a switch is configured with: the shared buffer (MMU), PFC, ECN marking and QoS
// (DSCP to priority, egress scheduling), read from the scenario's `fabric` sections.
#pragma once

#include <array>
#include <map>
#include <vector>

#include "models/net/ecn_marking.h"
#include "models/net/egress_port.h"
#include "models/net/priority_flow_control.h"
#include "models/net/shared_buffer.h"
#include "sim/params.h"

namespace fabtwin {

// Every field is set by read_switch_config from the declared parameters (their defaults are
// declared once, there); a default-constructed SwitchConfig is all zero.
struct SwitchConfig {
  // What every frame reads first, on the struct's first two cache lines (a switch keeps its
  // configuration on lines of its own: see Switch).
  std::array<uint8_t, 64> dscp_to_priority;
  bool pfc;
  bool ecn;
  bool mark_at_enqueue;
  bool cut_through;  // see port_to_port_latency
  SchedulerConfig scheduler;
  MmuConfig mmu;  // its lossless groups first
  // Forwarding: a frame may leave `port_to_port_latency` after its last bit arrived (store and
  // forward) or, with cut_through, after its first bits arrived when its egress is idle and
  // not faster than its ingress (docs/lossless-ethernet.md).
  Time port_to_port_latency;

  bool auto_headroom;    // mlx5 rule per port; else `headroom`
  int64_t headroom;      // bytes per lossless group and ingress port
  int64_t headroom_mtu;  // frame bytes the automatic headroom allows for (fabric.link.mtu)

  int pause_quanta;   // quanta an XOFF frame asks for
  bool auto_refresh;  // refresh an XOFF after half its pause time
  Time pause_refresh;
  PfcWatchdogConfig watchdog;  // fabric.pfc.watchdog, on switches and NICs

  RedMarking red;                             // default marking
  std::map<int64_t, RedMarking> red_by_rate;  // link rate (bps) -> marking at ports of that rate

  Time queue_sample_interval;  // output.queue_sample_interval; 0 = no queue-depth samples

  // The PFC headroom of each lossless group of an ingress port on a link of `rate` and `delay`.
  int64_t port_headroom(BitsPerSec rate, Time delay) const;

  RedMarking red_for(BitsPerSec rate) const {
    const auto it = red_by_rate.find(rate.bps);
    return it == red_by_rate.end() ? red : it->second;
  }

  bool operator==(const SwitchConfig&) const = default;
};

// Reads fabric.switch, fabric.pfc, fabric.ecn and fabric.qos. `mtu_frame` is the largest data
// frame the NICs send (for the automatic headroom).
SwitchConfig read_switch_config(const nlohmann::json& scenario, int64_t mtu_frame);

const std::vector<const ParamGroup*>& switch_param_groups();

}  // namespace fabtwin

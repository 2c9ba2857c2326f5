// A full-duplex link: port `a_port` of node `a` to port `b_port` of node `b`, one rate and one
// propagation delay in each direction. Wiring it gives each side's egress port its peer.
#pragma once

#include "models/net/egress_port.h"
#include "sim/units.h"

namespace fabtwin {

struct Link {
  int a, a_port, b, b_port;
  BitsPerSec rate;
  Time delay;

  bool operator==(const Link&) const = default;
};

// Sets both egress ports of `link` (a's and b's) to its rate and delay, each feeding the other.
inline void wire(const Link& link, EgressPort& a, EgressPort& b) {
  a.set_rate(link.rate);
  b.set_rate(link.rate);
  a.delay = b.delay = link.delay;
  a.peer = static_cast<ComponentId>(link.b);
  a.peer_port = static_cast<uint32_t>(link.b_port);
  b.peer = static_cast<ComponentId>(link.a);
  b.peer_port = static_cast<uint32_t>(link.a_port);
}

}  // namespace fabtwin

// Priority flow control (IEEE 802.1Qbb) at one port, as switches and NICs both run it.
// Sending side (PauseSenders): while the port's ingress is congested for a priority, XOFF it
// upstream, re-send the XOFF every refresh interval so the peer's pause does not run out, and
// XON it once drained. Receiving side (PauseReceiver): a PFC frame from the peer holds the
// port's egress of its priority for the time the frame asks, until that runs out or an XON.
// The PFC watchdog (PfcWatchdogConfig) guards the receiving side against a peer that never
// stops pausing. All are state and rules only; NetworkNode drives them with its owner's timer
// handlers.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "models/net/egress_port.h"
#include "models/net/packet.h"
#include "models/net/pfc.h"

namespace fabtwin {

// The handlers a node gives PFC's timers (index = port).
struct PauseHandlers {
  uint32_t expired = 0;   // data = priority: a pause received at the port may have run out
  uint32_t refresh = 0;   // the XOFFs the port sends are due again
  uint32_t watchdog = 0;  // the PFC watchdog polls the port's paused queues (background)
};

// The PFC watchdog of a node's egress queues (fabric.pfc.watchdog), as switches run it: it
// polls every `poll_interval` (on a global grid); a lossless queue found paused continuously
// for `detection_time` with frames waiting is in a pause storm. From then on the queue ignores
// the pause frames it receives and either transmits anyway (forward) or discards its frames
// and every new one (drop). It returns to normal once no XOFF has arrived for that priority
// for `restoration_time`.
struct PfcWatchdogConfig {
  bool enabled;
  Time detection_time;
  Time restoration_time;
  Time poll_interval;
  bool drop;  // action drop; false: forward
  bool nics;  // the NICs' send queues are watched as well as the switches' egress queues

  bool operator==(const PfcWatchdogConfig&) const = default;
};

// The sending side of every port of a node that sends PFC, port by port. Whether a port's
// ingress is pausing each priority upstream is read for every frame the node admits and
// releases, so those bits lie side by side (a byte per port); the rest of a port's state is
// read only while it pauses.
class PauseSenders {
 public:
  // Adds the next port's sender (ports are numbered from 0 in the order added): it sends XOFF
  // frames of `quanta` (which last `pause_time` at the port's rate) and refreshes them every
  // `refresh_interval`.
  void add(int quanta, Time refresh_interval, Time pause_time) {
    pausing_.push_back(0);
    senders_.push_back({refresh_interval, pause_time, {}, quanta, false});
  }
  size_t size() const { return pausing_.size(); }

  bool pausing(uint32_t port, int priority) const { return pausing_[port] >> priority & 1; }
  Time refresh_interval(uint32_t port) const { return senders_[port].refresh_interval; }
  // While pausing: the last XOFF sent for `priority` has run out at the peer by `now` (the
  // refresh interval is longer than the pause time), so the peer may be sending again. The
  // owner then re-sends XOFF if its ingress is still over the threshold (lapse_resend()).
  bool lapsed(uint32_t port, int priority, Time now) const {
    return now >= senders_[port].runs_out[priority];
  }

  // The ingress of `port` crossed XOFF for `priority`: it is paused upstream from now (a
  // transition, counted on the port's egress `egress`); send(true) follows.
  void start(uint32_t port, EgressPort& egress, int priority) {
    pausing_[port] |= static_cast<uint8_t>(1u << priority);
    ++egress.counters[priority].xoff_transitions;
  }
  // It drained below XON: resumed; send(false) follows.
  void stop(uint32_t port, int priority) {
    pausing_[port] &= static_cast<uint8_t>(~(1u << priority));
  }
  // Queues an XOFF (or XON) frame for `priority` at `egress`, ahead of any queue, and counts
  // it. True when the refresh timer is to be started (an XOFF with no refresh pending).
  bool send(uint32_t port, EgressPort& egress, int priority, bool xoff, Time now);
  // The refresh timer of `port` fired.
  void refresh_fired(uint32_t port) { senders_[port].refresh_scheduled = false; }

 private:
  struct Sender {
    Time refresh_interval;
    Time pause_time;
    std::array<Time, kPriorities> runs_out;  // when the last XOFF of each priority runs out
    int quanta;
    bool refresh_scheduled;
  };
  std::vector<uint8_t> pausing_;  // [port] bit p: priority p is XOFF'ed upstream, not XON'ed
  std::vector<Sender> senders_;
};

class PauseReceiver {
 public:
  // Applies PFC frame `f` that arrived at `now` to `port`'s egress: its priority stops after
  // the frame on the wire, for the asked time. Returns when the pause ends (now for an XON).
  static Time apply(EgressPort& port, const Packet& f, Time now) {
    port.pause(f.priority, now, pfc::pause_duration(f.pause_quanta(), port.rate));
    return port.queues[f.priority].paused_until;
  }
  // The expiry timer of `priority` fired at `now`: true if the pause has run out (the episode
  // is closed); false if a later frame refreshed it (a later expiry is due).
  static bool expire(EgressPort& port, int priority, Time now) {
    if (port.queues[priority].paused_until > now) return false;
    port.close_pause(priority, now);
    return true;
  }
};

}  // namespace fabtwin

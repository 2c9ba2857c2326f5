// Priority flow control (IEEE 802.1Qbb) at one port, as switches and NICs both run it.
// Sending side (PauseSender): while the port's ingress is congested for a priority, XOFF it
// upstream, re-send the XOFF every refresh interval so the peer's pause does not run out, and
// XON it once drained. Receiving side (PauseReceiver): a PFC frame from the peer holds the
// port's egress of its priority for the time the frame asks, until that runs out or an XON.
// The PFC watchdog (PfcWatchdogConfig) guards the receiving side against a peer that never
// stops pausing. All are state and rules only; NetworkNode drives them with its owner's timer
// handlers.
#pragma once

#include <array>
#include <cstdint>

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

class PauseSender {
 public:
  PauseSender() = default;
  // Sends XOFF frames of `quanta` (which last `pause_time` at the port's rate) and refreshes
  // them every `refresh_interval`.
  PauseSender(int quanta, Time refresh_interval, Time pause_time)
      : refresh_interval_(refresh_interval), pause_time_(pause_time), quanta_(quanta) {}

  bool pausing(int priority) const { return pausing_ >> priority & 1; }
  Time refresh_interval() const { return refresh_interval_; }
  // While pausing: the last XOFF sent for `priority` has run out at the peer by `now` (the
  // refresh interval is longer than the pause time), so the peer may be sending again. The
  // owner then re-sends XOFF if its ingress is still over the threshold (lapse_resend()).
  bool lapsed(int priority, Time now) const { return now >= runs_out_[priority]; }

  // The ingress crossed XOFF for `priority`: it is paused upstream from now (a transition,
  // counted on `port`); send(true) follows.
  void start(EgressPort& port, int priority) {
    pausing_ |= static_cast<uint8_t>(1u << priority);
    ++port.counters[priority].xoff_transitions;
  }
  // It drained below XON: resumed; send(false) follows.
  void stop(int priority) { pausing_ &= static_cast<uint8_t>(~(1u << priority)); }
  // Queues an XOFF (or XON) frame for `priority` at `port`, ahead of any queue, and counts it.
  // True when the refresh timer is to be started (an XOFF with no refresh pending).
  bool send(EgressPort& port, int priority, bool xoff, Time now);
  // The refresh timer fired.
  void refresh_fired() { refresh_scheduled_ = false; }

 private:
  Time refresh_interval_{};
  Time pause_time_{};
  std::array<Time, kPriorities> runs_out_{};  // when the last XOFF of each priority runs out
  int quanta_ = pfc::kMaxQuanta;
  uint8_t pausing_ = 0;  // bit p: priority p is XOFF'ed upstream and not yet XON'ed
  bool refresh_scheduled_ = false;
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

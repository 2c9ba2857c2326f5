// Priority flow control (IEEE 802.1Qbb) at one port, as switches and NICs both run it.
// Sending side (PauseSender): while the port's ingress is congested for a priority, XOFF it
// upstream, re-send the XOFF every refresh interval so the peer's pause does not run out, and
// XON it once drained. Receiving side (PauseReceiver): a PFC frame from the peer holds the
// port's egress of its priority for the time the frame asks, until that runs out or an XON.
// Both are state and rules only; NetworkNode drives them with its owner's timer handlers.
#pragma once

#include <cstdint>

#include "models/net/egress_port.h"
#include "models/net/packet.h"
#include "models/net/pfc.h"

namespace fabtwin {

// The handlers a node gives PFC's timers (index = port).
struct PauseHandlers {
  uint32_t expired = 0;  // data = priority: a pause received at the port may have run out
  uint32_t refresh = 0;  // the XOFFs the port sends are due again
};

class PauseSender {
 public:
  PauseSender() = default;
  // Sends XOFF frames of `quanta` and refreshes them every `refresh_interval`.
  PauseSender(int quanta, Time refresh_interval)
      : refresh_interval_(refresh_interval), quanta_(quanta) {}

  bool pausing(int priority) const { return pausing_ >> priority & 1; }
  Time refresh_interval() const { return refresh_interval_; }

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
  bool send(EgressPort& port, int priority, bool xoff);
  // The refresh timer fired.
  void refresh_fired() { refresh_scheduled_ = false; }

 private:
  Time refresh_interval_{};
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
    return port.paused_until[f.priority];
  }
  // The expiry timer of `priority` fired at `now`: true if the pause has run out (the episode
  // is closed); false if a later frame refreshed it (a later expiry is due).
  static bool expire(EgressPort& port, int priority, Time now) {
    if (port.paused_until[priority] > now) return false;
    port.close_pause(priority, now);
    return true;
  }
};

}  // namespace fabtwin

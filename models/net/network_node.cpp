#include "models/net/network_node.h"

namespace fabtwin {

// The PFC calls are out of line: they are rare, and kept out of the per-frame paths that call
// them (a switch's arrival and transmission, the NIC's receive buffer).
// The first PFC frame waiting at `port` goes on its free wire.
void NetworkNode::send_first_pending_pause(uint32_t port_index) {
  EgressPort& port = ports_[port_index];
  const auto [priority, quanta] = port.take_pause();
  Packet* f = pool().acquire();
  f->type = PacketType::Pause;
  f->priority = priority;
  f->set_pause_quanta(quanta);
  f->frame = pfc::kFrameBytes;
  transmit_control(port_index, f);
}

void NetworkNode::pause_upstream(uint32_t port, PauseSenders& senders, int priority) {
  senders.start(port, ports_[port], priority);
  send_pause(port, senders, priority, true);
}

void NetworkNode::resume_upstream(uint32_t port, PauseSenders& senders, int priority) {
  senders.stop(port, priority);
  send_pause(port, senders, priority, false);
}

void NetworkNode::receive_pause(uint32_t port, const Packet& f) {
  if (watchdog_.enabled) {
    const int p = f.priority;
    if (f.pause_quanta() > 0) watchdog_ports_[port].last_xoff[p] = now();
    EgressPort& egress = ports_[port];
    if (egress.watchdog_storm >> p & 1) {  // in a storm: counted, not obeyed
      ++(f.pause_quanta() > 0 ? egress.counters[p].pause_received
                              : egress.counters[p].xon_received);
      return;
    }
    if (f.pause_quanta() > 0 && (watchdog_lossless_ >> p & 1)) arm_watchdog(port);
  }
  if (const Time until = PauseReceiver::apply(ports_[port], f, now()); until > now()) {
    hold_pause(port, f.priority);
    schedule_self(until, make_kind(pause_handlers_.expired, port), f.priority);
  } else {
    release_pause(port, f.priority);
    on_transmit_done(port);
  }
}

// A pause in force is open work: frames may wait behind it, and its expiry timer (background)
// is what ends it if no XON comes.
void NetworkNode::hold_pause(uint32_t port, int priority) {
  if (pause_holds_.size() < ports_.size()) pause_holds_.resize(ports_.size());
  const auto bit = static_cast<uint8_t>(1u << priority);
  if (pause_holds_[port] & bit) return;
  pause_holds_[port] |= bit;
  hold_work();
}

void NetworkNode::release_pause(uint32_t port, int priority) {
  const auto bit = static_cast<uint8_t>(1u << priority);
  if (port >= pause_holds_.size() || !(pause_holds_[port] & bit)) return;
  pause_holds_[port] &= static_cast<uint8_t>(~bit);
  release_work();
}

// Only the expiry of the pause in force acts. One that a later XOFF overtook waits for that
// XOFF's expiry; one whose pause ended earlier (an XON, the watchdog, a link change) only lets
// go of the pause's hold if nothing else did, so a stale timer changes no result even when it
// runs after the traffic is done.
void NetworkNode::pause_expired(uint32_t port, int priority) {
  const Time until = ports_[port].queues[priority].paused_until;
  if (until > now()) return;
  release_pause(port, priority);
  if (until != now()) return;
  if (PauseReceiver::expire(ports_[port], priority, now())) on_transmit_done(port);
}

void NetworkNode::send_pause(uint32_t port, PauseSenders& senders, int priority, bool xoff) {
  if (senders.send(port, ports_[port], priority, xoff, now())) {
    schedule_self(now() + senders.refresh_interval(port), make_kind(pause_handlers_.refresh, port),
                  0);
  }
  if (port_free(port)) {
    on_transmit_done(port);
  } else {
    request_transmit_done(port);
  }
}

void NetworkNode::set_watchdog(const PfcWatchdogConfig& config, uint8_t lossless) {
  watchdog_ = config;
  watchdog_lossless_ = lossless;
  if (watchdog_.enabled) watchdog_ports_.assign(ports_.size(), {});
}

// Polls run on the global grid of multiples of the poll interval, as a switch's watchdog task
// does, while the port has a pause or a storm to watch.
void NetworkNode::arm_watchdog(uint32_t port) {
  WatchdogPort& w = watchdog_ports_[port];
  if (w.polling) return;
  w.polling = true;
  const int64_t period = watchdog_.poll_interval.ps;
  schedule_self(Time{(now().ps / period + 1) * period}, make_kind(pause_handlers_.watchdog, port),
                0);
}

void NetworkNode::watchdog_poll(uint32_t port_index) {
  EgressPort& port = ports_[port_index];
  WatchdogPort& w = watchdog_ports_[port_index];
  w.polling = false;
  bool watching = false;
  bool restart = false;
  for (int p = 0; p < kPriorities; ++p) {
    if (!(watchdog_lossless_ >> p & 1)) continue;
    const auto bit = static_cast<uint8_t>(1u << p);
    if (port.watchdog_storm & bit) {
      if (now() - w.last_xoff[p] >= watchdog_.restoration_time) {  // the storm is over
        port.watchdog_storm &= static_cast<uint8_t>(~bit);
        port.watchdog_drop &= static_cast<uint8_t>(~bit);
      } else {
        watching = true;
      }
      continue;
    }
    if (!port.paused(p, now())) continue;
    watching = true;
    if (now() - port.queues[p].paused_since < watchdog_.detection_time ||
        !watchdog_backlog(port_index, p)) {
      continue;
    }
    // A storm: the pause episode ends here; the queue no longer obeys the peer.
    ++port.counters[p].watchdog_storms;
    port.close_pause(p, now());
    port.queues[p].paused_until = now();
    port.watchdog_storm |= bit;
    if (watchdog_.drop) {
      port.watchdog_drop |= bit;
      watchdog_flush(port_index, p);
    }
    restart = true;
  }
  if (watching) arm_watchdog(port_index);
  if (restart) {
    if (port_free(port_index)) {
      on_transmit_done(port_index);
    } else {
      request_transmit_done(port_index);
    }
  }
}

}  // namespace fabtwin

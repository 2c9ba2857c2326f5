#include "models/net/network_node.h"

namespace fabtwin {

// The PFC calls are out of line: they are rare, and kept out of the per-frame paths that call
// them (a switch's arrival and transmission, the NIC's receive buffer).
void NetworkNode::pause_upstream(uint32_t port, PauseSender& sender, int priority) {
  sender.start(ports_[port], priority);
  send_pause(port, sender, priority, true);
}

void NetworkNode::resume_upstream(uint32_t port, PauseSender& sender, int priority) {
  sender.stop(priority);
  send_pause(port, sender, priority, false);
}

void NetworkNode::receive_pause(uint32_t port, const Packet& f) {
  if (const Time until = PauseReceiver::apply(ports_[port], f, now()); until > now()) {
    schedule_self(until, make_kind(pause_handlers_.expired, port), f.priority);
  } else {
    on_transmit_done(port);
  }
}

void NetworkNode::pause_expired(uint32_t port, int priority) {
  if (PauseReceiver::expire(ports_[port], priority, now())) on_transmit_done(port);
}

void NetworkNode::send_pause(uint32_t port, PauseSender& sender, int priority, bool xoff) {
  if (sender.send(ports_[port], priority, xoff)) {
    schedule_self(now() + sender.refresh_interval(), make_kind(pause_handlers_.refresh, port), 0);
  }
  if (port_free(port)) {
    on_transmit_done(port);
  } else {
    request_transmit_done(port);
  }
}

}  // namespace fabtwin

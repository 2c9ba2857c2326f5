#include "models/net/priority_flow_control.h"

namespace fabtwin {

bool PauseSenders::send(uint32_t port, EgressPort& egress, int priority, bool xoff, Time now) {
  Sender& sender = senders_[port];
  PriorityCounters& c = egress.counters[priority];
  ++(xoff ? c.pause_sent : c.xon_sent);
  // Counted from when the frame is queued: it reaches the peer later, so the pause there runs
  // out later still; a re-send judged from here is never late.
  if (xoff) sender.runs_out[priority] = now + sender.pause_time;
  egress.queue_pause(static_cast<uint8_t>(priority),
                     static_cast<uint16_t>(xoff ? sender.quanta : 0));
  if (!xoff || sender.refresh_scheduled) return false;
  sender.refresh_scheduled = true;
  return true;
}

}  // namespace fabtwin

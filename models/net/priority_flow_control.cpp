#include "models/net/priority_flow_control.h"

namespace fabtwin {

bool PauseSender::send(EgressPort& port, int priority, bool xoff, Time now) {
  PriorityCounters& c = port.counters[priority];
  ++(xoff ? c.pause_sent : c.xon_sent);
  // Counted from when the frame is queued: it reaches the peer later, so the pause there runs
  // out later still; a re-send judged from here is never late.
  if (xoff) runs_out_[priority] = now + pause_time_;
  port.queue_pause(static_cast<uint8_t>(priority), static_cast<uint16_t>(xoff ? quanta_ : 0));
  if (!xoff || refresh_scheduled_) return false;
  refresh_scheduled_ = true;
  return true;
}

}  // namespace fabtwin

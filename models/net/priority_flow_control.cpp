#include "models/net/priority_flow_control.h"

namespace fabtwin {

bool PauseSender::send(EgressPort& port, int priority, bool xoff) {
  PriorityCounters& c = port.counters[priority];
  ++(xoff ? c.pause_sent : c.xon_sent);
  port.pending_pause.emplace_back(static_cast<uint8_t>(priority),
                                  static_cast<uint16_t>(xoff ? quanta_ : 0));
  if (!xoff || refresh_scheduled_) return false;
  refresh_scheduled_ = true;
  return true;
}

}  // namespace fabtwin

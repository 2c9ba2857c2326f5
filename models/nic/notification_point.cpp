#include "models/nic/notification_point.h"

#include "models/net/roce_framing.h"

namespace fabtwin {

void NotificationPoint::write_cnp(Packet& c) const {
  c.type = PacketType::Cnp;
  c.frame = roce::cnp_frame();
  c.dscp = static_cast<uint8_t>(cnp_dscp_);
  c.priority = static_cast<uint8_t>(cnp_priority_);
}

}  // namespace fabtwin

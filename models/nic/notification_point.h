// DCQCN's notification point (NP), on the receiving NIC: it answers data packets that arrive
// marked ECN-CE with a congestion notification packet (RoCEv2 CNP) to the requester, at most
// one per queue pair per min_time_between_cnps, each leaving cnp_delay after the arrival that
// called for it. Its parameters are DcqcnConfig's min_time_between_cnps, cnp_dscp and cnp_delay;
// the reaction point that acts on the CNPs is in cc/.
#pragma once

#include <cstdint>

#include "models/net/packet.h"

namespace fabtwin {

class NotificationPoint {
 public:
  // What the NP remembers of one responder queue pair.
  struct QpState {
    bool cnp_sent = false;  // a CNP has been sent, at last_cnp
    Time last_cnp{};
    int64_t cnps = 0;
  };

  NotificationPoint() = default;
  // CNPs carry `cnp_dscp`, which the fabric's QoS map gives `cnp_priority`, and leave `delay`
  // after the arrival that called for them (CNP generation latency).
  NotificationPoint(Time min_time_between_cnps, int cnp_dscp, int cnp_priority, Time delay)
      : min_time_between_cnps_(min_time_between_cnps),
        cnp_dscp_(cnp_dscp),
        cnp_priority_(cnp_priority),
        delay_(delay) {}

  // A CE-marked data packet arrived at `now` on the queue pair of `qp`: true if a CNP is due
  // (and counted as sent).
  bool on_congestion_experienced(QpState& qp, Time now) const {
    if (qp.cnp_sent && now - qp.last_cnp < min_time_between_cnps_) return false;
    qp.cnp_sent = true;
    qp.last_cnp = now;
    ++qp.cnps;
    return true;
  }
  // Makes `c`, already addressed to the requester, a CNP.
  void write_cnp(Packet& c) const;
  // How long after the CE-marked arrival a CNP it calls for leaves.
  Time delay() const { return delay_; }

 private:
  Time min_time_between_cnps_{};
  int cnp_dscp_ = 0;
  int cnp_priority_ = 0;
  Time delay_{};
};

}  // namespace fabtwin

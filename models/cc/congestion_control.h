// The contract between a NIC's queue pair and its congestion control: the NIC reports what it
// sends and the feedback it receives, asks for the rate to pace at, and calls back at the time
// the algorithm asks for. DCTCP-style, HPCC, TIMELY or Swift plug in here without touching the
// NIC or the switch.
#pragma once

#include "sim/units.h"

namespace fabtwin {

// What a rate trace records for a queue pair.
struct CcState {
  BitsPerSec rate{};    // current rate R_C
  BitsPerSec target{};  // target rate R_T
  double alpha = 0;     // congestion estimate
  int64_t cuts = 0;     // rate decreases so far
};

class CongestionControl {
 public:
  virtual ~CongestionControl() = default;

  // The rate the NIC paces this queue pair at.
  virtual BitsPerSec rate() const = 0;
  // A data packet of `bytes` (frame bytes) went on the wire.
  virtual void on_packet_sent(int64_t bytes, Time now) = 0;
  // An ACK acknowledged new data.
  virtual void on_ack(Time now) = 0;
  // A congestion notification packet (RoCEv2 CNP) arrived for this queue pair.
  virtual void on_cnp(Time now) = 0;
  // When the algorithm next needs on_timer(); Time::max() for never.
  virtual Time next_timer() const = 0;
  virtual void on_timer(Time now) = 0;

  virtual CcState state(Time now) const = 0;
};

}  // namespace fabtwin

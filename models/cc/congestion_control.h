// The contract between a NIC's queue pair and its congestion control: the NIC reports what it
// sends and the feedback it receives (ACK records, CNPs), asks for the rate to pace at and the
// bytes it may have in flight, and calls back at the time the algorithm asks for. DCQCN, DCTCP
// and TIMELY plug in here (models/cc/algorithm.h builds one); HPCC or Swift would too, without
// touching the switch.
#pragma once

#include <cstdint>
#include <limits>
#include <span>

#include "sim/units.h"

namespace fabtwin {

// What a rate trace records for a queue pair.
struct CcState {
  BitsPerSec rate{};    // current rate R_C
  BitsPerSec target{};  // target rate R_T
  double alpha = 0;     // congestion estimate
  int64_t cuts = 0;     // rate (or window) decreases so far
};

// One switch hop's in-band telemetry (HPCC's INT record). No switch fills it yet.
struct HopTelemetry {
  Time timestamp{};         // when the packet left the hop
  int64_t queue_bytes = 0;  // egress queue length then
  int64_t tx_bytes = 0;     // bytes the egress port had sent by then
  BitsPerSec rate{};        // the egress link's rate
};

// What an ACK that acknowledges new data tells the requester's congestion control.
struct AckRecord {
  Time now{};
  Time rtt{};               // now minus the send time of the data packet that triggered the ACK
  bool ece = false;         // that data arrived CE-marked (ECN echo)
  uint32_t psn = 0;         // cumulative: every PSN below it is acknowledged
  uint32_t next_psn = 0;    // the requester's next PSN to send, when the ACK arrives
  int64_t acked_bytes = 0;  // payload bytes newly acknowledged by this ACK
  int64_t in_flight = 0;    // payload bytes sent and still unacknowledged after it
  std::span<const HopTelemetry> hops{};  // per-hop telemetry along the data's path; empty
};

class CongestionControl {
 public:
  // window() of an algorithm that does not limit the bytes in flight.
  static constexpr int64_t kUnlimitedWindow = std::numeric_limits<int64_t>::max();

  virtual ~CongestionControl() = default;

  // The rate the NIC paces this queue pair at.
  virtual BitsPerSec rate() const = 0;
  // Payload bytes the queue pair may have sent and not yet had acknowledged.
  virtual int64_t window() const { return kUnlimitedWindow; }
  // A data packet of `bytes` (frame bytes) went on the wire.
  virtual void on_packet_sent(int64_t bytes, Time now) {}
  // An ACK acknowledged new data.
  virtual void on_ack(const AckRecord& ack) {}
  // A congestion notification packet (RoCEv2 CNP) arrived for this queue pair.
  virtual void on_cnp(Time now) {}
  // When the algorithm next needs on_timer(); Time::max() for never.
  virtual Time next_timer() const { return Time::max(); }
  virtual void on_timer(Time now) {}

  virtual CcState state(Time now) const = 0;
};

}  // namespace fabtwin

// A flow: one RDMA WRITE message from a source host to a destination host, and what became of it.
#pragma once

#include <cstdint>

#include "sim/units.h"

namespace fabtwin {

struct FlowSpec {
  uint32_t id = 0;
  int src = 0;
  int dst = 0;
  Bytes size{};
  Time start{};
  int dscp = 26;  // DSCP of its packets; switches and NICs map it to a priority
};

struct FlowRecord {
  FlowSpec spec;
  bool completed = false;     // the requester saw the last ACK
  Time finish{};              // requester completion (last ACK received)
  Time last_byte_received{};  // responder received the last in-order byte
  int64_t bytes_received = 0;
  int64_t packets_sent = 0;  // data packets put on the wire, retransmissions included
  int64_t packets_retransmitted = 0;
  int64_t timeouts = 0;
  int64_t cnps_sent = 0;      // by the responder's notification point
  int64_t cnps_received = 0;  // by the requester's reaction point
  int64_t rate_cuts = 0;

  Time fct() const { return finish - spec.start; }
  // Message bits over flow completion time, bits per second.
  double goodput_bps() const {
    const double t = fct().seconds();
    return t > 0 ? static_cast<double>(spec.size.count) * 8.0 / t : 0.0;
  }
};

}  // namespace fabtwin

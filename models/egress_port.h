// The transmitting end of one direction of a full-duplex link: eight priority queues, a line
// rate, a propagation delay, the peer it feeds, and per-priority counters.
#pragma once

#include <array>
#include <cstdint>

#include "models/packet_fifo.h"
#include "models/roce_framing.h"
#include "sim/event.h"

namespace fabtwin {

inline constexpr int kPriorities = 8;

struct PriorityCounters {
  int64_t tx_packets = 0;
  int64_t tx_bytes = 0;       // frame bytes sent
  int64_t drops = 0;          // packets dropped at this egress queue
  int64_t drop_bytes = 0;
  int64_t max_queue_bytes = 0;  // deepest the queue got (frames waiting, not the one on the wire)
};

struct EgressPort {
  BitsPerSec rate{};
  int64_t ps_per_byte = 0;      // rate as whole picoseconds per byte, 0 if not a whole number
  Time delay{};                 // propagation delay to the peer
  ComponentId peer = 0;         // component at the other end
  uint32_t peer_port = 0;       // its port index
  Time busy_until{};            // the frame on the wire ends then
  bool done_scheduled = false;  // a transmit-done event is pending for busy_until
  Time busy_time{};             // total time spent serializing (utilization)

  void set_rate(BitsPerSec r) {
    rate = r;
    constexpr int64_t kBitPicoseconds = 8'000'000'000'000;
    ps_per_byte = kBitPicoseconds % r.bps == 0 ? kBitPicoseconds / r.bps : 0;
  }

  // roce::wire_time without a division when the rate allows it (all standard Ethernet rates).
  Time wire_time(int frame) const {
    if (ps_per_byte == 0) return roce::wire_time(frame, rate);
    const int bytes = (frame < roce::kMinFrameBytes ? roce::kMinFrameBytes : frame) + roce::kWireGapBytes;
    return {bytes * ps_per_byte};
  }
  std::array<PacketFifo, kPriorities> queues;
  std::array<PriorityCounters, kPriorities> counters{};

  int64_t queued_bytes() const {
    int64_t total = 0;
    for (const PacketFifo& q : queues) total += q.bytes();
    return total;
  }

  // Strict priority: the highest-numbered non-empty queue, or -1.
  int next_priority() const {
    for (int p = kPriorities - 1; p >= 0; --p) {
      if (!queues[p].empty()) return p;
    }
    return -1;
  }

  void enqueue(Packet* p) {
    PacketFifo& q = queues[p->priority];
    q.push(p);
    PriorityCounters& c = counters[p->priority];
    if (q.bytes() > c.max_queue_bytes) c.max_queue_bytes = q.bytes();
  }
};

}  // namespace fabtwin

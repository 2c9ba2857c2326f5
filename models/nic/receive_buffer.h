// The NIC's receive buffer. A NIC that takes packets off the wire slower than its link brings
// them (rx_drain_rate below the link rate: a PCIe or host bottleneck) buffers the arrivals and
// pauses the link's lossless priorities upstream (PFC) while the buffer holds rx_xoff bytes or
// more, until it is down to rx_xon.
#pragma once

#include <array>
#include <cstdint>

#include "models/net/packet_fifo.h"
#include "models/net/priority_flow_control.h"

namespace fabtwin {

class ReceiveBuffer {
 public:
  ReceiveBuffer() = default;
  // `drain_rate` 0: drains at line rate, never buffers. `pfc`: PFC on for the `lossless`
  // priorities, sent by `pause_sender`, whose port 0 is the NIC's.
  ReceiveBuffer(BitsPerSec drain_rate, int64_t xoff, int64_t xon, bool pfc,
                const std::array<bool, 8>& lossless, PauseSenders pause_sender);

  bool enabled() const { return drain_rate_.bps > 0; }
  bool empty() const { return fifo_.empty(); }
  // Buffers arriving data packet `p`; true if it is the only one (its drain is to be timed).
  bool push(Packet* p);
  // Takes the head, drained.
  Packet* pop() { return fifo_.pop().packet; }
  // How long the head takes to drain.
  Time head_drain_time() const;

  // PFC: whether `priority` is to be paused upstream now (the buffer reached rx_xoff) or
  // resumed (it is down to rx_xon), and the sender of the pause frames.
  bool should_pause(int priority) const {
    return pfc_ && lossless_[priority] && !pause_sender_.pausing(0, priority) &&
           fifo_.bytes() >= xoff_;
  }
  // Pausing, still at rx_xoff or more, and the last XOFF has run out at the peer.
  bool lapsed(int priority, Time now) const {
    return pause_sender_.pausing(0, priority) && fifo_.bytes() >= xoff_ &&
           pause_sender_.lapsed(0, priority, now);
  }
  bool should_resume(int priority) const {
    return pause_sender_.pausing(0, priority) && fifo_.bytes() <= xon_;
  }
  PauseSenders& pause_sender() { return pause_sender_; }

 private:
  BitsPerSec drain_rate_{};
  int64_t xoff_ = 0;
  int64_t xon_ = 0;
  bool pfc_ = false;
  std::array<bool, 8> lossless_{};
  PacketFifo fifo_;
  PauseSenders pause_sender_;
};

}  // namespace fabtwin

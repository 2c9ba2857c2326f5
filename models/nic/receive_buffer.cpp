#include "models/nic/receive_buffer.h"

#include <utility>

#include "models/net/roce_framing.h"

namespace fabtwin {

ReceiveBuffer::ReceiveBuffer(BitsPerSec drain_rate, int64_t xoff, int64_t xon, bool pfc,
                             const std::array<bool, 8>& lossless, PauseSenders pause_sender)
    : drain_rate_(drain_rate),
      xoff_(xoff),
      xon_(xon),
      pfc_(pfc),
      lossless_(lossless),
      pause_sender_(std::move(pause_sender)) {}

bool ReceiveBuffer::push(Packet* p) {
  const bool first = fifo_.empty();
  fifo_.push(p);
  return first;
}

Time ReceiveBuffer::head_drain_time() const {
  return roce::wire_time(fifo_.front().frame, drain_rate_);
}

}  // namespace fabtwin

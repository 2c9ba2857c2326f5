// A FIFO of queued packets on a power-of-two ring that only grows: no allocation per packet.
// Each entry keeps the frame length beside the pointer, so serving a queue never touches the
// packet itself (it may have left the cache long ago).
#pragma once

#include <cassert>
#include <cstddef>
#include <vector>

#include "models/net/packet.h"

namespace fabtwin {

struct QueuedPacket {
  Packet* packet;
  int32_t frame;
  uint16_t ingress;  // port it arrived on (the switch's buffer accounts it there)
  // The priority it arrived with, its ingress priority group: the queue's own priority unless
  // the switch rewrote it (routing.priority_rewrite).
  uint8_t ingress_priority;
};

class PacketFifo {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  int64_t bytes() const { return bytes_; }
  const QueuedPacket& front() const {
    assert(size_ > 0);
    return ring_[head_];
  }

  // The i-th entry from the head (read-only; for inspection between events).
  const QueuedPacket& at(size_t i) const {
    assert(i < size_);
    return ring_[(head_ + i) & (ring_.size() - 1)];
  }

  void push(Packet* p, uint16_t ingress = 0, uint8_t ingress_priority = 0) {
    if (size_ == ring_.size()) grow();
    ring_[(head_ + size_) & (ring_.size() - 1)] = {p, p->frame, ingress, ingress_priority};
    ++size_;
    bytes_ += p->frame;
  }

  QueuedPacket pop() {
    assert(size_ > 0);
    const QueuedPacket q = ring_[head_];
    head_ = static_cast<uint32_t>((head_ + 1) & (ring_.size() - 1));
    --size_;
    bytes_ -= q.frame;
    return q;
  }

 private:
  void grow() {
    std::vector<QueuedPacket> bigger(ring_.empty() ? 16 : ring_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_.swap(bigger);
    head_ = 0;
  }
  std::vector<QueuedPacket> ring_;
  // 32-bit: a fabric has eight queues at each of its ports, and no queue holds 2^32 frames.
  uint32_t head_ = 0;
  uint32_t size_ = 0;
  int64_t bytes_ = 0;
};

}  // namespace fabtwin

// A FIFO of queued packets on a power-of-two ring that only grows: no allocation per packet.
// Each entry keeps the frame length beside the pointer, so serving a queue never touches the
// packet itself (it may have left the cache long ago): nor does marking it, which needs to know
// whether it is ECN-capable. The ring's next line is prefetched a few entries ahead at both ends,
// as the queues of a fabric's ports take turns and each walks its own ring.
#pragma once

#include <cassert>
#include <cstddef>
#include <memory>

#include "models/net/packet.h"

namespace fabtwin {

struct QueuedPacket {
  Packet* packet;
  int32_t frame;
  uint16_t ingress;  // port it arrived on (the switch's buffer accounts it there)
  // The priority it arrived with, its ingress priority group: the queue's own priority unless
  // the switch rewrote it (routing.priority_rewrite).
  uint8_t ingress_priority;
  bool ect;  // ECN-capable transport (not Not-ECT) when it was queued
};
static_assert(sizeof(QueuedPacket) == 16);

class PacketFifo {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  int64_t bytes() const { return bytes_; }
  const QueuedPacket& front() const {
    assert(size_ > 0);
    return ring_[head_];
  }

  // The i-th queued entry from the front (0 = front).
  const QueuedPacket& at(size_t i) const {
    assert(i < size_);
    return ring_[(head_ + i) & mask_];
  }

  void push(Packet* p, uint16_t ingress = 0, uint8_t ingress_priority = 0) {
    if (size_ == capacity_) [[unlikely]]
      grow();
    const uint32_t tail = (head_ + size_) & mask_;
    ring_[tail] = {p, p->frame, ingress, ingress_priority, is_ect(p)};
    __builtin_prefetch(&ring_[(tail + kAhead) & mask_], 1);
    ++size_;
    bytes_ += p->frame;
  }

  QueuedPacket pop() {
    assert(size_ > 0);
    const QueuedPacket q = ring_[head_];
    head_ = (head_ + 1) & mask_;
    __builtin_prefetch(&ring_[(head_ + kAhead) & mask_]);
    --size_;
    bytes_ -= q.frame;
    return q;
  }

 private:
  static constexpr uint32_t kAhead = 4;  // entries: one cache line
  [[gnu::noinline]] void grow() {
    const uint32_t n = capacity_ == 0 ? 16 : 2 * capacity_;
    auto bigger = std::make_unique<QueuedPacket[]>(n);
    for (uint32_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & mask_];
    ring_ = std::move(bigger);
    mask_ = n - 1;
    capacity_ = n;
    head_ = 0;
  }
  // 32 bytes in all: a fabric has eight of these at each of its ports, and no queue holds 2^32
  // frames.
  std::unique_ptr<QueuedPacket[]> ring_;
  uint32_t mask_ = 0;  // ring size - 1
  uint32_t head_ = 0;
  uint32_t size_ = 0;
  uint32_t capacity_ = 0;  // ring size, 0 while none is allocated (the first push grows it)
  int64_t bytes_ = 0;
};
static_assert(sizeof(PacketFifo) == 32);

}  // namespace fabtwin

// A FIFO of packet pointers on a power-of-two ring that only grows: no allocation per packet.
#pragma once

#include <cassert>
#include <cstddef>
#include <vector>

#include "models/packet.h"

namespace fabtwin {

class PacketFifo {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  int64_t bytes() const { return bytes_; }
  Packet* front() const {
    assert(size_ > 0);
    return ring_[head_];
  }

  void push(Packet* p) {
    if (size_ == ring_.size()) grow();
    ring_[(head_ + size_) & (ring_.size() - 1)] = p;
    ++size_;
    bytes_ += p->frame;
  }

  Packet* pop() {
    assert(size_ > 0);
    Packet* p = ring_[head_];
    head_ = (head_ + 1) & (ring_.size() - 1);
    --size_;
    bytes_ -= p->frame;
    return p;
  }

 private:
  void grow() {
    std::vector<Packet*> bigger(ring_.empty() ? 16 : ring_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_.swap(bigger);
    head_ = 0;
  }
  std::vector<Packet*> ring_;
  size_t head_ = 0;
  size_t size_ = 0;
  int64_t bytes_ = 0;
};

}  // namespace fabtwin

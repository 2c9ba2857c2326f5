#include "models/net/packet.h"

#include <cstdlib>
#include <new>

#include "sim/huge_pages.h"

namespace fabtwin {

void PacketPool::FreeBlock::operator()(Packet* block) const {
  if (huge_bytes > 0) {
    unmap_huge_pages(block, huge_bytes);
  } else {
    std::free(block);
  }
}

void PacketPool::grow() {
  const bool huge = !blocks_.empty();
  const size_t count = huge ? kHugePageBytes / sizeof(Packet) : kFirstBlock;
  const size_t bytes = count * sizeof(Packet);
  void* memory = huge ? map_huge_pages(bytes) : std::aligned_alloc(alignof(Packet), bytes);
  if (memory == nullptr) throw std::bad_alloc();
  Packet* block = std::uninitialized_value_construct_n(static_cast<Packet*>(memory), count) - count;
  blocks_.emplace_back(block, FreeBlock{huge ? bytes : 0});
  for (size_t i = 0; i < count; ++i) {
    block[i].next_free = free_;
    free_ = &block[i];
  }
  capacity_ += static_cast<int64_t>(count);
}

void PacketPool::return_later(Packet* p) {
  if (p->home >= returns_.size()) returns_.resize(p->home + size_t{1});  // a lane's
  ReturnBox& box = returns_[p->home];
  p->next_free = box.head;
  if (box.head == nullptr) box.tail = p;
  box.head = p;
  ++box.count;
}

void PacketPool::return_packets(std::deque<PacketPool>& pools) {
  for (PacketPool& from : pools) {
    for (size_t home = 0; home < from.returns_.size(); ++home) {
      ReturnBox& box = from.returns_[home];
      if (box.head == nullptr) continue;
      PacketPool& to = pools[home];
      box.tail->next_free = to.free_;
      to.free_ = box.head;
      to.in_use_ -= box.count;
      box = ReturnBox{};
    }
  }
}

}  // namespace fabtwin

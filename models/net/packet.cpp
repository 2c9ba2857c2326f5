#include "models/net/packet.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace fabtwin {

void PacketPool::FreeBlock::operator()(Packet* block) const {
  std::free(block);
}

void PacketPool::grow() {
  const bool huge = !blocks_.empty();
  const size_t count = huge ? kHugePage / sizeof(Packet) : kFirstBlock;
  const size_t bytes = count * sizeof(Packet);
  void* memory = std::aligned_alloc(huge ? kHugePage : alignof(Packet), bytes);
  if (memory == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (huge) madvise(memory, bytes, MADV_HUGEPAGE);  // a hint: without it, 4 KiB pages
#endif
  Packet* block = std::uninitialized_value_construct_n(static_cast<Packet*>(memory), count) - count;
  blocks_.emplace_back(block);
  for (size_t i = 0; i < count; ++i) {
    block[i].next_free = free_;
    free_ = &block[i];
  }
  capacity_ += static_cast<int64_t>(count);
}

void PacketPool::return_packets(std::vector<PacketPool>& pools) {
  for (PacketPool& from : pools) {
    for (size_t home = 0; home < from.returns_.size(); ++home) {
      for (Packet* p : from.returns_[home]) pools[home].release(p);
      from.returns_[home].clear();
    }
  }
}

}  // namespace fabtwin

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
  static_assert(kFirstBlock % kBatch == 0 && kHugePageBytes / sizeof(Packet) % kBatch == 0);
  // Whole batches, the first packets of the block first.
  for (size_t b = count / kBatch; b-- > 0;) {
    Packet* batch = block + b * kBatch;
    for (uint32_t i = 0; i + 1 < kBatch; ++i) batch[i].next_free = &batch[i + 1];
    batches_.push_back(batch);
  }
  capacity_ += static_cast<int64_t>(count);
}

void PacketPool::refill() {
  if (batches_.empty()) grow();
  free_ = batches_.back();
  batches_.pop_back();
  free_count_ = kBatch;
}

void PacketPool::store_batch() {
  batches_.push_back(free_);
  free_ = nullptr;
  free_count_ = 0;
}

void PacketPool::balance(std::deque<PacketPool>& pools) {
  // Batches each pool wants for the next window, and those it can spare beyond that.
  const auto wanted = [](const PacketPool& pool) {
    return static_cast<size_t>((2 * pool.taken_ + kBatch - 1) / kBatch);
  };
  size_t donor = 0;
  for (PacketPool& to : pools) {
    const size_t want = wanted(to);
    while (to.batches_.size() < want) {
      while (donor < pools.size() && pools[donor].batches_.size() <= wanted(pools[donor]) + 1) {
        ++donor;
      }
      if (donor == pools.size()) break;
      to.batches_.push_back(pools[donor].batches_.back());
      pools[donor].batches_.pop_back();
    }
  }
  for (PacketPool& pool : pools) pool.taken_ = 0;
}

}  // namespace fabtwin

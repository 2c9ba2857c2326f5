#include "models/net/packet.h"

namespace fabtwin {

void PacketPool::grow() {
  chunks_.push_back(std::make_unique<Packet[]>(kChunk));
  Packet* chunk = chunks_.back().get();
  for (size_t i = 0; i < kChunk; ++i) {
    chunk[i].next_free = free_;
    free_ = &chunk[i];
  }
  capacity_ += kChunk;
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

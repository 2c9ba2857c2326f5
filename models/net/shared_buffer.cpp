#include "models/net/shared_buffer.h"

#include <algorithm>
#include <cmath>

namespace fabtwin {

SharedBuffer::SharedBuffer(const MmuConfig& config, std::vector<int64_t> headroom,
                           bool groups_change_queue)
    : config_(config), headroom_(std::move(headroom)) {
  const size_t ports = headroom_.size();
  groups_.resize(ports * kPriorityGroups);
  egress_.resize(ports * kPriorityGroups);
  for (int pg = 0; pg < kPriorityGroups; ++pg) {
    if (config_.lossless[pg]) continue;
    // A lossy group enters its own queue, or any where priorities are rewritten.
    counted_queues_ |= groups_change_queue ? uint8_t{0xFF} : static_cast<uint8_t>(1u << pg);
  }
  set_aside_ = set_aside(config_, headroom_);
  alpha_fixed_ = std::llround(config_.alpha * 65536.0);
  egress_alpha_fixed_ = std::llround(config_.egress_alpha * 65536.0);
  shared_pool_ = std::max<int64_t>(0, config_.buffer - set_aside_);
}

int64_t SharedBuffer::set_aside(const MmuConfig& config, const std::vector<int64_t>& headroom) {
  int64_t bytes = static_cast<int64_t>(headroom.size()) * kPriorityGroups * config.reserve;
  for (const int64_t port_headroom : headroom) {
    for (int pg = 0; pg < kPriorityGroups; ++pg) {
      if (config.lossless[pg]) bytes += port_headroom;
    }
  }
  return bytes;
}

}  // namespace fabtwin

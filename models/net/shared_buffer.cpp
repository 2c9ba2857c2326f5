#include "models/net/shared_buffer.h"

#include <algorithm>
#include <cmath>

namespace fabtwin {

SharedBuffer::SharedBuffer(const MmuConfig& config, std::vector<int64_t> headroom)
    : config_(config), headroom_(std::move(headroom)) {
  const size_t ports = headroom_.size();
  groups_.resize(ports * kPriorityGroups);
  egress_.resize(ports * kPriorityGroups);
  int64_t set_aside = static_cast<int64_t>(ports) * kPriorityGroups * config_.reserve;
  for (size_t p = 0; p < ports; ++p) {
    for (int pg = 0; pg < kPriorityGroups; ++pg) {
      if (config_.lossless[pg]) set_aside += headroom_[p];
    }
  }
  set_aside_ = set_aside;
  alpha_fixed_ = std::llround(config_.alpha * 65536.0);
  egress_alpha_fixed_ = std::llround(config_.egress_alpha * 65536.0);
  shared_pool_ = std::max<int64_t>(0, config_.buffer - set_aside);
}

}  // namespace fabtwin

#include "models/shared_buffer.h"

#include <algorithm>

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
  shared_pool_ = std::max<int64_t>(0, config_.buffer - set_aside);
}

int64_t SharedBuffer::threshold() const {
  if (!config_.dynamic) return config_.static_xoff;
  return static_cast<int64_t>(config_.alpha * static_cast<double>(shared_pool_ - shared_used_));
}

int64_t SharedBuffer::group_shared(int port, int pg) const { return shared_part(group(port, pg).bytes); }

Admission SharedBuffer::admit(int in_port, int pg, int out_port, int queue, int64_t bytes) {
  Group& g = group(in_port, pg);
  int64_t& egress = egress_[static_cast<size_t>(out_port) * kPriorityGroups + queue];
  const int64_t extra_shared = shared_part(g.bytes + bytes) - shared_part(g.bytes);
  const bool fits_pool = shared_used_ + extra_shared <= shared_pool_;
  if (config_.lossless[pg]) {
    if (extra_shared == 0 || (fits_pool && shared_part(g.bytes) < threshold())) {
      g.bytes += bytes;
      shared_used_ += extra_shared;
    } else if (g.headroom + bytes <= headroom_[in_port]) {
      g.headroom += bytes;
    } else {
      return Admission::HeadroomOverflow;
    }
  } else {
    const auto limit = static_cast<int64_t>(config_.egress_alpha *
                                            static_cast<double>(shared_pool_ - shared_used_));
    if (extra_shared > 0 && (!fits_pool || egress >= limit)) return Admission::EgressLimit;
    g.bytes += bytes;
    shared_used_ += extra_shared;
  }
  egress += bytes;
  used_ += bytes;
  max_used_ = std::max(max_used_, used_);
  return Admission::Admitted;
}

void SharedBuffer::release(int in_port, int pg, int out_port, int queue, int64_t bytes) {
  Group& g = group(in_port, pg);
  const int64_t from_headroom = std::min(g.headroom, bytes);
  g.headroom -= from_headroom;
  const int64_t rest = bytes - from_headroom;
  shared_used_ -= shared_part(g.bytes) - shared_part(g.bytes - rest);
  g.bytes -= rest;
  egress_[static_cast<size_t>(out_port) * kPriorityGroups + queue] -= bytes;
  used_ -= bytes;
}

bool SharedBuffer::should_pause(int in_port, int pg) const {
  const Group& g = group(in_port, pg);
  return g.headroom > 0 || shared_part(g.bytes) >= threshold();
}

bool SharedBuffer::should_resume(int in_port, int pg) const {
  const Group& g = group(in_port, pg);
  const int64_t shared = shared_part(g.bytes);
  return g.headroom == 0 && (shared == 0 || shared + config_.xon_offset <= threshold());
}

}  // namespace fabtwin

// A switch's shared-buffer memory management unit (MMU). Lossless priorities are admitted and
// accounted at ingress, per (ingress port, priority group): a reserved minimum, then the shared
// pool up to a static or dynamic (Choudhury-Hahne) threshold, then the PFC headroom; the same
// threshold decides XOFF and XON. Lossy priorities are limited at egress, per (egress port,
// queue), by a dynamic threshold on the free shared pool, and dropped beyond it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fabtwin {

inline constexpr int kPriorityGroups = 8;

struct MmuConfig {
  std::array<bool, kPriorityGroups> lossless{};  // first: a switch reads it for every frame
  int64_t buffer = 0;                            // total packet buffer, bytes
  int64_t reserve = 0;        // guaranteed minimum per (ingress port, priority group), bytes
  bool dynamic = true;        // dynamic threshold; false: static XOFF threshold
  double alpha = 1.0;         // dynamic threshold factor for ingress priority groups
  int64_t static_xoff = 0;    // static threshold on a group's shared bytes
  int64_t xon_offset = 0;     // XON when shared bytes fall this far below the threshold
  double egress_alpha = 1.0;  // dynamic threshold factor for lossy egress queues

  bool operator==(const MmuConfig&) const = default;
};

enum class Admission : uint8_t {
  Admitted,
  HeadroomOverflow,  // lossless: shared space and headroom exhausted (a configuration error)
  EgressLimit,       // lossy: the egress queue is at its dynamic threshold
};

class alignas(64) SharedBuffer {
 public:
  // `headroom[port]` is the headroom of each lossless priority group of that ingress port.
  // `groups_change_queue`: a frame may leave in a queue other than its priority group (the
  // switch rewrites priorities), so a lossy group's frames may share any queue.
  SharedBuffer(const MmuConfig& config, std::vector<int64_t> headroom,
               bool groups_change_queue = false);

  // Bytes a switch of `config` with ports of `headroom` sets aside before the shared pool: every
  // group's reserve and every lossless group's headroom. A buffer smaller than this cannot work.
  static int64_t set_aside(const MmuConfig& config, const std::vector<int64_t>& headroom);

  int64_t set_aside() const { return set_aside_; }

  // Accounts a frame arriving on (in_port, pg) for egress queue (out_port, queue).
  Admission admit(int in_port, int pg, int out_port, int queue, int64_t bytes);
  // Returns a frame's bytes when it leaves the switch (headroom first, as HPCC's ns-3 MMU does).
  void release(int in_port, int pg, int out_port, int queue, int64_t bytes);

  // PFC decisions for a lossless group: pause upstream when the group spills into headroom or
  // reaches the threshold; resume once headroom is empty and it is xon_offset below.
  bool should_pause(int in_port, int pg) const;
  bool should_resume(int in_port, int pg) const;

  int64_t size() const { return config_.buffer; }
  int64_t shared_pool() const { return shared_pool_; }
  int64_t shared_used() const { return shared_used_; }
  int64_t used() const { return used_; }
  int64_t max_used() const { return max_used_; }
  int64_t headroom_of(int port) const { return headroom_[port]; }
  int64_t group_shared(int port, int pg) const;
  int64_t group_headroom(int port, int pg) const { return group(port, pg).headroom; }
  // Current ingress threshold on a group's shared bytes.
  int64_t threshold() const;

 private:
  // The accounting of one (ingress port, priority group).
  struct PriorityGroup {
    int64_t bytes = 0;     // reserved + shared bytes held
    int64_t headroom = 0;  // headroom bytes held
  };
  PriorityGroup& group(int port, int pg) {
    return groups_[static_cast<size_t>(port) * kPriorityGroups + pg];
  }
  const PriorityGroup& group(int port, int pg) const {
    return groups_[static_cast<size_t>(port) * kPriorityGroups + pg];
  }
  int64_t& egress(int port, int queue) {
    return egress_[static_cast<size_t>(port) * kPriorityGroups + queue];
  }
  int64_t shared_part(int64_t bytes) const {
    return bytes > config_.reserve ? bytes - config_.reserve : 0;
  }

  // What every frame reads is on the object's first two cache lines: the groups and the pool's
  // state, then the configuration (a switch's lines are not kept cached between its frames in a
  // large fabric).
  std::vector<PriorityGroup> groups_;
  int64_t shared_pool_ = 0;
  int64_t shared_used_ = 0;
  int64_t used_ = 0;
  int64_t max_used_ = 0;
  // Threshold factors in 16.16 fixed point, so a threshold is an integer multiply and shift.
  int64_t alpha_fixed_ = 0;
  MmuConfig config_;
  // Bytes per (egress port, queue), read only to admit lossy groups' frames, so kept only for
  // the queues those may enter (bit q of counted_queues_): lossless traffic in a switch that
  // keeps priorities touches no egress counter.
  uint8_t counted_queues_ = 0;
  std::vector<int64_t> egress_;
  int64_t egress_alpha_fixed_ = 0;
  std::vector<int64_t> headroom_;
  int64_t set_aside_ = 0;
};

// The per-frame operations are inline: they run twice for every frame a switch forwards.
inline int64_t SharedBuffer::threshold() const {
  if (!config_.dynamic) return config_.static_xoff;
  return static_cast<int64_t>((static_cast<__int128>(shared_pool_ - shared_used_) * alpha_fixed_) >>
                              16);
}

inline int64_t SharedBuffer::group_shared(int port, int pg) const {
  return shared_part(group(port, pg).bytes);
}

inline Admission SharedBuffer::admit(int in_port, int pg, int out_port, int queue, int64_t bytes) {
  PriorityGroup& g = group(in_port, pg);
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
    const auto limit = static_cast<int64_t>(
        (static_cast<__int128>(shared_pool_ - shared_used_) * egress_alpha_fixed_) >> 16);
    if (extra_shared > 0 && (!fits_pool || egress(out_port, queue) >= limit)) {
      return Admission::EgressLimit;
    }
    g.bytes += bytes;
    shared_used_ += extra_shared;
  }
  if (counted_queues_ >> queue & 1) egress(out_port, queue) += bytes;
  used_ += bytes;
  max_used_ = std::max(max_used_, used_);
  return Admission::Admitted;
}

inline void SharedBuffer::release(int in_port, int pg, int out_port, int queue, int64_t bytes) {
  PriorityGroup& g = group(in_port, pg);
  const int64_t from_headroom = std::min(g.headroom, bytes);
  g.headroom -= from_headroom;
  const int64_t rest = bytes - from_headroom;
  shared_used_ -= shared_part(g.bytes) - shared_part(g.bytes - rest);
  g.bytes -= rest;
  if (counted_queues_ >> queue & 1) egress(out_port, queue) -= bytes;
  used_ -= bytes;
}

inline bool SharedBuffer::should_pause(int in_port, int pg) const {
  const PriorityGroup& g = group(in_port, pg);
  return g.headroom > 0 || shared_part(g.bytes) >= threshold();
}

inline bool SharedBuffer::should_resume(int in_port, int pg) const {
  const PriorityGroup& g = group(in_port, pg);
  const int64_t shared = shared_part(g.bytes);
  return g.headroom == 0 && (shared == 0 || shared + config_.xon_offset <= threshold());
}

}  // namespace fabtwin

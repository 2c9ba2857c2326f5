// RED/ECN marking at a switch egress queue, as DCQCN's congestion point uses it: no marks below
// Kmin, a probability rising linearly to Pmax at Kmax, every ECN-capable packet marked above.
#pragma once

#include <cstdint>

#include "sim/rng.h"

namespace fabtwin {

struct RedMarking {
  int64_t kmin = 0;  // bytes
  int64_t kmax = 0;  // bytes
  double pmax = 0;   // marking probability at Kmax

  double probability(int64_t queue_bytes) const {
    if (queue_bytes <= kmin) return 0.0;
    if (queue_bytes >= kmax) return 1.0;
    return pmax * static_cast<double>(queue_bytes - kmin) / static_cast<double>(kmax - kmin);
  }

  // The marking decision for one packet at `queue_bytes`; draws from `rng` only between Kmin
  // and Kmax, so runs whose queues stay short draw nothing.
  bool should_mark(int64_t queue_bytes, Rng& rng) const {
    if (queue_bytes <= kmin) return false;
    if (queue_bytes >= kmax) return true;
    return rng.uniform() < probability(queue_bytes);
  }

  bool operator==(const RedMarking&) const = default;
};

}  // namespace fabtwin

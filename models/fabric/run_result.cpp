#include "models/fabric/run_result.h"

#include <algorithm>

namespace fabtwin {

int64_t PortRecord::tx_packets() const {
  return total(&PriorityCounters::tx_packets);
}
int64_t PortRecord::tx_bytes() const {
  return total(&PriorityCounters::tx_bytes);
}
int64_t PortRecord::drops() const {
  return total(&PriorityCounters::drops);
}
int64_t PortRecord::max_queue_bytes() const {
  int64_t m = 0;
  for (const PriorityCounters& c : counters) m = std::max(m, c.max_queue_bytes);
  return m;
}

}  // namespace fabtwin

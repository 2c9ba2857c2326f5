#include "models/run_result.h"

#include <algorithm>

namespace fabtwin {

int64_t PortRecord::tx_packets() const {
  int64_t n = 0;
  for (const PriorityCounters& c : counters) n += c.tx_packets;
  return n;
}
int64_t PortRecord::tx_bytes() const {
  int64_t n = 0;
  for (const PriorityCounters& c : counters) n += c.tx_bytes;
  return n;
}
int64_t PortRecord::drops() const {
  int64_t n = 0;
  for (const PriorityCounters& c : counters) n += c.drops;
  return n;
}
int64_t PortRecord::max_queue_bytes() const {
  int64_t m = 0;
  for (const PriorityCounters& c : counters) m = std::max(m, c.max_queue_bytes);
  return m;
}

}  // namespace fabtwin

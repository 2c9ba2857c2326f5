#include "models/fabric/run_result.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace fabtwin {

const PortCounters::Array& PortCounters::zeros() {
  static const Array zeros{};
  return zeros;
}

PortCounters& PortCounters::operator=(const Array& counters) {
  static_assert(std::has_unique_object_representations_v<PriorityCounters>,
                "compared byte by byte");
  if (std::memcmp(counters.data(), zeros().data(), sizeof(Array)) == 0) {
    all_.reset();
  } else {
    all_ = std::make_unique<Array>(counters);
  }
  return *this;
}

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

#include "hw/observe/counter_value.h"

namespace fabtwin::hw {

int counter_wrap_bits(const std::string& source, const std::string& counter) {
  if (source != "sysfs" || !counter.starts_with("hw_counters/")) return 64;
  const std::string name = counter.substr(std::string("hw_counters/").size());
  // The congestion counters come from QUERY_CONG_STATISTICS as 64-bit values; the rest of the
  // directory are queue counters the kernel reads as 32-bit values.
  const bool congestion = name.starts_with("np_") || name.starts_with("rp_");
  return congestion ? 64 : 32;
}

CounterDelta counter_delta(uint64_t before, uint64_t after, int bits) {
  if (after >= before) return {after - before, DeltaKind::Plain};
  constexpr uint64_t kMax32 = 0xffffffffULL;
  if (bits == 32 && before <= kMax32 && after <= kMax32) {
    return {(kMax32 - before) + after + 1, DeltaKind::Wrapped};
  }
  return {after, DeltaKind::Reset};
}

const char* delta_kind_name(DeltaKind kind) {
  switch (kind) {
    case DeltaKind::Plain:
      return "";
    case DeltaKind::Wrapped:
      return "wrapped";
    case DeltaKind::Reset:
      return "reset";
  }
  return "";
}

}  // namespace fabtwin::hw

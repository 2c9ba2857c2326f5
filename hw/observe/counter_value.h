// One reading of one hardware counter, and the difference of two readings of it. The mlx5
// queue counters under hw_counters/ are read by the kernel as 32-bit values and wrap at 2^32
// (docs/references.md §10.3); the congestion counters, the port counters under counters/ and the
// ethtool statistics are 64-bit. A smaller second reading of a 64-bit counter means it was
// cleared between the readings.
#pragma once

#include <cstdint>
#include <string>

namespace fabtwin::hw {

struct CounterValue {
  std::string source;   // "sysfs" or "ethtool"
  std::string device;   // "mlx5_0/1" (RDMA device/port) or the network interface, "eth2"
  std::string counter;  // "hw_counters/np_cnp_sent", "counters/port_xmit_data", "rx_prio3_pause"
  uint64_t value = 0;
};

// How the difference of two readings was taken.
enum class DeltaKind : uint8_t {
  Plain,    // after - before
  Wrapped,  // a 32-bit counter passed 2^32 once: after + 2^32 - before
  Reset,    // the counter went back (cleared): counted from zero, `after`
};

struct CounterDelta {
  uint64_t delta = 0;
  DeltaKind kind = DeltaKind::Plain;
};

// The width at which `counter` of `source` wraps: 32 for the mlx5 queue counters of
// hw_counters/, 64 for everything else.
int counter_wrap_bits(const std::string& source, const std::string& counter);

// after - before, wrap-aware for `bits`-wide counters.
CounterDelta counter_delta(uint64_t before, uint64_t after, int bits);

const char* delta_kind_name(DeltaKind kind);  // "", "wrapped", "reset"

}  // namespace fabtwin::hw

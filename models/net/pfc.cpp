#include "models/net/pfc.h"

#include <algorithm>

namespace fabtwin::pfc {

int64_t mlx5_headroom(BitsPerSec rate, Time propagation_delay, int64_t mtu_frame_bytes) {
  // The driver's integer arithmetic, with speed in Mb/s and the cable in whole metres.
  const int64_t cable_m = propagation_delay.ps / 5000;  // 5 ns per metre of fibre
  const int64_t speed_mbps = std::max<int64_t>(40'000, rate.bps / 1'000'000);
  return (301 + 216 * cable_m / 100) * speed_mbps / 1000 + 272 * mtu_frame_bytes / 100;
}

}  // namespace fabtwin::pfc

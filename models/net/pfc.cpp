#include "models/net/pfc.h"

#include <algorithm>

namespace fabtwin::pfc {

int64_t mlx5_headroom(BitsPerSec rate, Time propagation_delay, int64_t mtu_frame_bytes) {
  // The driver's integer arithmetic, with speed in Mb/s and the cable in whole metres; in 128
  // bits, and capped, so that an absurd cable gives an absurd headroom (which the buffer check
  // then refuses), never a wrapped small one.
  const __int128 cable_m = propagation_delay.ps / 5000;  // 5 ns per metre of fibre
  const __int128 speed_mbps = std::max<int64_t>(40'000, rate.bps / 1'000'000);
  const __int128 bytes =
      (301 + 216 * cable_m / 100) * speed_mbps / 1000 + 272 * __int128{mtu_frame_bytes} / 100;
  return static_cast<int64_t>(std::min<__int128>(bytes, kMaxHeadroom));
}

}  // namespace fabtwin::pfc

// IEEE 802.1Qbb priority flow control: pause-quantum arithmetic and headroom sizing.
#pragma once

#include <cstdint>

#include "sim/units.h"

namespace fabtwin::pfc {

// A PFC frame is a minimum-size MAC control frame (64 B with FCS).
inline constexpr int kFrameBytes = 64;
// One pause quantum lasts 512 bit times at the link's rate; a frame can ask for 0..65535.
inline constexpr int kBitsPerQuantum = 512;
inline constexpr int kMaxQuanta = 65535;

// How long `quanta` pause quanta last on a link of `rate` (rounded up to a picosecond):
// 65535 quanta are 335.5 us at 100 Gb/s, 1.342 ms at 25 Gb/s, 83.9 us at 400 Gb/s.
constexpr Time pause_duration(int quanta, BitsPerSec rate) {
  return serialization_delay(Bytes{static_cast<int64_t>(quanta) * kBitsPerQuantum / 8}, rate);
}

// Half the time `quanta` last at `rate`, at least 1 ps: an XOFF re-sent this often keeps the
// upstream paused with time to spare.
constexpr Time half_pause_duration(int quanta, BitsPerSec rate) {
  const Time full = pause_duration(quanta, rate);
  return Time{full.ps / 2 > 1 ? full.ps / 2 : 1};
}

// Headroom (bytes) a lossless priority needs to absorb what is still in flight after XOFF is
// decided: the NVIDIA mlx5 driver's calculate_xoff() rule,
//   (301 + 2.16 x cable_length[m]) x speed[Gb/s] + 2.72 x MTU[B],  speed floored at 40 Gb/s.
// It covers the cable round trip, a frame the sender may have started, and the frame the PAUSE
// waits behind. The cable length is taken from the link's propagation delay at 5 ns/m.
int64_t mlx5_headroom(BitsPerSec rate, Time propagation_delay, int64_t mtu_frame_bytes);
// The largest headroom mlx5_headroom gives (2^40 B): far beyond any buffer, small enough that a
// switch's sum over its ports and groups cannot overflow.
inline constexpr int64_t kMaxHeadroom = int64_t{1} << 40;

}  // namespace fabtwin::pfc

// RoCEv2 framing: which header bytes a frame carries and what the wire adds around it.
#pragma once

#include "sim/units.h"

namespace fabtwin::roce {

// Ethernet header 14 + FCS 4: what a frame adds to the IP packet an Ethernet MTU counts.
inline constexpr int kEthernetBytes = 14 + 4;
// Ethernet 14 + IPv4 20 + UDP 8 + InfiniBand BTH 12 + ICRC 4 + FCS 4 (no VLAN tag).
inline constexpr int kHeaderBytes = 14 + 20 + 8 + 12 + 4 + 4;
// RETH (16 B) on the first packet of an RDMA WRITE carries the remote address and length; a
// SEND has none (the responder places it where its receive WQE points).
inline constexpr int kRethBytes = 16;
// AETH (4 B) on ACK and NAK packets.
inline constexpr int kAethBytes = 4;
// Preamble + SFD (8 B) and the minimum inter-frame gap (12 B) occupy the wire between frames.
inline constexpr int kWireGapBytes = 8 + 12;
// Smallest Ethernet frame (including FCS).
inline constexpr int kMinFrameBytes = 64;

// Frame bytes of a data packet carrying `payload` bytes (`first_of_message`: of a WRITE, with
// its RETH).
constexpr int data_frame(int payload, bool first_of_message) {
  return kHeaderBytes + payload + (first_of_message ? kRethBytes : 0);
}
constexpr int ack_frame() {
  return kHeaderBytes + kAethBytes;
}
// A RoCEv2 CNP: BTH followed by 16 reserved bytes.
constexpr int cnp_frame() {
  return kHeaderBytes + 16;
}

// Time a frame occupies a link of `rate`, including preamble and inter-frame gap.
constexpr Time wire_time(int frame_bytes, BitsPerSec rate) {
  const int on_wire = (frame_bytes < kMinFrameBytes ? kMinFrameBytes : frame_bytes) + kWireGapBytes;
  return serialization_delay(Bytes{on_wire}, rate);
}

}  // namespace fabtwin::roce

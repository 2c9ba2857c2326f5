// Checks of the fields a peer sends over the control network before the verbs transport uses
// them: a queue pair number or packet sequence number outside InfiniBand's 24 bits, or a
// remote region (address, length, rkey) that does not lie inside the region the peer
// advertised for that connection, ends the run with ControlError naming the peer and the
// field. Sizes are never taken from a peer: how much is written where comes from the local
// plan, and the peer's advertisement only has to cover it.
#pragma once

#include <cstdint>
#include <string>

namespace fabtwin::hw {

inline constexpr uint64_t kMax24Bit = 0xFFFFFF;

// A remote QPN: 24 bits, and not 0 or 1 (the special QPs of subnet management and general
// services, never an RC peer). Returns it.
uint32_t check_qpn(uint64_t value, const std::string& peer, const std::string& field = "qpn");
// A starting PSN: 24 bits. Returns it.
uint32_t check_psn(uint64_t value, const std::string& peer, const std::string& field = "psn");
// A remote key: any 32-bit value; refuses a wider one. Returns it.
uint32_t check_rkey(uint64_t value, const std::string& peer, const std::string& field = "rkey");

// [addr, addr+length) inside [advertised_addr, advertised_addr+advertised_length), with no
// arithmetic wrap-around; length > 0.
void check_remote_region(uint64_t addr, uint64_t length, uint64_t advertised_addr,
                         uint64_t advertised_length, const std::string& peer,
                         const std::string& field = "remote region");

// The peer's advertised buffer length covers what the local plan needs (`needed`).
void check_advertised_length(uint64_t advertised, uint64_t needed, const std::string& peer,
                             const std::string& field = "advertised length");

}  // namespace fabtwin::hw

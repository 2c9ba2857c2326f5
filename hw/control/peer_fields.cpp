#include "hw/control/peer_fields.h"

#include <cstdio>

#include "hw/control/control_group.h"

namespace fabtwin::hw {

namespace {

std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

// "[0x1000, 0x1000+256)"
std::string region(uint64_t addr, uint64_t length) {
  std::string text(1, '[');
  text += hex(addr);
  text += ", ";
  text += hex(addr);
  text += '+';
  text += std::to_string(length);
  text += ')';
  return text;
}

[[noreturn]] void refuse(const std::string& peer, const std::string& field,
                         const std::string& expected, const std::string& found) {
  throw ControlError(peer + ": field " + field + ": expected " + expected + ", found " + found);
}

}  // namespace

uint32_t check_qpn(uint64_t value, const std::string& peer, const std::string& field) {
  if (value > kMax24Bit || value < 2)
    refuse(peer, field, "a queue pair number in 0x2..0xffffff", hex(value));
  return static_cast<uint32_t>(value);
}

uint32_t check_psn(uint64_t value, const std::string& peer, const std::string& field) {
  if (value > kMax24Bit) refuse(peer, field, "a packet sequence number in 0..0xffffff", hex(value));
  return static_cast<uint32_t>(value);
}

uint32_t check_rkey(uint64_t value, const std::string& peer, const std::string& field) {
  if (value > 0xFFFFFFFFull) refuse(peer, field, "a 32-bit remote key", hex(value));
  return static_cast<uint32_t>(value);
}

void check_remote_region(uint64_t addr, uint64_t length, uint64_t advertised_addr,
                         uint64_t advertised_length, const std::string& peer,
                         const std::string& field) {
  const std::string advertised = region(advertised_addr, advertised_length);
  if (advertised_length > UINT64_MAX - advertised_addr)
    refuse(peer, field, "an advertised region that does not wrap around", advertised);
  if (length == 0) refuse(peer, field, "a non-empty region inside " + advertised, "length 0");
  const std::string found = region(addr, length);
  if (length > UINT64_MAX - addr) refuse(peer, field, "a region inside " + advertised, found);
  if (addr < advertised_addr || addr + length > advertised_addr + advertised_length)
    refuse(peer, field, "a region inside " + advertised, found);
}

void check_advertised_length(uint64_t advertised, uint64_t needed, const std::string& peer,
                             const std::string& field) {
  if (advertised < needed)
    refuse(peer, field, "at least " + std::to_string(needed) + " bytes (the local plan's)",
           std::to_string(advertised) + " bytes");
}

}  // namespace fabtwin::hw

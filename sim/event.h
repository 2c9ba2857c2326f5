// The event record and the one total order every runner uses.
#pragma once

#include <cassert>
#include <cstdint>

#include "sim/units.h"

namespace fabtwin {

using ComponentId = uint32_t;

// Bits of an event key: source component id above, the source's own sequence number below.
inline constexpr int kSequenceBits = 40;
inline constexpr uint64_t kSequenceMask = (uint64_t{1} << kSequenceBits) - 1;
inline constexpr ComponentId kMaxComponents = ComponentId{1} << (64 - kSequenceBits);

// A small POD record. `key` = (source component id, source sequence): it is fixed when the
// event is scheduled and does not depend on how components are spread over partitions, so
// (time, key) orders events the same way in any runner.
struct Event {
  Time time;
  uint64_t key = 0;
  ComponentId target = 0;
  uint32_t kind = 0;  // model-defined; the low 8 bits name the handler, the rest an index
  uint64_t data = 0;  // model-defined payload (a packet pointer, a queue-pair index, ...)
};

// Times are never negative, so (time, key) compares as one unsigned 128-bit number.
constexpr unsigned __int128 order_of(const Event& e) {
  return (static_cast<unsigned __int128>(static_cast<uint64_t>(e.time.ps)) << 64) | e.key;
}
constexpr bool comes_before(const Event& a, const Event& b) {
  return order_of(a) < order_of(b);
}

// comes_before as a function object, so that sorts and searches inline it.
struct EventOrder {
  constexpr bool operator()(const Event& a, const Event& b) const { return comes_before(a, b); }
};

constexpr uint64_t make_event_key(ComponentId source, uint64_t sequence) {
  return (uint64_t{source} << kSequenceBits) | (sequence & kSequenceMask);
}

constexpr uint32_t make_kind(uint32_t handler, uint32_t index) {
  assert(handler <= 0xFF && index < (uint32_t{1} << 23));
  return handler | (index << 8);
}

// A hint in a kind's top bit (indices stay below 2^23): `data` is the address of the record
// the handler reads first, such as a packet, which the event queue prefetches before the event
// is due. It is not part of the event: kind_index() and the run's fingerprint ignore it.
inline constexpr uint32_t kPrefetchPayload = uint32_t{1} << 31;
constexpr uint32_t kind_handler(uint32_t kind) {
  return kind & 0xFF;
}
constexpr uint32_t kind_index(uint32_t kind) {
  return (kind & ~kPrefetchPayload) >> 8;
}

}  // namespace fabtwin

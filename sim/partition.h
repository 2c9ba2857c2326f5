// One partition of a run: the components one thread (or rank) owns, their event queue and
// clock, and mailboxes for the events they send to other partitions.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/event_queue.h"

namespace fabtwin {

class Component;

struct Partition {
  uint32_t index = 0;
  bool alone = true;  // the only partition: every event stays local
  const std::vector<uint32_t>* partition_of = nullptr;  // component id -> partition
  EventQueue queue;
  Time now{};
  uint64_t foreground = 0;                // foreground events pending in `queue`
  int64_t held = 0;                       // open work held by this partition's components
  uint64_t events = 0;                    // events processed
  unsigned __int128 last_foreground = 0;  // order_of() of the last foreground event processed
  Time last_event_time{};
  // Background events of the current window, so that those past the global stop can be undone.
  std::vector<std::pair<unsigned __int128, Component*>> window_background;
  // Events for other partitions, [destination partition]. What a window sends is posted at the
  // boundary after it (`posted`, where the outbox's vectors go) and taken in by each destination
  // when its next window starts, on its own thread; between ranks it goes out at the boundary.
  std::vector<std::vector<Event>> outbox;
  std::vector<std::vector<Event>> posted;
  Time outbox_earliest = Time::max();  // the earliest event in `outbox`
  uint64_t outbox_foreground = 0;      // foreground events in `outbox`

  [[gnu::always_inline]] void push_local(const Event& e) {
    if (kind_handler(e.kind) < 0x80) ++foreground;
    queue.push(e);
  }

  [[gnu::always_inline]] void schedule(const Event& e) {
    if (alone) {
      push_local(e);
      return;
    }
    const uint32_t destination = (*partition_of)[e.target];
    if (destination == index) {
      push_local(e);
    } else {
      outbox[destination].push_back(e);
      if (e.time < outbox_earliest) outbox_earliest = e.time;
      if (kind_handler(e.kind) < 0x80) ++outbox_foreground;
    }
  }
};

}  // namespace fabtwin

// One partition of a run: the components one thread (or rank) owns, their event queue and
// clock, and mailboxes for the events they send to other partitions. A lane is a partition
// without components of its own: the context in which a thread runs the bursts it took from
// another partition's window (Simulator::set_lane_local), with its own clock, bursts and
// mailboxes; all it schedules beyond the window goes out as mail, to its own partition too.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/event_queue.h"

namespace fabtwin {

class Component;

struct Partition {
  static constexpr uint32_t kLane = UINT32_MAX;  // the index of a lane

  uint32_t index = 0;
  bool alone = true;  // the only partition: every event stays local
  // The model's state for the components running in this context (a fabric: the packet pool
  // they take packets from); null unless the model sets it.
  void* local = nullptr;
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

  // Bursts (Simulator::set_burst_window): while one component's events of a window run, the
  // events it schedules for itself before the window's end join them here, in (time, key)
  // order from burst_head on.
  Time burst_limit{INT64_MIN};
  ComponentId burst_target = 0;
  std::vector<Event> burst;
  size_t burst_head = 0;
  // The window's events as the queue hands them over (staged), then grouped by component and
  // in (time, key) order within each (grouped); per group its component, first place and
  // count; each component's group in this window (or none).
  std::vector<Event> staged;
  std::vector<Event> grouped;
  struct Group {
    ComponentId component;
    uint32_t begin;
    uint32_t count;
  };
  std::vector<Group> groups;
  std::vector<uint32_t> group_of;
  // Threads that take groups of this window: the groups per task, and the latest event they
  // ran (Time::ps), for the clock at the window's end.
  uint32_t groups_per_task = 1;
  std::atomic<int64_t> taken_latest{INT64_MIN};

  // The fields come in registers: an event just built on the caller's stack and read back as
  // a whole stalls on the store buffer (its parts were written separately).
  [[gnu::noinline]] void add_to_burst(Time time, uint64_t key, ComponentId target, uint32_t kind,
                                      uint64_t data) {
    if (target != burst_target) {
      throw std::logic_error("an event for component " + std::to_string(target) +
                             " scheduled within the burst window of component " +
                             std::to_string(burst_target));
    }
    if (kind_handler(kind) < 0x80) ++foreground;
    // Mostly the latest yet: put in place from the back.
    const Event e{time, key, target, kind, data};
    size_t i = burst.size();
    burst.emplace_back();
    for (; i > burst_head && comes_before(e, burst[i - 1]); --i) burst[i] = burst[i - 1];
    Event& slot = burst[i];
    slot.time = time;
    slot.key = key;
    slot.target = target;
    slot.kind = kind;
    slot.data = data;
  }

  [[gnu::always_inline]] void schedule(const Event& e) {
    if (e.time < burst_limit) {
      add_to_burst(e.time, e.key, e.target, e.kind, e.data);
      return;
    }
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

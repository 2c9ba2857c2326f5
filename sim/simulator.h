// The serial runner: one event queue, one clock, events processed in (time, key) order.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "sim/component.h"
#include "sim/event_queue.h"

namespace fabtwin {

struct RunCounters {
  uint64_t events = 0;       // events processed
  Time last_event_time{};    // time of the last processed event
  bool reached_end = false;  // stopped at the end time with foreground work still pending
};

class Simulator {
 public:
  // Called every few hundred thousand events with the current time and events so far.
  using Progress = std::function<void(Time now, uint64_t events)>;

  explicit Simulator(uint64_t seed) : seed_(seed) {}

  // Takes ownership; ids are handed out in order 0, 1, 2, ...
  ComponentId add(std::unique_ptr<Component> component);
  Component& component(ComponentId id) { return *components_[id]; }
  size_t component_count() const { return components_.size(); }

  Time now() const { return now_; }
  uint64_t seed() const { return seed_; }

  // Processes events until none is due at or before `end`, or only background events remain
  // and no component holds open work.
  RunCounters run(Time end, const Progress& progress = {});

  // The run's fingerprint: component hashes combined in component-id order.
  uint64_t fingerprint() const;

  // Open work that outlives any single pending event (an unfinished flow waiting on a
  // background timer, say): the run goes on while any is held.
  void hold_work() { ++work_held_; }
  void release_work() { --work_held_; }

  void schedule(const Event& e) {
    if (kind_handler(e.kind) < kBackgroundHandler) ++foreground_pending_;
    queue_.push(e);
  }

 private:
  uint64_t seed_;
  Time now_{};
  uint64_t foreground_pending_ = 0;
  int64_t work_held_ = 0;
  EventQueue queue_;
  std::vector<std::unique_ptr<Component>> components_;
};

inline Time Component::now() const {
  return sim_->now();
}

inline void Component::schedule(Time at, ComponentId target, uint32_t kind, uint64_t data) {
  sim_->schedule(Event{at, make_event_key(id_, sequence_++), target, kind, data});
}

inline void Component::hold_work() {
  sim_->hold_work();
}
inline void Component::release_work() {
  sim_->release_work();
}

}  // namespace fabtwin

// A simulated component: receives events addressed to it and schedules events for itself and
// for its link peers. Components never call each other directly.
#pragma once

#include <cstdint>
#include <string>

#include "sim/event.h"
#include "sim/rng.h"

namespace fabtwin {

class Simulator;
struct Partition;

// Handlers 0..127 are foreground work; 128..255 are background (sampling timers and the like):
// a run stops once only background events remain.
inline constexpr uint32_t kBackgroundHandler = 0x80;

class Component {
 public:
  explicit Component(std::string name) : name_(std::move(name)) {}
  virtual ~Component() = default;
  Component(const Component&) = delete;
  Component& operator=(const Component&) = delete;

  // Called for each event addressed to this component, in (time, key) order.
  virtual void handle(const Event& event) = 0;

  const std::string& name() const { return name_; }
  ComponentId id() const { return id_; }
  // Rolling hash of every foreground event this component has processed.
  uint64_t fingerprint() const { return fingerprint_; }

  // The run stopped at the event ordered `stop` (see order_of), but this component's partition
  // may have run background events past it: undo what they recorded (samples).
  virtual void discard_background_after(unsigned __int128 stop) {}

 protected:
  Time now() const;
  // Schedules an event at absolute time `at` (>= now) for `target`. The key is this
  // component's id and its own sequence number, so the order does not depend on partitioning.
  [[gnu::always_inline]] void schedule(Time at, ComponentId target, uint32_t kind, uint64_t data);
  [[gnu::always_inline]] void schedule_self(Time at, uint32_t kind, uint64_t data) {
    schedule(at, id_, kind, data);
  }
  Rng& rng() { return rng_; }
  // Keeps the run going while this component has open work that only background events
  // (timers that are usually cancelled) would advance.
  void hold_work();
  void release_work();
  // The model's state for the context this component runs in (Simulator::set_partition_local).
  void* partition_local() const;

 private:
  friend class Simulator;
  // What every event reads (the runner's fingerprint, schedule()'s partition and next key)
  // shares the object's first cache line with its virtual table pointer.
  Partition* partition_ = nullptr;
  // The key of the next event it schedules (make_event_key(id_, sequence)): one increment
  // per event, the sequence counting up in the low bits.
  uint64_t next_key_ = 0;
  uint64_t fingerprint_ = 0;
  ComponentId id_ = 0;
  Rng rng_;
  std::string name_;
};

}  // namespace fabtwin

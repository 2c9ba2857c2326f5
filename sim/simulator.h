// The runner: components spread over partitions, each with its own event queue and clock,
// advanced in synchronous windows no longer than the lookahead (the smallest delay of a link
// between partitions). Events are processed in (time, key) order within each partition, and a
// cross-partition event always lands in a later window, so every component sees the same
// events in the same order for any number of partitions: one partition is the serial run.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "sim/component.h"
#include "sim/partition.h"
#include "sim/transport.h"

namespace fabtwin {

struct RunCounters {
  uint64_t events = 0;       // events processed
  Time last_event_time{};    // time of the last processed event
  bool reached_end = false;  // stopped at the end time with foreground work still pending
  uint64_t windows = 0;      // synchronisation windows (0 for a single partition)
};

class Simulator {
 public:
  // Called between windows (and every few hundred thousand events in a single partition)
  // with the current time and events so far.
  using Progress = std::function<void(Time now, uint64_t events)>;

  explicit Simulator(uint64_t seed);

  // Takes ownership; ids are handed out in order 0, 1, 2, ... All start in partition 0.
  ComponentId add(std::unique_ptr<Component> component);
  Component& component(ComponentId id) { return *components_[id]; }
  size_t component_count() const { return components_.size(); }

  // Spreads the components over partitions (call before any event is scheduled) and sets the
  // lookahead: no event may cross partitions sooner than this after it is scheduled.
  void set_partitions(const std::vector<uint32_t>& partition_of, Time lookahead);
  size_t partition_count() const { return partitions_.size(); }
  uint32_t partition_of(ComponentId id) const { return partition_of_[id]; }

  uint64_t seed() const { return seed_; }

  // Processes events until none is due at or before `end`, or only background events remain
  // and no component holds open work. Partitions run on up to `threads` threads.
  RunCounters run(Time end, const Progress& progress = {}, int threads = 1);

  // The run's fingerprint: component hashes combined in component-id order.
  uint64_t fingerprint() const;

  // Spreads the partitions over processes: partition p runs on rank p % ranks. The codec
  // carries events (and their payloads) to partitions on other ranks.
  void set_transport(Transport* transport, EventCodec* codec) {
    transport_ = transport;
    codec_ = codec;
  }
  bool owns(uint32_t partition) const {
    return !distributed() ||
           static_cast<int>(partition % static_cast<uint32_t>(transport_->ranks())) ==
               transport_->rank();
  }
  bool distributed() const { return transport_ != nullptr && transport_->ranks() > 1; }
  // Each component's fingerprint (0 for components another rank runs), and how they combine.
  std::vector<uint64_t> component_fingerprints() const;
  static uint64_t combine_fingerprints(uint64_t seed, const std::vector<uint64_t>& parts);

  // Called between windows, with no partition running (packet pools balance their free lists).
  void set_between_windows(std::function<void()> f) { between_windows_ = std::move(f); }

 private:
  // Processes `p`'s events due before `window_end` (and not after `end`), at most `budget`.
  template <bool Alone>
  void run_window(Partition& p, Time window_end, Time end, uint64_t budget);
  void deliver_mail();

  uint64_t seed_;
  std::vector<std::unique_ptr<Component>> components_;
  std::vector<uint32_t> partition_of_;
  std::vector<std::unique_ptr<Partition>> partitions_;
  Time lookahead_ = Time::max();
  std::function<void()> between_windows_;
  Transport* transport_ = nullptr;
  EventCodec* codec_ = nullptr;
};

inline Time Component::now() const {
  return partition_->now;
}

inline void Component::schedule(Time at, ComponentId target, uint32_t kind, uint64_t data) {
  partition_->schedule(Event{at, make_event_key(id_, sequence_++), target, kind, data});
}

inline void Component::hold_work() {
  ++partition_->held;
}
inline void Component::release_work() {
  --partition_->held;
}

}  // namespace fabtwin

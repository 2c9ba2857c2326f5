// The runner: components spread over partitions, each with its own event queue and clock,
// advanced in synchronous windows no longer than the lookahead (the smallest delay of a link
// between partitions). Events are processed in (time, key) order within each partition, and a
// cross-partition event always lands in a later window, so every component sees the same
// events in the same order for any number of partitions: one partition is the serial run.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
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
  // Events run by a thread that took their burst from another partition's window: timing
  // decides which, so like wall time it is no part of the results.
  uint64_t taken_events = 0;
  // Set when a checkpoint's check stopped the run: its reason ("deadlock") and the checkpoint.
  std::string stop_reason;
  Time stop_time{};
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

  // Bursts. `window` > 0 promises that every event a component schedules for another one is
  // due at least `window` after it is scheduled (in a network fabric, the shortest link
  // delay). The runner then takes the events due within each window of that length and runs
  // each component's together, in their order, one component after another, so that the
  // component's lines stay in the first-level cache for its whole burst; what a component
  // schedules for itself within the window joins its burst. Every component sees the same
  // events in the same order as without, so results and fingerprints do not change. An event
  // for another component due within the window breaks the promise: std::logic_error.
  // 0 (the default): one event after another in (time, key) order.
  // On several threads, a thread that has run its partitions' bursts of a window takes bursts
  // of the others' that no thread has started (see set_lane_local), so that the window ends
  // when its work does.
  void set_burst_window(Time window) { burst_window_ = window; }
  Time burst_window() const { return burst_window_; }

  // The model's state for the components of a partition (Partition::local), which a
  // component reaches through Component::partition_local(). Set it again after
  // set_partitions.
  void set_partition_local(uint32_t partition, void* local) {
    partitions_.at(partition)->local = local;
  }
  // A thread running bursts taken from another partition does so in a lane of its own; where
  // the partitions have local state, `make(lane)` gives each lane its own (called once per
  // lane and run, lanes counted from 0). Without it, partitions with local state are not
  // taken from.
  void set_lane_local(std::function<void*(size_t lane)> make) { lane_local_ = std::move(make); }

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

  // Checkpoints: the run is at exactly simulated time T = k x `interval` (k >= 1) in every
  // partition, every event before T processed and none at or after it, when `check(T)` runs;
  // no window (nor a single partition's chunk) crosses a multiple of the interval. A multiple
  // the run jumps over (no event between it and the next) is checked once, at the latest such
  // multiple, since nothing changed in between. A reason returned stops the run there
  // (RunCounters::stop_reason). The checks see the same state for any partition count; under
  // MPI every rank runs the check (which exchanges what it needs through the Transport) and
  // all must agree. Without checkpoints (interval 0, the default) the run pays nothing.
  using Check = std::function<std::optional<std::string>(Time at)>;
  void set_checkpoints(Time interval, Check check) {
    checkpoint_interval_ = check ? interval : Time{};
    check_ = std::move(check);
  }

 private:
  // Processes `p`'s events due before `limit`, at most `budget`.
  template <bool Alone>
  void run_window(Partition& p, Time limit, uint64_t budget);
  // Processes `p`'s events due before `limit` component by component (set_burst_window), after
  // group_window() has taken them from its queue and grouped them (Partition::groups).
  void run_bursts(Partition& p, Time limit);
  void group_window(Partition& p, Time limit);
  // Runs group `g` of `p`'s window in `context` (`p` itself, or the lane of a thread that took
  // it); returns the time of its last event.
  Time run_group(Partition& context, const Partition& p, const Partition::Group& g, Time limit);
  // One partition's window among others on the window workers, with bursts: its mail and its
  // grouping (returns the number of tasks), then the tasks, each a run of groups.
  uint32_t prepare_window(Partition& p, Time limit);
  void run_task(Partition& p, uint32_t task, int thread, bool own, Time limit);
  // Every partition and lane that sends mail.
  template <class F>
  void for_each_sender(F f) {
    for (auto& p : partitions_) f(*p);
    for (auto& lane : lanes_) f(*lane);
  }
  // One partition's window among others: its mail, then its events.
  void run_among_others(Partition& p, Time limit);
  // The runner's part of one event: the clock, the fingerprint, the foreground count.
  template <bool Alone>
  [[gnu::always_inline]] void account(Partition& p, Component& c, const Event& e);
  // Between ranks: sends the outboxes' events and pushes what arrives.
  void exchange_mail();
  // Between threads: posts every outbox; returns the earliest event posted and how many are
  // foreground.
  std::pair<Time, uint64_t> post_mail();
  // Pushes the events posted to `p` into its queue.
  void take_mail(Partition& p);

  uint64_t seed_;
  std::vector<std::unique_ptr<Component>> components_;
  std::vector<uint32_t> partition_of_;
  std::vector<std::unique_ptr<Partition>> partitions_;
  std::vector<std::unique_ptr<Partition>> lanes_;  // [thread], while workers take bursts
  std::function<void*(size_t lane)> lane_local_;
  Time lookahead_ = Time::max();
  Time burst_window_{};  // 0: no bursts
  // One thread running several partitions in turn lends each the same two copies of its
  // window's events (Partition::staged, grouped), whose lines the partition before it touched
  // last, instead of lines untouched since the window before.
  std::vector<Event> turn_staged_;
  std::vector<Event> turn_grouped_;
  std::function<void()> between_windows_;
  Transport* transport_ = nullptr;
  EventCodec* codec_ = nullptr;
  Time checkpoint_interval_{};  // 0: no checkpoints
  Check check_;
};

inline Time Component::now() const {
  return partition_->now;
}

[[gnu::always_inline]] inline void Component::schedule(Time at, ComponentId target, uint32_t kind,
                                                       uint64_t data) {
  partition_->schedule(Event{at, next_key_++, target, kind, data});
}

inline void* Component::partition_local() const {
  return partition_->local;
}

inline void Component::hold_work() {
  ++partition_->held;
}
inline void Component::release_work() {
  --partition_->held;
}

}  // namespace fabtwin

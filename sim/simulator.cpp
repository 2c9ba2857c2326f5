#include "sim/simulator.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "sim/window_workers.h"

namespace fabtwin {

Simulator::Simulator(uint64_t seed) : seed_(seed) {
  set_partitions({}, Time::max());
}

ComponentId Simulator::add(std::unique_ptr<Component> component) {
  if (components_.size() >= kMaxComponents) throw std::length_error("too many components");
  const auto id = static_cast<ComponentId>(components_.size());
  component->partition_ = partitions_[0].get();
  component->id_ = id;
  component->next_key_ = make_event_key(id, 0);
  component->rng_ = Rng(seed_, id);
  components_.push_back(std::move(component));
  partition_of_.push_back(0);
  return id;
}

void Simulator::set_partitions(const std::vector<uint32_t>& partition_of, Time lookahead) {
  for (const auto& p : partitions_) {
    if (!p->queue.empty())
      throw std::logic_error("partitions must be set before events are scheduled");
  }
  uint32_t count = 1;
  for (uint32_t p : partition_of) count = std::max(count, p + 1);
  partitions_.clear();
  lanes_.clear();
  for (uint32_t i = 0; i < count; ++i) {
    auto p = std::make_unique<Partition>();
    p->index = i;
    p->partition_of = &partition_of_;
    p->outbox.resize(count);
    p->posted.resize(count);
    p->alone = count == 1;
    partitions_.push_back(std::move(p));
  }
  partition_of_ = partition_of;
  partition_of_.resize(components_.size(), 0);
  for (size_t id = 0; id < components_.size(); ++id) {
    components_[id]->partition_ = partitions_[partition_of_[id]].get();
  }
  lookahead_ = count > 1 ? lookahead : Time::max();
}

void Simulator::exchange_mail() {
  std::vector<std::vector<char>> outgoing(static_cast<size_t>(transport_->ranks()));
  for_each_sender([&](Partition& from) {
    for (size_t to = 0; to < from.outbox.size(); ++to) {
      for (const Event& e : from.outbox[to]) {
        if (owns(static_cast<uint32_t>(to))) {
          partitions_[to]->push_local(e);
          continue;
        }
        std::vector<char>& buffer = outgoing[to % outgoing.size()];
        const auto partition = static_cast<uint32_t>(to);
        buffer.insert(buffer.end(), reinterpret_cast<const char*>(&partition),
                      reinterpret_cast<const char*>(&partition) + sizeof partition);
        codec_->encode(e, buffer);
      }
      from.outbox[to].clear();
    }
    from.outbox_earliest = Time::max();
    from.outbox_foreground = 0;
  });
  const std::vector<char> incoming = transport_->exchange(outgoing);
  for (const char* in = incoming.data(); in < incoming.data() + incoming.size();) {
    uint32_t partition = 0;
    std::memcpy(&partition, in, sizeof partition);
    in += sizeof partition;
    partitions_[partition]->push_local(codec_->decode(in, partition));
  }
}

std::pair<Time, uint64_t> Simulator::post_mail() {
  Time earliest = Time::max();
  uint64_t foreground = 0;
  for_each_sender([&](Partition& from) {
    for (size_t to = 0; to < from.outbox.size(); ++to) {
      assert(from.posted[to].empty());  // taken in during the window before
      std::swap(from.outbox[to], from.posted[to]);
    }
    earliest = std::min(earliest, std::exchange(from.outbox_earliest, Time::max()));
    foreground += std::exchange(from.outbox_foreground, 0);
  });
  return {earliest, foreground};
}

void Simulator::take_mail(Partition& p) {
  for_each_sender([&](Partition& from) {
    std::vector<Event>& mail = from.posted[p.index];
    for (const Event& e : mail) p.push_local(e);
    mail.clear();
  });
}

template <bool Alone>
[[gnu::always_inline]] inline void Simulator::account(Partition& p, Component& c, const Event& e) {
  p.now = e.time;
  if (kind_handler(e.kind) < kBackgroundHandler) {
    --p.foreground;
    if (!Alone) p.last_foreground = std::max(p.last_foreground, order_of(e));
    // Rolling hash of (time, key, kind): one multiply per event, order sensitive (a
    // polynomial hash with an odd multiplier); good enough to tell two histories apart.
    c.fingerprint_ =
        ((c.fingerprint_ ^ static_cast<uint64_t>(e.time.ps)) * 0xFF51AFD7ED558CCDULL + e.key) ^
        (static_cast<uint64_t>(e.kind & ~kPrefetchPayload) << 40);
  } else if (!Alone) {
    p.window_background.emplace_back(order_of(e), &c);
  }
}

void Simulator::group_window(Partition& p, Time limit) {
  p.staged.clear();
  p.queue.take_before(limit, p.staged);
  if (p.group_of.size() < components_.size()) p.group_of.resize(components_.size(), UINT32_MAX);
  p.groups.clear();
  for (const Event& e : p.staged) {
    uint32_t& g = p.group_of[e.target];
    if (g == UINT32_MAX) {
      g = static_cast<uint32_t>(p.groups.size());
      p.groups.push_back({e.target, 0, 0});
    }
    ++p.groups[g].count;
  }
  uint32_t at = 0;
  for (Partition::Group& g : p.groups) {
    g.begin = at;
    at += g.count;
    g.count = 0;
  }
  p.grouped.resize(p.staged.size());
  for (const Event& e : p.staged) {
    Partition::Group& g = p.groups[p.group_of[e.target]];
    p.grouped[g.begin + g.count++] = e;
  }
  // Each component's events in (time, key) order: they come bucket by bucket, so only those
  // within a bucket (2 ns) may be out of order, and an insertion sort moves few.
  for (const Partition::Group& g : p.groups) {
    Event* const first = p.grouped.data() + g.begin;
    for (Event* e = first + 1; e < first + g.count; ++e) {
      if (!comes_before(*e, e[-1])) continue;
      const Event moving = *e;
      Event* to = e;
      for (; to > first && comes_before(moving, to[-1]); --to) *to = to[-1];
      *to = moving;
    }
  }
  for (const Partition::Group& g : p.groups) p.group_of[g.component] = UINT32_MAX;
}

void Simulator::run_bursts(Partition& p, Time limit) {
  p.window_background.clear();
  group_window(p, limit);
  Time latest = p.now;
  for (const Partition::Group& g : p.groups) latest = std::max(latest, run_group(p, p, g, limit));
  p.now = latest;
  p.last_event_time = latest;
}

Time Simulator::run_group(Partition& context, const Partition& p, const Partition::Group& g,
                          Time limit) {
  Component& c = *components_[g.component];
  Partition* const home = c.partition_;
  c.partition_ = &context;  // what the component schedules and reads goes through the context
  context.burst_target = g.component;
  context.burst_limit = limit;
  const Event* next = p.grouped.data() + g.begin;
  const Event* const end = next + g.count;
  Time last{INT64_MIN};
  for (;;) {
    Event e;
    if (context.burst_head < context.burst.size() &&
        (next == end || comes_before(context.burst[context.burst_head], *next))) {
      e = context.burst[context.burst_head++];
      if (context.burst_head == context.burst.size()) {
        context.burst.clear();
        context.burst_head = 0;
      }
    } else if (next != end) {
      e = *next++;
      if (next + 2 < end && (next[2].kind & kPrefetchPayload)) {
        __builtin_prefetch(reinterpret_cast<const void*>(next[2].data));
      }
    } else {
      break;
    }
    if (e.time < last) {
      throw std::logic_error("time went back: event at " + std::to_string(e.time.ps) +
                             " ps after " + std::to_string(last.ps) + " ps");
    }
    last = e.time;
    account<false>(context, c, e);
    c.handle(e);
    ++context.events;
  }
  context.burst_limit = Time{INT64_MIN};
  c.partition_ = home;
  return last;
}

uint32_t Simulator::prepare_window(Partition& p, Time limit) {
  take_mail(p);
  p.window_background.clear();
  group_window(p, limit);
  const size_t groups = p.groups.size();
  const size_t most = WindowWorkers::kMaxTasks;
  p.groups_per_task = static_cast<uint32_t>(std::max<size_t>(1, (groups + most - 1) / most));
  return static_cast<uint32_t>((groups + p.groups_per_task - 1) / p.groups_per_task);
}

void Simulator::run_task(Partition& p, uint32_t task, int thread, bool own, Time limit) {
  Partition& context = own ? p : *lanes_[static_cast<size_t>(thread)];
  const size_t first = size_t{task} * p.groups_per_task;
  const size_t end = std::min(first + p.groups_per_task, p.groups.size());
  Time latest{INT64_MIN};
  for (size_t g = first; g < end; ++g) {
    latest = std::max(latest, run_group(context, p, p.groups[g], limit));
  }
  // The partition's clock at the window's end is its latest event, whoever ran it.
  if (own) {
    p.last_event_time = std::max(p.last_event_time, latest);
    return;
  }
  context.last_event_time = std::max(context.last_event_time, latest);
  int64_t seen = p.taken_latest.load(std::memory_order_relaxed);
  while (seen < latest.ps &&
         !p.taken_latest.compare_exchange_weak(seen, latest.ps, std::memory_order_relaxed)) {
  }
}

template <bool Alone>
[[gnu::always_inline]] inline void Simulator::run_window(Partition& p, Time limit,
                                                         uint64_t budget) {
  if (!Alone) p.window_background.clear();
  for (uint64_t done = 0; done < budget && !p.queue.empty(); ++done) {
    // Alone, a partition knows the global state and stops exactly where the work runs out;
    // among others it runs to the window's end and the surplus is undone afterwards.
    if (Alone && p.foreground == 0 && p.held == 0) break;
    const Event& top = p.queue.top();
    if (top.time >= limit) break;
    const Event e = top;
    // The event two places on: its component's first two lines (what the runner and the
    // handler read first) and its payload are fetched now, two events' time before they are
    // read. The payloads a bucket ahead arrive too early to be sure to stay in the first-level
    // cache (docs/performance.md, "Two events ahead").
    if (const Event* ahead = p.queue.after_top(2)) {
      const auto* component = reinterpret_cast<const char*>(components_[ahead->target].get());
      __builtin_prefetch(component);
      __builtin_prefetch(component + 64);
      if (ahead->kind & kPrefetchPayload) {
        __builtin_prefetch(reinterpret_cast<const void*>(ahead->data));
      }
    }
    p.queue.pop_top();
    if (e.time < p.now) {
      throw std::logic_error("time went back: event at " + std::to_string(e.time.ps) +
                             " ps after " + std::to_string(p.now.ps) + " ps");
    }
    Component& c = *components_[e.target];
    account<Alone>(p, c, e);
    c.handle(e);
    ++p.events;
  }
  p.last_event_time = p.now;
}

void Simulator::run_among_others(Partition& p, Time limit) {
  take_mail(p);
  if (burst_window_.ps > 0) {
    run_bursts(p, limit);
  } else {
    run_window<false>(p, limit, UINT64_MAX);
  }
}

RunCounters Simulator::run(Time end, const Progress& progress, int threads) {
  RunCounters counters;
  const bool alone = partitions_.size() == 1;
  // The partitions this process runs, on persistent threads (never more than the machine has:
  // partitions then share them).
  std::vector<Partition*> owned;
  for (const auto& p : partitions_) {
    if (owns(p->index)) owned.push_back(p.get());
  }
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  Time window_limit{};
  std::optional<WindowWorkers> workers;
  bool lanes = false;  // threads take each other's bursts
  if (!alone && std::min(threads, hardware) > 1 && owned.size() > 1) {
    const int count = std::min({threads, hardware, static_cast<int>(owned.size())});
    const bool local = std::any_of(partitions_.begin(), partitions_.end(),
                                   [](const auto& p) { return p->local != nullptr; });
    lanes = burst_window_.ps > 0 && (!local || lane_local_);
    if (lanes) {
      for (size_t i = 0; i < static_cast<size_t>(count); ++i) {
        if (i == lanes_.size()) {
          auto lane = std::make_unique<Partition>();
          lane->index = Partition::kLane;
          lane->alone = false;
          lane->partition_of = &partition_of_;
          lane->outbox.resize(partitions_.size());
          lane->posted.resize(partitions_.size());
          lanes_.push_back(std::move(lane));
        }
        lanes_[i]->local = lane_local_ ? lane_local_(i) : nullptr;
      }
      workers.emplace(
          count, owned.size(), [&](size_t i) { return prepare_window(*owned[i], window_limit); },
          [&](size_t i, uint32_t task, int thread, bool own) {
            run_task(*owned[i], task, thread, own, window_limit);
          });
    } else {
      workers.emplace(count, owned.size(),
                      [&](size_t i) { run_among_others(*owned[i], window_limit); });
    }
  }
  bool stopped_by_work = false;
  const bool checkpoints = checkpoint_interval_.ps > 0;
  const int64_t every = checkpoint_interval_.ps;
  Time next_checkpoint = checkpoints ? checkpoint_interval_ : Time::max();
  for (;;) {
    // Mail between threads is taken in by its destination as its window starts; until then
    // it counts as that partition's pending work.
    auto [next, foreground] = distributed() ? std::pair{Time::max(), uint64_t{0}} : post_mail();
    if (distributed()) exchange_mail();
    if (between_windows_) between_windows_();
    int64_t held = 0;
    for (const auto& p : partitions_) {
      if (!owns(p->index)) continue;
      foreground += p->foreground;
      held += p->held;
      if (!p->queue.empty()) next = std::min(next, p->queue.top().time);
    }
    for (const auto& lane : lanes_) {  // what runs in a lane counts where it runs
      foreground += lane->foreground;
      held += lane->held;
    }
    if (distributed()) {
      foreground = transport_->sum(foreground);
      held = transport_->sum(held);
      next = Time{transport_->min(next.ps)};
    }
    if (foreground == 0 && held == 0) {
      stopped_by_work = true;
      break;
    }
    if (next == Time::max()) break;
    if (checkpoints && next >= next_checkpoint && next_checkpoint <= end) {
      // Every event before the checkpoint is done and none after: check at the latest multiple
      // of the interval the run has reached (the ones it jumped over saw no change).
      const Time at{std::min(next, end).ps / every * every};
      next_checkpoint = at.ps > INT64_MAX - every ? Time::max() : at + checkpoint_interval_;
      std::optional<std::string> reason = check_(at);
      if (distributed()) {
        const uint64_t stops = transport_->sum(uint64_t{reason.has_value()});
        if (stops != 0 && stops != static_cast<uint64_t>(transport_->ranks())) {
          throw std::logic_error("the ranks disagree whether to stop at the checkpoint at " +
                                 std::to_string(at.ps) + " ps");
        }
      }
      if (reason) {
        counters.stop_reason = std::move(*reason);
        counters.stop_time = at;
        break;
      }
    }
    if (next > end) {
      counters.reached_end = true;
      break;
    }
    const bool bursts = burst_window_.ps > 0;
    const Time window = bursts ? std::min(lookahead_, burst_window_) : lookahead_;
    Time window_end =
        window == Time::max() || next.ps > INT64_MAX - window.ps ? Time::max() : next + window;
    window_end = std::min(window_end, next_checkpoint);
    // Events before `limit` run: within the window and not after `end`.
    const Time limit = end == Time::max() ? window_end : std::min(window_end, end + Time{1});
    if (alone) {
      // One partition: without bursts the whole run is one window, taken in chunks to report
      // progress (and cut at the checkpoints).
      Partition& p = *partitions_[0];
      if (owns(0)) {
        if (bursts) {
          run_bursts(p, limit);
        } else {
          run_window<true>(p, limit, uint64_t{1} << 18);
        }
      }
      if (progress) progress(p.now, p.events);
    } else {
      if (workers) {
        window_limit = limit;
        for (const auto& lane : lanes_) lane->window_background.clear();
        workers->run_window();
        for (Partition* p : owned) {
          p->now = std::max(p->last_event_time,
                            Time{p->taken_latest.exchange(INT64_MIN, std::memory_order_relaxed)});
          p->last_event_time = p->now;
        }
      } else {
        // One thread: the partitions in turn, in alternate order from window to window, so
        // that the partition that ran last (its lines still in the caches) runs first. Within a
        // window they are independent, so the order changes nothing but the time.
        const auto run_in_turn = [&](Partition& p) {
          p.staged.swap(turn_staged_);
          p.grouped.swap(turn_grouped_);
          run_among_others(p, limit);
          p.staged.swap(turn_staged_);
          p.grouped.swap(turn_grouped_);
        };
        if (counters.windows % 2 == 0) {
          for (Partition* p : owned) run_in_turn(*p);
        } else {
          for (auto it = owned.rbegin(); it != owned.rend(); ++it) run_in_turn(**it);
        }
      }
      if (progress) {
        uint64_t events = 0;
        Time now{};
        for (const auto& p : partitions_) {
          events += p->events;
          now = std::max(now, p->now);
        }
        for (const auto& lane : lanes_) events += lane->events;
        progress(now, events);
      }
    }
    if (!alone) ++counters.windows;
  }
  for (Partition* p : owned) take_mail(*p);  // what the last boundary posted stays pending
  // A component's keys count up from its id's; more than 2^40 events from one would run into
  // the next id's.
  for (const auto& c : components_) {
    if (c->next_key_ - make_event_key(c->id_, 0) > kSequenceMask + 1) {
      throw std::length_error("component " + c->name() +
                              " scheduled more than 2^40 events: out of keys");
    }
  }
  // The partitions this process ran and the lanes it ran them in.
  std::vector<Partition*> contexts = owned;
  for (const auto& lane : lanes_) contexts.push_back(lane.get());
  unsigned __int128 stop = 0;
  for (const Partition* p : contexts) stop = std::max(stop, p->last_foreground);
  if (distributed()) stop = transport_->max(stop);
  for (Partition* p : contexts) {
    if (stopped_by_work) {
      for (const auto& [order, component] : p->window_background) {
        if (order <= stop) continue;
        --p->events;  // ran past the point where the work ran out: not part of the run
        component->discard_background_after(stop);
      }
    }
    p->window_background.clear();  // undone once: a later run() (lanes unused) must not again
    counters.events += p->events;
    if (p->index == Partition::kLane) counters.taken_events += p->events;
    counters.last_event_time = std::max(counters.last_event_time, p->last_event_time);
  }
  if (distributed()) {
    counters.events = transport_->sum(counters.events);
    counters.last_event_time = Time{-transport_->min(-counters.last_event_time.ps)};
  }
  if (stopped_by_work && (!alone || burst_window_.ps > 0)) {
    counters.last_event_time = Time{static_cast<int64_t>(stop >> 64)};
  }
  return counters;
}

std::vector<uint64_t> Simulator::component_fingerprints() const {
  std::vector<uint64_t> parts;
  parts.reserve(components_.size());
  for (const auto& c : components_) parts.push_back(c->fingerprint());
  return parts;
}

uint64_t Simulator::combine_fingerprints(uint64_t seed, const std::vector<uint64_t>& parts) {
  uint64_t fp = mix64(seed, parts.size());
  for (uint64_t part : parts) fp = mix64(fp, part);
  return fp;
}

uint64_t Simulator::fingerprint() const {
  return combine_fingerprints(seed_, component_fingerprints());
}

}  // namespace fabtwin

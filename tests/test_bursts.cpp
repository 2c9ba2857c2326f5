// Bursts (Simulator::set_burst_window): each component's events of a window run together. Every
// component must see the same events in the same order as in the plain (time, key) order, for
// any partitions and threads, and the run must stop at the same point with the same counts.
#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "sim/simulator.h"
#include "test_support.h"

using namespace fabtwin;

namespace {

using Log = std::vector<std::tuple<int64_t, uint64_t, uint32_t>>;  // time, key, kind

constexpr uint32_t kWork = 1;
constexpr uint32_t kTick = kBackgroundHandler;  // a sampler: background, undone past the stop

// Foreground work that spreads: each event schedules a follow-up for itself within the window
// (sometimes at the same time) and half its work for a peer at least `window` later. A
// background tick samples every 37 ps and is undone past the run's stop, as a model's samples.
class Relay : public Component {
 public:
  Relay(std::string name, Time window) : Component(std::move(name)), window_(window) {}
  std::vector<ComponentId> peers;
  Log log;
  std::chrono::microseconds spin{0};  // wall time each event takes

  void handle(const Event& e) override {
    log.emplace_back(e.time.ps, e.key, e.kind);
    // Where the run gives each context a counter (Simulator::set_partition_local and
    // set_lane_local), the work counts in the one it ran in.
    if (auto* counter = static_cast<uint64_t*>(partition_local()); counter && e.kind == kWork) {
      ++*counter;
    }
    for (const auto until = std::chrono::steady_clock::now() + spin;
         std::chrono::steady_clock::now() < until;) {
    }
    if (e.kind == kTick) {
      schedule_self(now() + Time{37}, kTick, 0);
      return;
    }
    if (e.data == 0) return;
    const uint64_t r = rng().next();
    schedule_self(now() + Time{static_cast<int64_t>(r % 4) * 15}, kWork, e.data - 1);
    const ComponentId peer = peers[(r >> 8) % peers.size()];
    schedule(now() + window_ + Time{static_cast<int64_t>((r >> 16) % 90)}, peer, kWork, e.data / 2);
  }
  void discard_background_after(unsigned __int128 stop) override {
    while (!log.empty() && std::get<2>(log.back()) == kTick &&
           (static_cast<unsigned __int128>(static_cast<uint64_t>(std::get<0>(log.back()))) << 64 |
            std::get<1>(log.back())) > stop) {
      log.pop_back();
    }
  }
  void start(Time at, uint64_t work) { schedule_self(at, kWork, work); }
  void start_ticks() { schedule_self(Time{0}, kTick, 0); }

 private:
  Time window_;
};

struct Outcome {
  std::vector<Log> logs;
  uint64_t fingerprint;
  uint64_t events;
  Time last_event_time;
  bool reached_end;
  uint64_t taken_events = 0;
  // With `contexts`: the work events each context ran (partitions 0 and 1, then lanes 0 and 1).
  std::array<uint64_t, 4> work_in{};
};

// Six relays in a ring of peers (each also reaches the one three on), links of `window`; each
// event takes `spin` of wall time in the first five.
Outcome run(uint64_t seed, Time burst, std::vector<uint32_t> partition_of, int threads,
            Time end = Time::max(), std::chrono::microseconds spin = {}, bool contexts = false,
            bool lane_contexts = true) {
  constexpr Time kWindow{100};
  Simulator sim(seed);
  std::vector<Relay*> relays;
  for (int i = 0; i < 6; ++i) {
    std::string name = "r";
    name += std::to_string(i);
    auto r = std::make_unique<Relay>(std::move(name), kWindow);
    relays.push_back(r.get());
    sim.add(std::move(r));
  }
  for (int i = 0; i < 6; ++i) {
    relays[i]->peers = {static_cast<ComponentId>((i + 1) % 6),
                        static_cast<ComponentId>((i + 3) % 6)};
  }
  for (int i = 0; i < 5; ++i) relays[i]->spin = spin;
  if (!partition_of.empty()) sim.set_partitions(partition_of, kWindow);
  sim.set_burst_window(burst);
  Outcome o{};
  if (contexts) {
    sim.set_partition_local(0, &o.work_in[0]);
    sim.set_partition_local(1, &o.work_in[1]);
    if (lane_contexts) sim.set_lane_local([&o](size_t lane) { return &o.work_in.at(2 + lane); });
  }
  relays[0]->start(Time{0}, 40);
  relays[3]->start(Time{40}, 30);
  relays[5]->start_ticks();
  const RunCounters c = sim.run(end, {}, threads);
  o.fingerprint = sim.fingerprint();
  o.events = c.events;
  o.last_event_time = c.last_event_time;
  o.reached_end = c.reached_end;
  o.taken_events = c.taken_events;
  for (Relay* r : relays) o.logs.push_back(r->log);
  return o;
}

void check_same(const Outcome& a, const Outcome& b) {
  CHECK(a.fingerprint == b.fingerprint);
  CHECK(a.events == b.events);
  CHECK(a.last_event_time == b.last_event_time);
  CHECK(a.reached_end == b.reached_end);
  for (size_t i = 0; i < a.logs.size(); ++i) {
    INFO("relay " << i);
    CHECK(a.logs[i] == b.logs[i]);
  }
}

// Schedules for its peer sooner than the window it promised.
class Hasty : public Component {
 public:
  Hasty() : Component("hasty") {}
  ComponentId peer = 0;
  void handle(const Event& e) override {
    if (e.data > 0) schedule(now() + Time{5}, peer, kWork, e.data - 1);
  }
  void start() { schedule_self(Time{0}, kWork, 3); }
};

}  // namespace

TEST_CASE("bursts run every component's events in the plain order", "[events][bursts]") {
  // Seeds change the relays' choices, and so which component's work ends the run.
  for (const uint64_t seed : {1, 2, 3, 4, 5, 6, 7, 8}) {
    INFO("seed " << seed);
    const Outcome plain = run(seed, Time{}, {}, 1);
    // The workload is what the test needs: many events, most components busy in most windows,
    // several events of one component at one time, and background ticks past the stop.
    REQUIRE(plain.events > 2000);
    REQUIRE_FALSE(plain.reached_end);
    size_t same_time = 0;
    for (const Log& log : plain.logs) {
      for (size_t i = 1; i < log.size(); ++i) {
        same_time += std::get<0>(log[i]) == std::get<0>(log[i - 1]);
      }
    }
    REQUIRE(same_time > 50);
    const auto ticks = std::count_if(plain.logs[5].begin(), plain.logs[5].end(),
                                     [](const auto& t) { return std::get<2>(t) == kTick; });
    REQUIRE(ticks > 10);

    check_same(plain, run(seed, Time{100}, {}, 1));
    check_same(plain, run(seed, Time{30}, {}, 1));  // windows shorter than the links
    check_same(plain, run(seed, Time{100}, {0, 0, 1, 1, 2, 2}, 1));
    check_same(plain, run(seed, Time{100}, {0, 1, 0, 1, 0, 1}, 2));
    // An end time inside a window.
    const Time end{plain.last_event_time.ps / 2 + 13};
    const Outcome cut = run(seed, Time{}, {}, 1, end);
    REQUIRE(cut.reached_end);
    check_same(cut, run(seed, Time{100}, {}, 1, end));
  }
}

TEST_CASE("an event for another component within the burst window is refused", "[events][bursts]") {
  Simulator sim(1);
  auto a = std::make_unique<Hasty>();
  auto b = std::make_unique<Hasty>();
  a->peer = 1;
  b->peer = 0;
  Hasty* first = a.get();
  sim.add(std::move(a));
  sim.add(std::move(b));
  sim.set_burst_window(Time{100});
  first->start();
  CHECK_THROWS_AS(sim.run(Time::max()), std::logic_error);
}

TEST_CASE("a thread with no bursts of its own left takes another partition's, same results",
          "[events][bursts][parallel]") {
  // Five slow relays in partition 0, one quick one in partition 1: partition 1's thread runs out
  // of work early in every window and takes partition 0's bursts, in a lane of its own.
  using std::chrono::microseconds;
  for (const uint64_t seed : {1, 2, 3}) {
    INFO("seed " << seed);
    const Outcome plain = run(seed, Time{}, {}, 1);
    uint64_t work = 0;
    for (const Log& log : plain.logs) {
      work += static_cast<uint64_t>(std::count_if(
          log.begin(), log.end(), [](const auto& t) { return std::get<2>(t) == kWork; }));
    }
    const std::vector<uint32_t> parts{0, 0, 0, 0, 0, 1};
    // Which thread runs what is up to timing: tries until a lane ran any (the first, unless the
    // machine is busy enough that the second thread never ran during a window: a run lasts
    // milliseconds, several scheduler slices).
    Outcome taken;
    for (int attempt = 0; attempt < 20 && taken.taken_events == 0; ++attempt) {
      taken = run(seed, Time{100}, parts, 2, Time::max(), microseconds{2}, true);
      check_same(plain, taken);
      const auto& in = taken.work_in;
      CHECK(in[0] + in[1] + in[2] + in[3] == work);  // each ran once, in one context
      CHECK(in[2] + in[3] <= taken.taken_events);    // what lanes ran counts as taken
      CHECK(taken.taken_events < taken.events);
    }
    if (std::thread::hardware_concurrency() >= 2) {
      CHECK(taken.taken_events > 0);
      CHECK(taken.work_in[2] + taken.work_in[3] > 0);  // the lanes' own local state
    }
    // Without local state for the lanes, partitions that have some are not taken from.
    const Outcome kept = run(seed, Time{100}, parts, 2, Time::max(), microseconds{2}, true, false);
    check_same(plain, kept);
    CHECK(kept.taken_events == 0);
    CHECK(kept.work_in[0] + kept.work_in[1] == work);
  }
}

namespace {

// Foreground work for itself, 10 ps apart, each event taking `spin` of wall time.
class SlowWorker : public Component {
 public:
  explicit SlowWorker(std::chrono::microseconds spin) : Component("worker"), spin_(spin) {}
  void handle(const Event& e) override {
    for (const auto until = std::chrono::steady_clock::now() + spin_;
         std::chrono::steady_clock::now() < until;) {
    }
    if (e.data > 0) schedule_self(now() + Time{10}, kWork, e.data - 1);
  }
  void start(uint64_t events) { schedule_self(Time{0}, kWork, events - 1); }

 private:
  std::chrono::microseconds spin_;
};

// Background ticks every 7 ps, logged and undone past the stop as a model's samples are.
class Ticker : public Component {
 public:
  Ticker() : Component("ticker") {}
  std::vector<int64_t> ticks;
  void handle(const Event&) override {
    ticks.push_back(now().ps);
    schedule_self(now() + Time{7}, kTick, 0);
  }
  void discard_background_after(unsigned __int128 stop) override {
    while (!ticks.empty() &&
           static_cast<uint64_t>(ticks.back()) > static_cast<uint64_t>(stop >> 64)) {
      ticks.pop_back();
    }
  }
  void start() { schedule_self(Time{0}, kTick, 0); }
};

}  // namespace

TEST_CASE("a second run after the work ran out changes nothing, though lanes ran background work",
          "[events][bursts][parallel]") {
  // Partition 0: a slow worker, whose events come first in every window, and a ticker;
  // partition 1: nothing to do. Partition 1's thread takes the ticker's burst while partition
  // 0's thread works, so a lane runs ticks past the point where the work runs out; the stop
  // undoes them. A second run() finds no work: it must not undo them again (0bb8d4f).
  constexpr uint64_t kWorkEvents = 60;
  uint64_t taken = 0;
  for (int attempt = 0; attempt < 20 && taken == 0; ++attempt) {
    Simulator sim(1);
    auto worker = std::make_unique<SlowWorker>(std::chrono::microseconds{100});
    auto ticker = std::make_unique<Ticker>();
    auto idle = std::make_unique<SlowWorker>(std::chrono::microseconds{0});
    SlowWorker* w = worker.get();
    Ticker* t = ticker.get();
    sim.add(std::move(worker));
    sim.add(std::move(ticker));
    sim.add(std::move(idle));
    sim.set_partitions({0, 0, 1}, Time{100});
    sim.set_burst_window(Time{100});
    w->start(kWorkEvents);
    t->start();
    const RunCounters first = sim.run(Time::max(), {}, 2);
    taken = first.taken_events;
    // The work ends at 590 ps: every tick up to there, none after.
    const int64_t last_work = int64_t{10} * (kWorkEvents - 1);
    REQUIRE_FALSE(t->ticks.empty());
    CHECK(t->ticks.back() <= last_work);
    CHECK(t->ticks.back() > last_work - 7);
    CHECK(first.events == kWorkEvents + t->ticks.size());
    const std::vector<int64_t> ticks = t->ticks;
    const uint64_t fingerprint = sim.fingerprint();
    const RunCounters second = sim.run(Time::max(), {}, 2);
    CHECK(second.events == first.events);
    CHECK(t->ticks == ticks);
    CHECK(sim.fingerprint() == fingerprint);
  }
  // Which thread runs the ticker is up to timing: partition 0's thread spends 1 ms on the
  // worker's burst of each window, so the other takes the ticker's unless it is not scheduled.
  // With one hardware thread there are no lanes, and the runs above check the plain stop.
  if (std::thread::hardware_concurrency() >= 2) CHECK(taken > 0);
}

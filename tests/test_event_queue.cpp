// Event order: one total order on (time, key), the same from the calendar queue and the heap.
#include <vector>
#include "test_support.h"

#include "sim/event_queue.h"
#include "sim/simulator.h"

using namespace fabtwin;

TEST_CASE("ties in time are broken by source component, then source sequence", "[events]") {
  EventQueue q;
  q.push({Time{100}, make_event_key(2, 0), 0, 1, 0});
  q.push({Time{100}, make_event_key(1, 5), 0, 2, 0});
  q.push({Time{50}, make_event_key(9, 9), 0, 3, 0});
  q.push({Time{100}, make_event_key(1, 4), 0, 4, 0});
  std::vector<uint32_t> kinds;
  while (!q.empty()) kinds.push_back(q.pop().kind);
  CHECK(kinds == std::vector<uint32_t>{3, 4, 2, 1});
}

TEST_CASE("the calendar queue pops exactly the heap's order", "[events]") {
  // A hold model with near, far (beyond the wheel's horizon) and same-time events, pushes
  // into the bucket being drained, and long idle gaps.
  Rng rng(7, 7);
  EventQueue calendar;
  EventHeap heap;
  uint64_t seq = 0;
  Time now{};
  auto push_random = [&] {
    int64_t delay = 0;
    switch (rng.below(5)) {
      case 0:
        delay = 0;
        break;  // same time
      case 1:
        delay = static_cast<int64_t>(rng.below(3000));
        break;  // same bucket
      case 2:
        delay = static_cast<int64_t>(rng.below(2'000'000));
        break;
      case 3:
        delay = static_cast<int64_t>(rng.below(100'000'000));
        break;  // past the wheel
      default:
        delay = static_cast<int64_t>(rng.below(5'000'000'000));
        break;  // far future
    }
    const Event e{now + Time{delay}, make_event_key(static_cast<ComponentId>(rng.below(50)), seq++),
                  0, 0, seq};
    calendar.push(e);
    heap.push(e);
  };
  for (int i = 0; i < 2000; ++i) push_random();
  for (int i = 0; i < 200'000; ++i) {
    REQUIRE(calendar.size() == heap.size());
    const Event a = calendar.pop();
    const Event b = heap.pop();
    REQUIRE(a.time == b.time);
    REQUIRE(a.key == b.key);
    REQUIRE(a.time >= now);
    now = a.time;
    const uint64_t pushes = heap.empty() ? 3 : rng.below(3);
    for (uint64_t k = 0; k < pushes; ++k) push_random();
  }
}

namespace {
// Records the order it sees events in and schedules follow-ups to itself and a peer.
class Pinger : public Component {
 public:
  Pinger(std::string name, std::vector<std::pair<int64_t, uint64_t>>& log)
      : Component(std::move(name)), log_(log) {}
  ComponentId peer = 0;
  void handle(const Event& e) override {
    log_.push_back({e.time.ps, e.key});
    if (e.data > 0) {
      schedule(now() + Time{10}, peer, 1, e.data - 1);
      schedule_self(now() + Time{10}, 1, 0);
    }
  }
  void kick(Time at, uint64_t n) { schedule_self(at, 1, n); }

 private:
  std::vector<std::pair<int64_t, uint64_t>>& log_;
};
}  // namespace

TEST_CASE("the serial runner processes events in time order and fingerprints them", "[events]") {
  auto run_once = [](uint64_t seed) {
    std::vector<std::pair<int64_t, uint64_t>> log;
    Simulator sim(seed);
    auto a = std::make_unique<Pinger>("a", log);
    auto b = std::make_unique<Pinger>("b", log);
    Pinger* pa = a.get();
    Pinger* pb = b.get();
    sim.add(std::move(a));
    sim.add(std::move(b));
    pa->peer = 1;
    pb->peer = 0;
    pa->kick(Time{0}, 5);
    pb->kick(Time{0}, 5);
    const RunCounters c = sim.run(Time{1000});
    return std::make_tuple(log, sim.fingerprint(), c.events);
  };
  const auto [log, fp, events] = run_once(1);
  CHECK(events == log.size());
  for (size_t i = 1; i < log.size(); ++i) REQUIRE(log[i - 1] < log[i]);  // (time, key) ascending
  CHECK(std::get<1>(run_once(1)) == fp);
  CHECK(std::get<1>(run_once(2)) != fp);  // the seed enters the fingerprint
}

TEST_CASE("the run stops at the end time and reports pending work", "[events]") {
  std::vector<std::pair<int64_t, uint64_t>> log;
  Simulator sim(1);
  auto a = std::make_unique<Pinger>("a", log);
  Pinger* pa = a.get();
  sim.add(std::move(a));
  pa->peer = 0;
  pa->kick(Time{0}, 1000);
  const RunCounters c = sim.run(Time{95});
  CHECK(c.reached_end);
  CHECK(c.last_event_time <= Time{95});
  for (const auto& [t, id] : log) CHECK(t <= 95);
}

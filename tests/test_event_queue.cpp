// Event order: one total order on (time, key), the same from the calendar queue and the heap.
#include <algorithm>
#include <vector>
#include "test_support.h"

#include "sim/event_queue.h"
#include "sim/simulator.h"
#include "sim/sorting_network.h"

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

TEST_CASE(
    "taking the events before a limit takes exactly the heap's, and the rest still pop in order",
    "[events]") {
  // Windows of random lengths (some inside a bucket, some spanning thousands and the far heap),
  // mixed with plain pops, and pushes after each take at or after its limit.
  Rng rng(11, 3);
  EventQueue calendar;
  EventHeap heap;
  uint64_t seq = 0;
  Time now{};
  auto push_random = [&](Time from) {
    const int64_t spans[] = {1, 3000, 2'000'000, 100'000'000, 5'000'000'000};
    const int64_t delay =
        static_cast<int64_t>(rng.below(static_cast<uint64_t>(spans[rng.below(5)])));
    const Event e{from + Time{delay},
                  make_event_key(static_cast<ComponentId>(rng.below(50)), seq++), 0, 0, seq};
    calendar.push(e);
    heap.push(e);
  };
  for (int i = 0; i < 3000; ++i) push_random(now);
  auto in_order = [](const Event& a, const Event& b) { return comes_before(a, b); };
  size_t taken_in_windows = 0;
  for (int round = 0; round < 20'000 && !heap.empty(); ++round) {
    REQUIRE(calendar.size() == heap.size());
    if (rng.below(3) == 0) {
      const Event a = calendar.pop();
      const Event b = heap.pop();
      REQUIRE(a.time == b.time);
      REQUIRE(a.key == b.key);
      now = a.time;
      push_random(now);
      continue;
    }
    const int64_t lengths[] = {500, 2048, 1'000'000, 300'000'000};
    const Time limit =
        now +
        Time{1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(lengths[rng.below(4)])))};
    std::vector<Event> taken;
    calendar.take_before(limit, taken);
    std::vector<Event> expected;
    while (!heap.empty() && heap.top().time < limit) expected.push_back(heap.pop());
    std::sort(taken.begin(), taken.end(), in_order);
    REQUIRE(taken.size() == expected.size());
    for (size_t i = 0; i < taken.size(); ++i) {
      REQUIRE(taken[i].time == expected[i].time);
      REQUIRE(taken[i].key == expected[i].key);
    }
    taken_in_windows += taken.size();
    now = limit;
    const uint64_t pushes = 1 + rng.below(3);
    for (uint64_t k = 0; k < pushes; ++k) push_random(now);
  }
  CHECK(taken_in_windows > 20'000);
  while (!heap.empty()) {
    const Event a = calendar.pop();
    const Event b = heap.pop();
    REQUIRE(a.time == b.time);
    REQUIRE(a.key == b.key);
  }
  CHECK(calendar.empty());
}

namespace {
template <size_t N>
void check_network_sorts_every_zero_one_input() {
  // The 0-1 principle (docs/references.md §13.1): a network that sorts every sequence of 0s
  // and 1s sorts every sequence.
  for (uint32_t bits = 0; bits < (uint32_t{1} << N); ++bits) {
    std::array<uint64_t, N> v;
    for (size_t i = 0; i < N; ++i) v[i] = bits >> i & 1;
    sort_by_network<N>(v);
    REQUIRE(std::is_sorted(v.begin(), v.end()));
  }
}

template <size_t N>
void check_network_sorts_random_input(Rng& rng) {
  for (int round = 0; round < 2000; ++round) {
    std::array<uint64_t, N> v;
    for (uint64_t& x : v) x = rng.below(4) == 0 ? UINT64_MAX : rng.below(N);  // ties, maxima
    std::array<uint64_t, N> expected = v;
    std::sort(expected.begin(), expected.end());
    sort_by_network<N>(v);
    REQUIRE(v == expected);
  }
}
}  // namespace

TEST_CASE("sorting networks sort every input of their size", "[events]") {
  check_network_sorts_every_zero_one_input<2>();
  check_network_sorts_every_zero_one_input<3>();
  check_network_sorts_every_zero_one_input<4>();
  check_network_sorts_every_zero_one_input<8>();
  check_network_sorts_every_zero_one_input<12>();
  check_network_sorts_every_zero_one_input<16>();
  check_network_sorts_every_zero_one_input<20>();
  Rng rng(3, 3);
  check_network_sorts_random_input<24>(rng);
  check_network_sorts_random_input<28>(rng);
  check_network_sorts_random_input<32>(rng);
  // Batcher's sizes: 19 comparators for 8 keys, 63 for 16, 191 for 32; fewer when pruned.
  CHECK(batcher_comparator_count<8>() == 19);
  CHECK(batcher_comparator_count<16>() == 63);
  CHECK(batcher_comparator_count<32>() == 191);
  CHECK(batcher_comparator_count<12>() == 42);
}

TEST_CASE("buckets of every size pop in (time, key) order", "[events]") {
  // All events of a round fall in one 2.048 ns bucket, so each size takes another sorting path
  // (a network up to 32 events, a full sort above). Sources repeat, so events of one source at
  // one time are common; some reach the bucket out of their sequence order, which the queue must
  // notice. While the bucket drains, more events are pushed into it.
  Rng rng(5, 5);
  EventQueue q;
  uint64_t seq = 0;
  int64_t base = 0;
  for (size_t n = 1; n <= 80; ++n) {
    for (int round = 0; round < 20; ++round) {
      base += 1 << 20;  // a later bucket, on the wheel
      std::vector<Event> pushed;
      for (size_t i = 0; i < n; ++i) {
        const auto source = static_cast<ComponentId>(rng.below(6));
        const uint64_t s = round % 4 == 0 ? seq + rng.below(1000) : seq;  // out of order at times
        ++seq;
        const Event e{Time{base + static_cast<int64_t>(rng.below(4) * 500)},
                      make_event_key(source, s * 1000 + i), 0, 0, 0};
        pushed.push_back(e);
        q.push(e);
      }
      std::vector<Event> popped;
      while (!q.empty()) {
        const Event e = q.pop();
        popped.push_back(e);
        if (popped.size() == 1 && n > 2) {  // due in the bucket being drained
          const Event later{e.time + Time{static_cast<int64_t>(rng.below(2))},
                            make_event_key(7, seq++ * 1000), 0, 0, 0};
          pushed.push_back(later);
          q.push(later);
        }
      }
      std::sort(pushed.begin(), pushed.end(), EventOrder{});
      REQUIRE(popped.size() == pushed.size());
      for (size_t i = 0; i < popped.size(); ++i) {
        REQUIRE(popped[i].time == pushed[i].time);
        REQUIRE(popped[i].key == pushed[i].key);
      }
    }
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

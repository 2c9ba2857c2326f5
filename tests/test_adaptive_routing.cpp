// Adaptive routing: each strategy driven alone on hand-set egress ports (least loaded, ties by
// the switch's own stream, paused and failed ports excluded, flowlets, DRILL, spraying, the
// per-priority split, the stale and quantized signal), the scenario keys, and whole runs
// (failures, determinism over threads).
#include <deque>
#include <map>

#include "models/fabric/fabric.h"
#include "models/net/adaptive_routing.h"
#include "sim/cli/report.h"
#include "test_support.h"

using namespace fabtwin;

namespace {

constexpr Time kNow{1'000'000'000};

// Four 100 Gb/s egress ports with frames queued as asked.
struct Ports {
  std::vector<EgressPort> ports = std::vector<EgressPort>(4);
  std::deque<Packet> packets;

  Ports() {
    for (EgressPort& p : ports) p.set_rate(BitsPerSec{100'000'000'000});
  }
  void queue(uint32_t port, int64_t bytes, int priority = 0) {
    while (bytes > 0) {
      Packet& p = packets.emplace_back();
      p.frame = static_cast<int32_t>(std::min<int64_t>(bytes, 1000));
      p.priority = static_cast<uint8_t>(priority);
      ports[port].enqueue(&p);
      bytes -= p.frame;
    }
  }
  void drain(uint32_t port) {
    for (int q = 0; q < kPriorities; ++q) {
      while (!ports[port].queues[q].empty()) ports[port].dequeue(q);
    }
  }
};

std::array<RoutingStrategy, kPriorities> all(RoutingStrategy s) {
  std::array<RoutingStrategy, kPriorities> a;
  a.fill(s);
  return a;
}

const std::vector<uint16_t> kHops{0, 1, 2, 3};

uint32_t pick(AdaptiveRouter& r, Ports& p, Rng& rng, Time now = kNow, uint32_t hash = 7,
              const uint8_t* down = nullptr, int priority = 0) {
  return r.pick(kHops, 0, hash, priority, priority, now, p.ports, down, rng);
}

AdaptiveRouter router(RoutingStrategy s, AdaptiveConfig config = {}) {
  AdaptiveRouter r(config, all(s), 0x1234);
  r.begin(4, 4);
  return r;
}

}  // namespace

TEST_CASE("adaptive routing picks the port with the shortest queue", "[adaptive]") {
  Ports p;
  p.queue(0, 5000);
  p.queue(1, 3000);
  p.queue(2, 1000);
  p.queue(3, 4000);
  AdaptiveRouter r = router(RoutingStrategy::Adaptive);
  Rng rng(1, 1);
  for (int i = 0; i < 20; ++i) CHECK(pick(r, p, rng) == 2);
  p.queue(2, 3000);  // now 4000: port 1 (3000) is the shortest
  CHECK(pick(r, p, rng) == 1);
}

TEST_CASE("adaptive routing breaks ties with the switch's own random stream", "[adaptive]") {
  Ports p;
  p.queue(0, 2000);  // ports 1, 2 and 3 tie at 0 bytes
  AdaptiveRouter r = router(RoutingStrategy::Adaptive);
  auto sequence = [&](uint64_t stream) {
    Rng rng(1, stream);
    std::vector<uint32_t> s;
    for (int i = 0; i < 3000; ++i) s.push_back(pick(r, p, rng));
    return s;
  };
  const std::vector<uint32_t> a = sequence(5), b = sequence(5), c = sequence(6);
  CHECK(a == b);  // the same stream, the same choices
  CHECK(a != c);  // another switch's stream, other choices
  std::map<uint32_t, int> used;
  for (uint32_t port : a) ++used[port];
  CHECK(used.count(0) == 0);
  for (uint32_t port : {1u, 2u, 3u}) CHECK(used[port] == Approx(1000).margin(120));
}

TEST_CASE("adaptive strategies never pick a paused or failed port while another is eligible",
          "[adaptive]") {
  Ports p;
  p.queue(1, 9000);
  p.queue(3, 9000);
  p.ports[0].queues[0].paused_until = kNow + Time{1000};  // paused for priority 0 only
  const uint8_t down[4] = {0, 0, 1, 0};                   // port 2's link failed
  for (RoutingStrategy s : {RoutingStrategy::Adaptive, RoutingStrategy::Flowlet,
                            RoutingStrategy::Drill, RoutingStrategy::Spray}) {
    INFO(routing_strategy_name(s));
    AdaptiveRouter r = router(s);
    Rng rng(1, 2);
    std::map<uint32_t, int> used;
    for (uint32_t h = 0; h < 400; ++h) ++used[pick(r, p, rng, kNow, h, down)];
    CHECK(used.count(0) == 0);
    CHECK(used.count(2) == 0);
    // Priority 1 is not paused on port 0: the least-loaded strategies take it.
    if (s == RoutingStrategy::Adaptive) CHECK(pick(r, p, rng, kNow, 1, down, 1) == 0);
  }
  SECTION("every port paused: the least loaded whose link is up") {
    for (EgressPort& port : p.ports) port.queues[0].paused_until = kNow + Time{1000};
    AdaptiveRouter r = router(RoutingStrategy::Adaptive);
    Rng rng(1, 2);
    CHECK(pick(r, p, rng, kNow, 1, down) == 0);
  }
}

TEST_CASE("a flowlet keeps its port within the gap and may move after it", "[adaptive]") {
  AdaptiveConfig config;
  config.flowlet_gap = Time{10'000'000};  // 10 us
  Ports p;
  p.queue(1, 1000);
  p.queue(2, 1000);
  p.queue(3, 1000);
  AdaptiveRouter r = router(RoutingStrategy::Flowlet, config);
  Rng rng(1, 3);
  Time t = kNow;
  CHECK(pick(r, p, rng, t) == 0);  // the empty port
  p.queue(0, 8000);                // now the deepest
  for (int i = 0; i < 10; ++i) {
    t = t + Time{9'000'000};  // packets 9 us apart: one flowlet
    CHECK(pick(r, p, rng, t) == 0);
  }
  CHECK(pick(r, p, rng, t, 8) != 0);  // another flow (another entry) goes elsewhere
  t = t + Time{10'000'001};           // a pause longer than the gap: a new flowlet
  const uint32_t moved = pick(r, p, rng, t);
  CHECK(moved != 0);
  CHECK(r.flowlet_moves() == 1);  // first flowlets of an entry are not moves
  p.drain(0);                     // port 0 empties, but the new flowlet stays where it went
  CHECK(pick(r, p, rng, t + Time{1'000'000}) == moved);
}

TEST_CASE("DRILL compares d random samples with the m ports it remembers", "[adaptive]") {
  Ports p;
  p.queue(0, 8000);
  p.queue(1, 8000);
  p.queue(3, 8000);  // port 2 is the only empty one
  SECTION("(d, m) = (1, 0): a random port, whatever the load") {
    AdaptiveConfig config;
    config.drill_samples = 1;
    config.drill_memory = 0;
    AdaptiveRouter r = router(RoutingStrategy::Drill, config);
    Rng rng(1, 4);
    std::map<uint32_t, int> used;
    for (int i = 0; i < 4000; ++i) ++used[pick(r, p, rng)];
    for (uint32_t port : {0u, 1u, 2u, 3u}) CHECK(used[port] == Approx(1000).margin(120));
  }
  SECTION("(2, 1): once sampled, the empty port is remembered and kept") {
    AdaptiveRouter r = router(RoutingStrategy::Drill);
    Rng rng(1, 4);
    int first = -1;
    for (int i = 0; i < 100 && first < 0; ++i) {
      if (pick(r, p, rng) == 2) first = i;
    }
    REQUIRE(first >= 0);
    for (int i = 0; i < 200; ++i) CHECK(pick(r, p, rng) == 2);
  }
  SECTION("(2, 0): without memory, only when one of the two samples is the empty port") {
    AdaptiveConfig config;
    config.drill_memory = 0;
    AdaptiveRouter r = router(RoutingStrategy::Drill, config);
    Rng rng(1, 4);
    int empty = 0;
    for (int i = 0; i < 4000; ++i) empty += pick(r, p, rng) == 2;
    CHECK(empty == Approx(4000 * (1 - 0.75 * 0.75)).margin(150));  // 1 - (3/4)^2
  }
}

TEST_CASE("spraying goes round robin over the group's eligible ports", "[adaptive]") {
  Ports p;
  p.queue(0, 50000);  // load does not matter
  AdaptiveRouter r = router(RoutingStrategy::Spray);
  Rng rng(1, 5);
  std::vector<uint32_t> order;
  for (int i = 0; i < 8; ++i) order.push_back(pick(r, p, rng));
  CHECK(order == std::vector<uint32_t>{0, 1, 2, 3, 0, 1, 2, 3});
  const uint8_t down[4] = {0, 1, 0, 0};
  order.clear();
  for (int i = 0; i < 6; ++i) order.push_back(pick(r, p, rng, kNow, 7, down));
  CHECK(order == std::vector<uint32_t>{0, 2, 3, 0, 2, 3});
  r.on_table(4);  // a new table starts every rotation over
  CHECK(pick(r, p, rng) == 0);
}

TEST_CASE("strategies per tier, per switch and per priority", "[adaptive]") {
  const Topology ft = build_fat_tree(4, BitsPerSec{100'000'000'000}, Time{1'000'000});
  const nlohmann::json section = nlohmann::json::parse(R"({
    "strategy": "adaptive",
    "strategies": [{"priorities": [3], "strategy": "ecmp"},
                   {"tier": "core", "strategy": "spray"},
                   {"switch": "edge0.0", "priorities": [0, 1], "strategy": "flowlet"}]})");
  ParamReader r(section, "routing", kRoutingParams);
  const StrategyPolicy policy = StrategyPolicy::read(r, ft);
  const int edge0 = ft.node_named("edge0.0"), core0 = ft.node_named("core0");
  const int agg0 = ft.node_named("agg0.0");
  REQUIRE(edge0 >= 0);
  REQUIRE(core0 >= 0);
  REQUIRE(agg0 >= 0);
  const auto e = policy.for_switch(edge0, Tier::Leaf);
  CHECK(e[0] == RoutingStrategy::Flowlet);
  CHECK(e[1] == RoutingStrategy::Flowlet);
  CHECK(e[2] == RoutingStrategy::Adaptive);
  CHECK(e[3] == RoutingStrategy::Ecmp);
  const auto a = policy.for_switch(agg0, Tier::Spine);
  CHECK(a[0] == RoutingStrategy::Adaptive);
  CHECK(a[3] == RoutingStrategy::Ecmp);
  CHECK(policy.for_switch(core0, Tier::Core)[3] == RoutingStrategy::Spray);
  AdaptiveRouter router(policy.adaptive, a, 1);
  CHECK(router.routes(0));
  CHECK(!router.routes(3));

  auto error = [&](const char* text) {
    const nlohmann::json doc = nlohmann::json::parse(text);
    ParamReader bad(doc, "routing", kRoutingParams);
    try {
      StrategyPolicy::read(bad, ft);
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error(R"({"strategies": [{"switch": "host0", "strategy": "spray"}]})"),
             Catch::Contains("routing.strategies[0].switch"));
  CHECK_THAT(error(R"({"strategies": [{"priorities": [9], "strategy": "spray"}]})"),
             Catch::Contains("routing.strategies[0].priorities[0]"));
  CHECK_THAT(error(R"({"strategies": [{"tier": "leaf"}]})"),
             Catch::Contains("routing.strategies[0].strategy"));
  CHECK_THAT(error(R"({"adaptive": {"utilization_window": "0us"}})"),
             Catch::Contains("routing.adaptive.utilization_window"));
  CHECK_THAT(error(R"({"strategy": "random"})"), Catch::Contains("routing.strategy"));
}

TEST_CASE("a sampled signal is stale until the next update period", "[adaptive]") {
  AdaptiveConfig config;
  config.update_period = Time{1'000'000};  // 1 us
  Ports p;
  p.queue(0, 1000);
  p.queue(1, 2000);
  p.queue(2, 3000);
  p.queue(3, 4000);
  AdaptiveRouter r = router(RoutingStrategy::Adaptive, config);
  Rng rng(1, 6);
  CHECK(pick(r, p, rng, kNow) == 0);  // the first decision of the period samples
  p.queue(0, 10000);                  // port 0 fills, but the switch does not see it yet
  CHECK(pick(r, p, rng, kNow + Time{999'999}) == 0);
  CHECK(pick(r, p, rng, kNow + Time{1'000'000}) == 1);  // next period: a fresh sample
  AdaptiveRouter live = router(RoutingStrategy::Adaptive);
  CHECK(pick(live, p, rng, kNow) == 1);  // update_period 0 reads the queues live
}

TEST_CASE("a quantized signal cannot tell close queues apart", "[adaptive]") {
  AdaptiveConfig config;
  config.levels = 4;
  config.level_range = 40000;  // 10 KB per level
  Ports p;
  p.queue(0, 12000);
  p.queue(1, 3000);
  p.queue(2, 9000);  // level 0, like port 1
  p.queue(3, 30000);
  AdaptiveRouter r = router(RoutingStrategy::Adaptive, config);
  CHECK(r.load(p.ports, 3, 0, kNow) == 3);
  CHECK(r.load(p.ports, 0, 0, kNow) == 1);
  Rng rng(1, 7);
  std::map<uint32_t, int> used;
  for (int i = 0; i < 1000; ++i) ++used[pick(r, p, rng)];
  CHECK(used.size() == 2);
  CHECK(used[1] == Approx(500).margin(80));
  CHECK(used[2] == Approx(500).margin(80));
}

TEST_CASE("the utilization signal avoids the busiest link over the window", "[adaptive]") {
  AdaptiveConfig config;
  config.signal = LoadSignal::Utilization;
  config.utilization_window = Time{10'000'000};
  Ports p;
  AdaptiveRouter r = router(RoutingStrategy::Adaptive, config);
  Rng rng(1, 8);
  pick(r, p, rng, Time{0});  // the first window starts
  // Over the next 10 us: ports 0, 1, 3 busy 9, 5, 7 us; port 2 busy 2 us.
  const int64_t busy[4] = {9'000'000, 5'000'000, 2'000'000, 7'000'000};
  for (int i = 0; i < 4; ++i) p.ports[i].busy_time = Time{busy[i]};
  CHECK(r.load(p.ports, 2, 0, Time{10'000'000}) == (1 << 16) / 5);  // 20%
  CHECK(pick(r, p, rng, Time{10'000'000}) == 2);
  p.ports[2].busy_time = Time{2'000'000 + 9'000'000};  // port 2 now the busiest
  CHECK(pick(r, p, rng, Time{15'000'000}) == 2);       // the window has not ended
  CHECK(pick(r, p, rng, Time{20'000'000}) != 2);       // ports 0, 1, 3 idle since
}

namespace {

nlohmann::json fat_tree_permutation(const std::string& strategy) {
  return nlohmann::json::parse(R"({
    "topology": {"type": "fat_tree", "k": 4},
    "fabric": {"link": {"rate": "100Gbps", "delay": "1us"}},
    "nic": {"mtu": "1000B", "cc": {"algorithm": "none"}},
    "traffic": [{"type": "permutation", "size": "200KB", "start": "0us"}],
    "run": {"end": "50ms", "seed": 3},
    "output": {"queue_sample_interval": "0us"},
    "routing": {"strategy": ")" +
                               strategy + R"("}})");
}

}  // namespace

TEST_CASE("adaptive routing steers around a failed link at once, ECMP waits for new routes",
          "[adaptive][failures]") {
  // agg0 - core0 fails at 20 us while every flow is sending; routes converge 1 ms later.
  auto run = [](const std::string& strategy) {
    nlohmann::json s = fat_tree_permutation(strategy);
    s["events"] = nlohmann::json::parse(R"([{"at": "20us", "link": ["agg0.0", "core0"],
                                             "state": "down"}])");
    s["routing"]["convergence_delay"] = "1ms";
    s["traffic"][0]["size"] = "2MB";
    Fabric fabric(FabricSpec::resolve(testing::inline_document(s)));
    return fabric.run();
  };
  // Frames agg0.0 dropped at its port toward core0 (queued there when the link failed, or
  // sent toward it afterwards).
  auto link_down_drops = [](const RunResult& r) {
    int64_t n = 0;
    for (const PortRecord& p : r.ports) {
      if (p.node != "agg0.0" || p.peer != "core0") continue;
      for (const PriorityCounters& c : p.counters) n += c.drops_link_down;
    }
    return n;
  };
  const RunResult ecmp = run("ecmp");
  const RunResult adaptive = run("adaptive");
  // Both lose the frames queued on the port and on the wire when the link fails; ECMP keeps
  // hashing flows onto it until the routes change.
  INFO("ECMP " << link_down_drops(ecmp) << ", adaptive " << link_down_drops(adaptive));
  CHECK(link_down_drops(adaptive) > 0);
  CHECK(link_down_drops(adaptive) <= 40);
  CHECK(link_down_drops(ecmp) > 10 * link_down_drops(adaptive));
  CHECK(ecmp.route_updates > 0);
}

TEST_CASE("adaptive runs are identical on 1 and 2 threads", "[adaptive][parallel]") {
  for (const char* strategy : {"adaptive", "flowlet", "drill", "spray"}) {
    INFO(strategy);
    nlohmann::json s = fat_tree_permutation(strategy);
    s["routing"]["adaptive"] = {{"update_period", "500ns"}};
    Fabric one(FabricSpec::resolve(testing::inline_document(s)), 1);
    Fabric two(FabricSpec::resolve(testing::inline_document(s)), 2);
    const RunResult a = one.run(), b = two.run();
    CHECK(b.partitions == 2);
    CHECK(a.fingerprint == b.fingerprint);
    nlohmann::json ja = json_report(a), jb = json_report(b);
    ja.erase("engine");
    jb.erase("engine");
    CHECK(ja == jb);
  }
}

TEST_CASE("flowlets reorder nothing when the gap exceeds the path delay difference, and do below",
          "[adaptive][flowlet]") {
  // NCCL all-to-all over two spines: connection QPs send in bursts, so flowlets form and move.
  // Go-back-N receivers retransmit whatever arrives out of order: the data packets sent count it.
  auto run = [](const std::vector<std::string>& sets) {
    std::vector<std::string> all = {"traffic[0].max_bytes=16MiB"};
    all.insert(all.end(), sets.begin(), sets.end());
    Fabric fabric(load_scenario(
        std::filesystem::path(FABTWIN_SOURCE_DIR) / "scenarios/nccl/all_to_all_4x2.json", all));
    return fabric.run();
  };
  const RunResult ecmp = run({});
  const RunResult long_gap =
      run({"routing.strategy=flowlet", "routing.adaptive.flowlet_gap=100us"});
  const RunResult short_gap = run({"routing.strategy=flowlet", "routing.adaptive.flowlet_gap=2us"});
  INFO("ECMP " << ecmp.data_packets_sent << ", 100 us gap " << long_gap.data_packets_sent << " ("
               << long_gap.flowlet_moves << " moves), 2 us gap " << short_gap.data_packets_sent
               << " (" << short_gap.flowlet_moves << " moves)");
  CHECK(ecmp.flowlet_moves == 0);
  CHECK(long_gap.flowlet_moves > 0);
  CHECK(long_gap.data_packets_sent == ecmp.data_packets_sent);
  CHECK(short_gap.flowlet_moves > long_gap.flowlet_moves);
  CHECK(short_gap.data_packets_sent > ecmp.data_packets_sent);
}

// Runtime PFC deadlock detection: the engine's checkpoints (a run stopped at exactly a multiple
// of the interval, the same for any partition count), and the detector on a 3-switch ring with
// clockwise long-way routes (a deadlock), its negative control, a slow receiver (a storm, not a
// deadlock) and a plain PFC incast (nothing).
#include <map>

#include "models/fabric/fabric.h"
#include "sim/cli/report.h"
#include "test_support.h"

using namespace fabtwin;
namespace fs = std::filesystem;

namespace {

// A chain of events per component: even steps hop to the next component (10 ps, the lookahead),
// odd ones stay (7 ps). Logs what it handles.
class Hopper : public Component {
 public:
  explicit Hopper(std::string name) : Component(std::move(name)) {}
  ComponentId next = 0;
  std::vector<int64_t> times;
  void handle(const Event& e) override {
    times.push_back(e.time.ps);
    if (e.data % 2 == 0) {
      schedule(now() + Time{10}, next, 1, e.data + 1);
    } else {
      schedule_self(now() + Time{7}, 1, e.data + 1);
    }
  }
  void kick(Time at) { schedule_self(at, 1, 0); }
};

struct CheckpointRun {
  RunCounters counters;
  uint64_t fingerprint;
  std::vector<std::pair<int64_t, size_t>> checks;  // (time, events handled so far)
  std::vector<bool> before;                        // each check saw only earlier events
  int64_t latest_event;
};

CheckpointRun run_hoppers(const std::vector<uint32_t>& partition_of, Time stop_at) {
  Simulator sim(3);
  std::vector<Hopper*> hoppers;
  for (int i = 0; i < 4; ++i) {
    auto h = std::make_unique<Hopper>(std::to_string(i));
    hoppers.push_back(h.get());
    sim.add(std::move(h));
  }
  if (!partition_of.empty()) sim.set_partitions(partition_of, Time{10});
  for (int i = 0; i < 4; ++i) {
    hoppers[i]->next = static_cast<ComponentId>((i + 1) % 4);
    hoppers[i]->kick(Time{i * 3});
  }
  CheckpointRun out;
  sim.set_checkpoints(Time{100}, [&](Time at) -> std::optional<std::string> {
    size_t handled = 0;
    int64_t latest = -1;
    for (const Hopper* h : hoppers) {
      handled += h->times.size();
      for (int64_t t : h->times) latest = std::max(latest, t);
    }
    out.checks.emplace_back(at.ps, handled);
    out.before.push_back(latest < at.ps);  // nothing at or after the checkpoint has run
    if (at >= stop_at) return "enough";
    return std::nullopt;
  });
  const int threads = static_cast<int>(sim.partition_count());
  out.counters = sim.run(Time{100'000}, {}, threads);
  out.fingerprint = sim.fingerprint();
  out.latest_event = 0;
  for (const Hopper* h : hoppers) {
    for (int64_t t : h->times) out.latest_event = std::max(out.latest_event, t);
  }
  return out;
}

const nlohmann::json kThreeHosts = nlohmann::json::parse(R"({
  "topology": {"type": "star", "hosts": 3},
  "fabric": {
    "link": {"rate": "100Gbps", "delay": "1us"},
    "switch": {"buffer": "2MB"},
    "pfc": {"enabled": true, "lossless_priorities": [3]},
    "ecn": {"enabled": false}
  },
  "nic": {"mtu": "4096B"},
  "run": {"end": "20ms"}
})");

ScenarioDocument document(nlohmann::json scenario, const std::vector<std::string>& sets) {
  ScenarioDocument doc = testing::inline_document(scenario);
  for (const std::string& s : sets) apply_override(doc.root, s);
  return doc;
}

// Three switches in a ring (s0-s1-s2-s0), host i on switch i, every switch routing toward the
// other hosts clockwise: host i's traffic to host i+2 goes the long way, s_i -> s_i+1 -> s_i+2.
// `flows`: (src, dst) pairs of 10 MB lossless writes at line rate.
FabricSpec ring(const std::vector<std::pair<int, int>>& flows,
                const std::vector<std::string>& sets = {}) {
  nlohmann::json scenario = kThreeHosts;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [src, dst] : flows) {
    list.push_back({{"src", src}, {"dst", dst}, {"size", "10MB"}, {"dscp", 26}});
  }
  scenario["traffic"] = {{{"type", "flows"}, {"flows", list}}};
  FabricSpec spec = FabricSpec::resolve(document(scenario, sets));
  const Topology& star = spec.topology;
  Topology t;
  t.kind = "ring";
  for (int h = 0; h < 3; ++h) t.add_node(Tier::Host, "host" + std::to_string(h));
  for (int i = 0; i < 3; ++i) t.add_node(Tier::Leaf, "s" + std::to_string(i));
  const BitsPerSec rate = star.links.front().rate;
  const Time delay = star.links.front().delay;
  for (int h = 0; h < 3; ++h) t.connect(3 + h, h, rate, delay);  // port 0 of s_h: host h
  for (int i = 0; i < 3; ++i) t.connect(3 + i, 3 + (i + 1) % 3, rate, delay);
  spec.topology = t;
  spec.routes = RoutingTable(t);
  for (int i = 0; i < 3; ++i) {
    const int sw = 3 + i;
    int clockwise = -1;
    for (int o = 0; o < t.nodes[sw].ports; ++o) {
      if (t.peer(sw, o).node == 3 + (i + 1) % 3) clockwise = o;
    }
    std::vector<std::vector<uint16_t>> hops;
    for (int dst = 0; dst < 3; ++dst)
      hops.push_back({static_cast<uint16_t>(dst == i ? 0 : clockwise)});
    spec.routes.set_next_hops(sw, hops);
  }
  return spec;
}

// Each host writes to the host two switches clockwise: every ring link carries two flows.
const std::vector<std::pair<int, int>> kLongWay{{0, 2}, {1, 0}, {2, 1}};

nlohmann::json report_without_engine(const RunResult& r) {
  nlohmann::json j = json_report(r);
  j.erase("engine");
  return j;
}

}  // namespace

TEST_CASE("a checkpoint stops the run at exactly its time for 1, 2 and 4 partitions",
          "[deadlock][engine]") {
  const CheckpointRun one = run_hoppers({}, Time{500});
  CHECK(one.counters.stop_reason == "enough");
  CHECK(one.counters.stop_time == Time{500});
  CHECK_FALSE(one.counters.reached_end);
  CHECK(one.latest_event < 500);
  CHECK(one.latest_event >= 490);   // the chains run every 10 ps at most: it ran up to T
  REQUIRE(one.checks.size() == 5);  // 100, 200, ..., 500
  CHECK(one.before == std::vector<bool>(5, true));
  for (size_t i = 0; i < one.checks.size(); ++i) {
    CHECK(one.checks[i].first == static_cast<int64_t>(i + 1) * 100);
  }
  for (const std::vector<uint32_t>& partitions :
       {std::vector<uint32_t>{0, 1, 0, 1}, std::vector<uint32_t>{0, 1, 2, 3}}) {
    const CheckpointRun many = run_hoppers(partitions, Time{500});
    INFO(partitions.size() << " components over " << (partitions[2] == 0 ? 2 : 4) << " partitions");
    CHECK(many.counters.stop_reason == "enough");
    CHECK(many.counters.stop_time == Time{500});
    CHECK(many.counters.events == one.counters.events);
    CHECK(many.counters.last_event_time == one.counters.last_event_time);
    CHECK(many.fingerprint == one.fingerprint);
    CHECK(many.checks == one.checks);
    CHECK(many.counters.windows > 0);
  }
}

TEST_CASE("checkpoints that stop nothing leave the run as it was", "[deadlock][engine]") {
  const CheckpointRun never = run_hoppers({0, 1, 0, 1}, Time::max());
  CHECK(never.counters.stop_reason.empty());
  CHECK(never.counters.reached_end);
  CHECK(never.checks.size() == 1000);  // every multiple of 100 ps up to the end
  CHECK(never.before == std::vector<bool>(1000, true));
  Simulator plain(3);
  std::vector<Hopper*> hoppers;
  for (int i = 0; i < 4; ++i) {
    auto h = std::make_unique<Hopper>(std::to_string(i));
    hoppers.push_back(h.get());
    plain.add(std::move(h));
  }
  plain.set_partitions({0, 1, 0, 1}, Time{10});
  for (int i = 0; i < 4; ++i) {
    hoppers[i]->next = static_cast<ComponentId>((i + 1) % 4);
    hoppers[i]->kick(Time{i * 3});
  }
  const RunCounters c = plain.run(Time{100'000}, {}, 2);
  CHECK(c.events == never.counters.events);
  CHECK(plain.fingerprint() == never.fingerprint);
}

TEST_CASE("a 3-switch ring with long-way routes deadlocks and the run stops there", "[deadlock]") {
  Fabric fabric(ring(kLongWay), 1);
  const RunResult r = fabric.run();
  CHECK(r.stop_reason == "deadlock");
  CHECK_FALSE(r.reached_end);
  CHECK(r.stop_time < parse_time("20ms"));  // not kept alive by the PFC refreshes
  CHECK(r.stop_time.ps % parse_time("100us").ps == 0);
  REQUIRE(r.deadlock.deadlocks.size() == 1);
  const DeadlockRecord& d = r.deadlock.deadlocks[0];
  CHECK(d.detected_at == r.stop_time);
  CHECK(d.queues == 3);
  CHECK(d.detected_at - d.formed_at >= parse_time("1ms"));  // stuck for detection_time
  CHECK(d.detected_at - d.formed_at < parse_time("1ms") + parse_time("100us"));
  CHECK(d.bytes_stranded > 0);
  CHECK(d.stuck_queues >= 3);
  // The cycle: each switch's clockwise egress, on the lossless priority, each waiting on the next.
  REQUIRE(r.deadlock.cycles.size() == 3);
  std::map<std::string, std::string> next;
  int64_t bytes = 0;
  for (const DeadlockQueueRecord& q : r.deadlock.cycles) {
    CHECK(q.priority == 3);
    CHECK(q.port != 0);  // not the host port
    CHECK(q.frames > 0);
    CHECK(q.stuck_since <= d.formed_at);
    next[q.node] = q.peer;
    bytes += q.bytes;
  }
  CHECK(next == std::map<std::string, std::string>{{"s0", "s1"}, {"s1", "s2"}, {"s2", "s0"}});
  CHECK(bytes == d.bytes_stranded);
  for (size_t k = 0; k < 3; ++k) {  // wait-for order: each queue's peer owns the next queue
    CHECK(r.deadlock.cycles[k].peer == r.deadlock.cycles[(k + 1) % 3].node);
  }
  // Every flow has frames stuck in the cycle (each ring link carries two of them).
  REQUIRE(d.flows == 3);
  for (uint32_t f = 0; f < 3; ++f) CHECK(r.deadlock.flows[f].flow == f);
  CHECK(r.deadlock.storms.empty());
  for (const FlowRecord& f : r.flows) CHECK_FALSE(f.completed);
  // The outputs carry it.
  const nlohmann::json j = json_report(r);
  CHECK(j["stop_reason"] == "deadlock");
  CHECK(j["deadlock"]["found"] == true);
  CHECK(j["deadlock"]["deadlocks"][0]["cycle"].size() == 3);
  CHECK(j["deadlock"]["deadlocks"][0]["flow_ids"] == nlohmann::json::array({0, 1, 2}));
  std::ostringstream summary;
  print_summary(r, summary);
  CHECK(summary.str().find("with traffic pending: deadlock") != std::string::npos);
  CHECK(summary.str().find("1 deadlock (") != std::string::npos);

  SECTION("the same report for 2 threads") {
    Fabric two(ring(kLongWay), 2);
    const RunResult r2 = two.run();
    CHECK(r2.partitions == 2);
    CHECK(r2.fingerprint == r.fingerprint);
    CHECK(report_without_engine(r2) == report_without_engine(r));
  }
}

TEST_CASE("run.on_deadlock = continue reports the deadlock and runs to the end", "[deadlock]") {
  Fabric fabric(ring(kLongWay, {"run.on_deadlock=continue", "run.end=5ms"}), 1);
  const RunResult r = fabric.run();
  CHECK(r.stop_reason.empty());
  CHECK(r.reached_end);  // the PFC refreshes keep the dead fabric going to run.end
  CHECK(r.last_event_time > parse_time("4.5ms"));
  REQUIRE(r.deadlock.deadlocks.size() == 1);  // found once, not at every checkpoint after
  CHECK(r.deadlock.deadlocks[0].queues == 3);
  CHECK(r.deadlock.deadlocks[0].detected_at < parse_time("5ms"));
}

TEST_CASE("the ring without one of the three flows does not deadlock", "[deadlock]") {
  // docs/references.md §2.5: a cyclic buffer dependency is necessary, not sufficient. Without
  // host 0's flow the link s0 -> s1 carries only host 2's second hop and never pauses.
  Fabric fabric(ring({{1, 0}, {2, 1}}), 1);
  const RunResult r = fabric.run();
  CHECK(r.stop_reason.empty());
  CHECK(r.deadlock.deadlocks.empty());
  for (const FlowRecord& f : r.flows) CHECK(f.completed);
}

TEST_CASE("a receiver that barely drains is a pause storm, not a deadlock", "[deadlock]") {
  // host0 takes 20 Mb/s off its 100 Gb/s link: it pauses its switch port for 13 ms at a time
  // (32 KB from rx_xoff down to rx_xon), the switch's ingress fills and pauses both senders.
  nlohmann::json scenario = kThreeHosts;
  scenario["nic"]["rx_drain_rate"] = "20Mbps";
  scenario["traffic"] = nlohmann::json::parse(
      R"([{"type": "flows", "flows": [{"src": 1, "dst": 0, "size": "4MB", "dscp": 26},
                                      {"src": 2, "dst": 0, "size": "4MB", "dscp": 26}]}])");
  scenario["run"]["end"] = "8ms";
  Fabric fabric(document(scenario, {}), 1);
  const RunResult r = fabric.run();
  CHECK(r.stop_reason.empty());
  CHECK(r.reached_end);
  CHECK(r.deadlock.deadlocks.empty());
  REQUIRE(r.deadlock.storms.size() == 1);
  const StormRecord& s = r.deadlock.storms[0];
  CHECK(s.node == "switch");
  CHECK(s.peer == "host0");  // the root: the switch's port to the slow receiver
  CHECK(s.switch_port);
  CHECK(s.priority == 3);
  CHECK(s.max_queues == 3);  // the root and the two senders' NICs waiting on it
  CHECK(s.first_detected - s.stuck_since >= parse_time("1ms"));
  CHECK(s.last_detected == parse_time("8ms"));
  const nlohmann::json j = json_report(r);
  CHECK(j["deadlock"]["found"] == false);
  CHECK(j["deadlock"]["storms"].size() == 1);
}

TEST_CASE("a plain PFC incast reports no deadlock and no storm", "[deadlock]") {
  Fabric fabric(load_scenario(fs::path(FABTWIN_SOURCE_DIR) / "scenarios/lossless/pfc_incast.json"));
  const RunResult r = fabric.run();
  CHECK(r.stop_reason.empty());
  CHECK(r.deadlock.enabled);
  CHECK(r.deadlock.deadlocks.empty());
  CHECK(r.deadlock.storms.empty());
  CHECK(run_figures(r).pause_sent > 0);  // it did pause
}

TEST_CASE("the detector's parameters are checked", "[deadlock]") {
  const auto error = [](const std::vector<std::string>& sets) -> std::string {
    nlohmann::json scenario = kThreeHosts;
    scenario["traffic"] = nlohmann::json::parse(
        R"([{"type": "flows", "flows": [{"src": 1, "dst": 0, "size": "1MB"}]}])");
    try {
      FabricSpec::resolve(document(scenario, sets));
    } catch (const ScenarioError& e) {
      return e.what();
    }
    return "(no error)";
  };
  CHECK_THAT(error({"fabric.deadlock.detection_time=0us"}),
             Catch::Contains("fabric.deadlock.detection_time") &&
                 Catch::Contains("expected a positive time"));
  CHECK_THAT(error({"fabric.deadlock.period=1ms"}), Catch::Contains("fabric.deadlock.period"));
  CHECK_THAT(error({"run.on_deadlock=halt"}), Catch::Contains("run.on_deadlock"));
  CHECK(error({"fabric.deadlock.enabled=false", "run.on_deadlock=continue"}) == "(no error)");
}

TEST_CASE("the detector off: no checkpoints, nothing reported", "[deadlock]") {
  Fabric fabric(ring(kLongWay, {"fabric.deadlock.enabled=false", "run.end=3ms"}), 1);
  const RunResult r = fabric.run();
  CHECK_FALSE(r.deadlock.enabled);
  CHECK(r.stop_reason.empty());
  CHECK(r.reached_end);
  CHECK(json_report(r)["deadlock"]["enabled"] == false);
}

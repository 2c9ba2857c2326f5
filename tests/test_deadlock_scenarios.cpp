// The deadlock scenarios of scenarios/deadlock/ with their expected outcomes: for each, what the
// static buffer-dependency analysis (`fabtwin deadlock`) predicts and what the run shows, and
// that the two agree (docs/deadlock.md, "Scenarios and what they show").
#include <filesystem>
#include <set>
#include <tuple>

#include "models/fabric/fabric.h"
#include "run_records.h"
#include "sim/cli/deadlock.h"
#include "sim/cli/report.h"
#include "test_support.h"

using namespace fabtwin;
namespace fs = std::filesystem;

namespace {

ScenarioDocument scenario(const std::string& file, const std::vector<std::string>& sets) {
  return load_scenario(fs::path(FABTWIN_SOURCE_DIR) / file, sets);
}

RunResult run_file(const std::string& file, const std::vector<std::string>& sets = {},
                   int threads = 1) {
  Fabric fabric(FabricSpec::resolve(scenario(file, sets)), threads);
  return fabric.run();
}

StaticDeadlockReport analyse_file(const std::string& file,
                                  const std::vector<std::string>& sets = {},
                                  DeadlockOptions options = {}) {
  const FabricSpec spec = FabricSpec::resolve(scenario(file, sets));
  return analyse_deadlocks(spec, policy_routes(spec.topology, spec.routing), options);
}

// An egress queue of a cycle: (switch, egress port, the switch it leads to, priority).
using Queue = std::tuple<std::string, int, std::string, int>;

// The queues a static cycle's edges pause: edge i leaves groups[i]'s switch by out_ports[i]
// toward groups[i + 1], on that group's priority (the rewritten one, where a rewrite applies).
std::set<Queue> queues_of(const CycleReport& c, const Topology& t) {
  std::set<Queue> queues;
  for (size_t i = 0; i < c.groups.size(); ++i) {
    const IngressGroup& next = c.groups[(i + 1) % c.groups.size()];
    queues.insert(
        {t.nodes[c.groups[i].node].name, c.out_ports[i], t.nodes[next.node].name, next.priority});
  }
  return queues;
}

// The queues of the run's deadlock number `d`.
std::set<Queue> queues_of(const RunResult& r, uint32_t d) {
  std::set<Queue> queues;
  for (const DeadlockQueueRecord& q : r.deadlock.cycles) {
    if (q.deadlock == d) queues.insert({q.node, static_cast<int>(q.port), q.peer, q.priority});
  }
  return queues;
}

std::set<std::string> switches_of(const std::set<Queue>& queues) {
  std::set<std::string> s;
  for (const Queue& q : queues) s.insert(std::get<0>(q));
  return s;
}

using testing::port_record;
using testing::total;

nlohmann::json report_without_engine(const RunResult& r) {
  nlohmann::json j = json_report(r);
  j.erase("engine");
  return j;
}

Time last_finish(const RunResult& r) {
  Time t{};
  for (const FlowRecord& f : r.flows) t = std::max(t, f.finish);
  return t;
}

const std::string kLoop = "scenarios/deadlock/routing_loop.json";
const std::string kRing = "scenarios/deadlock/ring3_longway.json";
const std::string kControl = "scenarios/deadlock/ring3_longway_control.json";
const std::string kTagger = "scenarios/deadlock/ring3_longway_tagger.json";
const std::string kWatchdog = "scenarios/deadlock/ring3_longway_watchdog.json";
const std::string kLeafSpine = "scenarios/deadlock/leafspine_failure_static.json";
const std::string kFatTree = "scenarios/bench/fat_tree_k8_permutation.json";

const std::set<Queue> kRingCycle{{"s0", 1, "s1", 3}, {"s1", 2, "s2", 3}, {"s2", 2, "s0", 3}};

}  // namespace

TEST_CASE("routing loop: lossy, TTL drops and no deadlock, lossless, a 2-switch deadlock",
          "[deadlock-scenarios]") {
  SECTION("as written: a small message on lossy priority 0") {
    const StaticDeadlockReport report = analyse_file(kLoop);
    CHECK_FALSE(report.cycle_found());
    CHECK(report.whole.edges == 0);  // priority 0 is lossy: no ingress group can pause
    CHECK(report.injected == std::vector<int>{0});

    const RunResult r = run_file(kLoop);
    CHECK(r.stop_reason.empty());
    CHECK(r.reached_end);
    CHECK(r.deadlock.enabled);
    CHECK(r.deadlock.deadlocks.empty());
    CHECK(r.deadlock.storms.empty());
    // 16 frames per (re)transmission (at 0, 500us, 1ms, 1.5ms), each dropped at its 64th
    // switch: B, on its port from A.
    CHECK(port_record(r, "B", "A").total(&PriorityCounters::drops_ttl) == 64);
    CHECK(total(r, &PriorityCounters::drops_ttl) == 64);
    CHECK(total(r, &PriorityCounters::drops) == 64);
    CHECK(total(r, &PriorityCounters::pause_sent) == 0);
    REQUIRE(r.flows.size() == 1);
    CHECK_FALSE(r.flows[0].completed);
    CHECK(r.flows[0].bytes_received == 0);
    CHECK(r.flows[0].timeouts == 4);
  }
  SECTION("made lossless (4 MB on DSCP 26): the loop fills both queues and deadlocks") {
    const std::vector<std::string> lossless{"traffic[0].flows[0].size=4MB",
                                            "traffic[0].flows[0].dscp=26"};
    const FabricSpec spec = FabricSpec::resolve(scenario(kLoop, lossless));
    const StaticDeadlockReport report =
        analyse_deadlocks(spec, policy_routes(spec.topology, spec.routing), {});
    REQUIRE(report.whole.cycles_found == 1);
    const std::set<Queue> predicted = queues_of(report.whole.cycles[0], spec.topology);
    CHECK(predicted == std::set<Queue>{{"A", 1, "B", 3}, {"B", 1, "A", 3}});

    const RunResult r = run_file(kLoop, lossless);
    CHECK(r.stop_reason == "deadlock");
    CHECK(r.stop_time == parse_time("1.1ms"));
    REQUIRE(r.deadlock.deadlocks.size() == 1);
    const DeadlockRecord& d = r.deadlock.deadlocks[0];
    CHECK(d.queues == 2);
    CHECK(queues_of(r, 0) == predicted);
    CHECK(d.formed_at < parse_time("100us"));  // the loop fills within tens of microseconds
    CHECK(d.bytes_stranded > 500'000);
    CHECK(d.flows == 1);
    // Paused for good before any frame had gone round 63 times: no TTL drop, no drop at all.
    CHECK(total(r, &PriorityCounters::drops) == 0);
    CHECK(total(r, &PriorityCounters::drops_ttl) == 0);
    CHECK_FALSE(r.flows[0].completed);
    CHECK(r.flows[0].bytes_received == 0);
  }
}

TEST_CASE("the ring with long-way routes deadlocks on the cycle the analysis predicts",
          "[deadlock-scenarios]") {
  const FabricSpec spec = FabricSpec::resolve(scenario(kRing, {}));
  const StaticDeadlockReport report =
      analyse_deadlocks(spec, policy_routes(spec.topology, spec.routing), {});
  CHECK(report.cycle_found());
  REQUIRE(report.whole.cycles_found == 1);
  const CycleReport& cycle = report.whole.cycles[0];
  CHECK(queues_of(cycle, spec.topology) == kRingCycle);
  // Each edge of the cycle is made by one flow's data: the flows fill every group on it.
  for (const EdgeLabel& label : cycle.labels) {
    REQUIRE(label.uses.size() == 1);
    CHECK_FALSE(label.uses[0].ack);
  }

  const RunResult r = run_file(kRing);
  CHECK(r.stop_reason == "deadlock");
  CHECK_FALSE(r.reached_end);
  CHECK(r.stop_time == parse_time("1.1ms"));
  REQUIRE(r.deadlock.deadlocks.size() == 1);
  const DeadlockRecord& d = r.deadlock.deadlocks[0];
  CHECK(queues_of(r, 0) == kRingCycle);  // the run finds exactly the predicted cycle
  CHECK(switches_of(queues_of(r, 0)) == std::set<std::string>{"s0", "s1", "s2"});
  CHECK(d.detected_at == r.stop_time);
  CHECK(d.formed_at < parse_time("100us"));
  CHECK(d.bytes_stranded > 1'000'000);  // about 376 KB in each of the three queues
  CHECK(d.flows == 3);
  for (const FlowRecord& f : r.flows) {
    CHECK_FALSE(f.completed);
    CHECK(f.bytes_received < f.spec.size.count);
  }
  CHECK(total(r, &PriorityCounters::drops) == 0);
}

TEST_CASE(
    "the ring's negative control: the analysis still finds the cycle, the run does not "
    "deadlock",
    "[deadlock-scenarios]") {
  // A cyclic buffer dependency is necessary, not sufficient (docs/references.md §2.5).
  const FabricSpec spec = FabricSpec::resolve(scenario(kControl, {}));
  const StaticDeadlockReport report =
      analyse_deadlocks(spec, policy_routes(spec.topology, spec.routing), {});
  CHECK(report.cycle_found());
  REQUIRE(report.whole.cycles_found == 1);
  const CycleReport& cycle = report.whole.cycles[0];
  CHECK(queues_of(cycle, spec.topology) == kRingCycle);
  // ... but no flow of the scenario crosses the edge s1 -> s2 (only h0 -> h2 would).
  int unused = 0;
  for (size_t i = 0; i < cycle.labels.size(); ++i) {
    if (!cycle.labels[i].uses.empty()) continue;
    ++unused;
    CHECK(spec.topology.nodes[cycle.groups[i].node].name == "s1");
  }
  CHECK(unused == 1);

  const RunResult r = run_file(kControl);
  CHECK(r.stop_reason.empty());
  CHECK(r.deadlock.deadlocks.empty());
  REQUIRE(r.flows.size() == 2);
  for (const FlowRecord& f : r.flows) CHECK(f.completed);
  CHECK(total(r, &PriorityCounters::drops) == 0);
  // s0 -> s1 carries one flow at line rate and is never paused.
  CHECK(port_record(r, "s0", "s1").counters[3].paused_time == Time{});
}

TEST_CASE("the deadlocking ring is the same for 1, 2 and 4 threads", "[deadlock-scenarios]") {
  const RunResult one = run_file(kRing, {}, 1);
  const nlohmann::json expected = report_without_engine(one);
  for (int threads : {2, 4}) {
    INFO(threads << " threads");
    const RunResult r = run_file(kRing, {}, threads);
    CHECK(r.fingerprint == one.fingerprint);
    CHECK(r.stop_time == one.stop_time);
    CHECK(r.stop_reason == "deadlock");
    CHECK(queues_of(r, 0) == kRingCycle);
    CHECK(report_without_engine(r) == expected);
  }
}

TEST_CASE("leaf-spine: link failures with static routes create the cycle the analysis predicts",
          "[deadlock-scenarios]") {
  const FabricSpec spec = FabricSpec::resolve(scenario(kLeafSpine, {}));
  DeadlockOptions options;
  options.failures = 1;
  const StaticDeadlockReport report =
      analyse_deadlocks(spec, policy_routes(spec.topology, spec.routing), options);
  // Whole, the routes are valley-free.
  CHECK(report.whole.cycles_found == 0);
  CHECK(report.whole.edges > 0);
  // After the scenario's events (spine0-leaf2 and spine1-leaf3 down at 100us) the backup routes
  // bounce at a leaf and close a 4-cycle.
  REQUIRE(report.scheduled.size() == 1);
  const FailureCase& after = report.scheduled[0];
  CHECK(after.at == parse_time("100us"));
  CHECK(after.links.size() == 2);
  CHECK(after.unroutable.empty());
  REQUIRE(after.analysis.cycles_found == 1);
  const std::set<Queue> predicted = queues_of(after.analysis.cycles[0], spec.topology);
  CHECK(predicted == std::set<Queue>{{"leaf0", 1, "spine0", 3},
                                     {"spine0", 1, "leaf1", 3},
                                     {"leaf1", 2, "spine1", 3},
                                     {"spine1", 0, "leaf0", 3}});
  // Each single failure alone: only leaf2-spine1 and leaf3-spine0 make a cycle, a 2-switch
  // routing loop (leaf1's static uplink for host2 meets spine1's shortest path back down through
  // leaf1; likewise leaf0 and spine0 for host3) that none of the scenario's flows takes.
  REQUIRE(report.failures.size() == 1);
  CHECK(report.failures[0].cases == 8);
  CHECK(report.failures[0].cases_with_cycles == 2);
  std::set<std::set<std::string>> looping;
  for (const FailureCase& c : report.failures[0].listed) {
    REQUIRE(c.links.size() == 1);
    const Link& l = spec.topology.links[c.links[0]];
    looping.insert({spec.topology.nodes[l.a].name, spec.topology.nodes[l.b].name});
    CHECK(c.analysis.cycles_found == 1);
    REQUIRE(c.analysis.cycles.size() == 1);
    CHECK(c.analysis.cycles[0].groups.size() == 2);
    for (const EdgeLabel& label : c.analysis.cycles[0].labels) CHECK(label.uses.empty());
  }
  CHECK(looping == std::set<std::set<std::string>>{{"leaf2", "spine1"}, {"leaf3", "spine0"}});

  const RunResult r = run_file(kLeafSpine);
  CHECK(r.stop_reason == "deadlock");
  REQUIRE(r.deadlock.deadlocks.size() == 1);
  const DeadlockRecord& d = r.deadlock.deadlocks[0];
  // After the failure and the 50us convergence: formed at about 1.2ms, found 1.1ms later.
  CHECK(d.formed_at > parse_time("150us"));
  CHECK(d.detected_at == r.stop_time);
  CHECK(r.stop_time == parse_time("2.3ms"));
  CHECK(queues_of(r, 0) == predicted);
  CHECK(d.flows == 2);
  CHECK(d.bytes_stranded > 1'000'000);
  for (const FlowRecord& f : r.flows) CHECK_FALSE(f.completed);
  // Frames toward the failed links before convergence were lost (and retransmitted).
  CHECK(total(r, &PriorityCounters::drops_link_down) > 0);
  CHECK(total(r, &PriorityCounters::drops) == total(r, &PriorityCounters::drops_link_down));
}

TEST_CASE(
    "fat-tree: up_down is cycle-free under every single and double link failure, "
    "shortest_path is not",
    "[deadlock-scenarios]") {
  DeadlockOptions two;
  two.failures = 2;
  SECTION("k=4, up_down") {
    const StaticDeadlockReport r =
        analyse_file(kFatTree, {"topology.k=4", "routing.algorithm=up_down"}, two);
    CHECK_FALSE(r.cycle_found());
    CHECK(r.whole.edges > 0);
    REQUIRE(r.failures.size() == 2);
    CHECK(r.failures[0].cases == 32);
    CHECK(r.failures[0].cases_with_cycles == 0);
    CHECK(r.failures[0].unroutable_cases == 0);
    CHECK(r.failures[1].cases == 496);
    CHECK(r.failures[1].cases_with_cycles == 0);
    // up_down never routes through a valley: where only a valley would connect two hosts they
    // are unroutable (64 cases) rather than deadlock-prone.
    CHECK(r.failures[1].unroutable_cases == 64);
  }
  SECTION("k=4, shortest_path") {
    const StaticDeadlockReport r =
        analyse_file(kFatTree, {"topology.k=4", "routing.algorithm=shortest_path"}, two);
    CHECK(r.cycle_found());
    CHECK(r.whole.cycles_found == 0);
    REQUIRE(r.failures.size() == 2);
    CHECK(r.failures[0].cases_with_cycles == 0);
    CHECK(r.failures[1].cases_with_cycles == 56);
    CHECK(r.failures[1].unroutable_cases == 8);
  }
  SECTION("k=8, up_down, every single failure") {
    DeadlockOptions one;
    one.failures = 1;
    const StaticDeadlockReport r = analyse_file(kFatTree, {"routing.algorithm=up_down"}, one);
    CHECK_FALSE(r.cycle_found());
    REQUIRE(r.failures.size() == 1);
    CHECK(r.failures[0].cases == 256);
    CHECK(r.failures[0].cases_with_cycles == 0);
    CHECK(r.failures[0].unroutable_cases == 0);
  }
}

TEST_CASE("a Tagger-style rewrite removes the ring's deadlock without loss",
          "[deadlock-scenarios]") {
  const StaticDeadlockReport report = analyse_file(kTagger);
  CHECK_FALSE(report.cycle_found());
  CHECK(report.whole.cycles_found == 0);
  CHECK(report.whole.edges == 6);

  const RunResult r = run_file(kTagger);
  CHECK(r.stop_reason.empty());
  CHECK(r.deadlock.deadlocks.empty());
  for (const FlowRecord& f : r.flows) {
    CHECK(f.completed);
    CHECK(f.packets_retransmitted == 0);
  }
  CHECK(total(r, &PriorityCounters::drops) == 0);
  CHECK(last_finish(r) == Time{3'304'313'440});  // 3.304 ms: each ring link shared by two flows
}

TEST_CASE("the PFC watchdog breaks the ring's deadlock at the cost of drops and retransmissions",
          "[deadlock-scenarios]") {
  // The routes are those of ring3_longway.json: the analysis still finds the cycle.
  const StaticDeadlockReport report = analyse_file(kWatchdog);
  REQUIRE(report.whole.cycles_found == 1);

  const RunResult r = run_file(kWatchdog);
  CHECK(r.stop_reason.empty());
  CHECK(r.deadlock.deadlocks.empty());  // never stuck for the detector's 1ms
  const int64_t drops = total(r, &PriorityCounters::watchdog_drops);
  CHECK(drops > 0);
  CHECK(total(r, &PriorityCounters::drops) == drops);
  CHECK(total(r, &PriorityCounters::watchdog_storms) > 0);
  // Storms are declared at every clockwise ring egress and at every NIC.
  for (const auto& [node, peer] : {std::pair{"s0", "s1"},
                                   {"s1", "s2"},
                                   {"s2", "s0"},
                                   {"h0", "s0"},
                                   {"h1", "s1"},
                                   {"h2", "s2"}}) {
    CHECK(port_record(r, node, peer).counters[3].watchdog_drops > 0);
  }
  int64_t retransmitted = 0;
  for (const FlowRecord& f : r.flows) {
    CHECK(f.completed);
    CHECK(f.packets_retransmitted > 0);
    CHECK(f.timeouts > 0);
    retransmitted += f.packets_retransmitted;
  }
  // The figures of docs/deadlock.md.
  CHECK(drops == 32319);
  CHECK(retransmitted == 25935);
  CHECK(total(r, &PriorityCounters::watchdog_storms) == 429);
  CHECK(last_finish(r) == Time{13'024'360'960});  // 13.024 ms, every flow

  // Against the rewrite, which loses nothing: about four times as long.
  const RunResult tagger = run_file(kTagger);
  CHECK(last_finish(r).ps > 3 * last_finish(tagger).ps);
}

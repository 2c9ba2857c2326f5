// The static buffer-dependency analysis (fabtwin deadlock): graphs of hand-built routes with a
// known cycle, shortest-path fabrics without one, labels, priorities and link failures.
#include <unistd.h>

#include <tbb/global_control.h>
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "models/fabric/buffer_dependency.h"
#include "models/fabric/fabric_spec.h"
#include "sim/cli/deadlock.h"
#include "sim/scenario_file.h"
#include "test_support.h"

using namespace fabtwin;
namespace fs = std::filesystem;

namespace {

const RoutingPolicy kShortestPath{};  // shortest_path, no static routes or rewrites

const BitsPerSec kRate{100'000'000'000};
const Time kDelay{1'000'000};

std::array<bool, kDependencyPriorities> lossless_of(std::initializer_list<int> priorities) {
  std::array<bool, kDependencyPriorities> l{};
  for (int p : priorities) l[p] = true;
  return l;
}

// "h" + 1 without GCC 12's false -Wrestrict on a literal + std::string.
std::string numbered(const char* prefix, int i) {
  std::string s = prefix;
  s += std::to_string(i);
  return s;
}

int node_id(const Topology& t, const std::string& name) {
  for (int v = 0; v < static_cast<int>(t.nodes.size()); ++v) {
    if (t.nodes[v].name == name) return v;
  }
  FAIL("no node " << name);
  return -1;
}

// The port of `node` wired to `peer`.
int port_to(const Topology& t, int node, int peer) {
  for (int p = 0; p < t.nodes[node].ports; ++p) {
    if (t.peer(node, p).node == peer) return p;
  }
  FAIL("no port from " << t.nodes[node].name << " to " << t.nodes[peer].name);
  return -1;
}

int link_between(const Topology& t, int a, int b) {
  for (int i = 0; i < static_cast<int>(t.links.size()); ++i) {
    const Link& l = t.links[i];
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return i;
  }
  FAIL("no link");
  return -1;
}

// Switches s0..s{n-1} in a ring, host hi on si (hosts first: a host index is its node id).
Topology ring(int n) {
  Topology t;
  t.kind = "ring";
  for (int i = 0; i < n; ++i) t.add_node(Tier::Host, numbered("h", i));
  for (int i = 0; i < n; ++i) t.add_node(Tier::Leaf, numbered("s", i));
  for (int i = 0; i < n; ++i) t.connect(n + i, i, kRate, kDelay);
  for (int i = 0; i < n; ++i) t.connect(n + i, n + (i + 1) % n, kRate, kDelay);
  return t;
}

// Routes held by the view itself: ports[node][dst], and an optional rewrite.
struct StaticRoutes {
  std::vector<std::vector<std::vector<uint16_t>>> ports;
  std::map<std::tuple<int, int, int>, int> rewrites;  // (node, in port, priority) -> priority
};

RouteView view_of(std::shared_ptr<StaticRoutes> r) {
  return {[r](int node, int dst, int) {
            const std::vector<uint16_t>& p = r->ports[node][dst];
            return std::span<const uint16_t>(p.data(), p.size());
          },
          [r](int node, int in_port, int priority) {
            const auto it = r->rewrites.find({node, in_port, priority});
            return it == r->rewrites.end() ? priority : it->second;
          }};
}

// Every switch of the ring sends every frame not for its own host clockwise: traffic to the
// host two switches on takes the long way.
std::shared_ptr<StaticRoutes> clockwise(const Topology& t) {
  auto r = std::make_shared<StaticRoutes>();
  const int n = t.hosts;
  r->ports.assign(t.nodes.size(), std::vector<std::vector<uint16_t>>(t.hosts));
  for (int i = 0; i < n; ++i) {
    const int s = n + i;
    for (int dst = 0; dst < n; ++dst) {
      const int next = dst == i ? dst : n + (i + 1) % n;
      r->ports[s][dst] = {static_cast<uint16_t>(port_to(t, s, next))};
    }
  }
  return r;
}

// Shortest-path tables copied into a StaticRoutes, to override some entries.
std::shared_ptr<StaticRoutes> copy_of(const Topology& t, const RoutingTable& table) {
  auto r = std::make_shared<StaticRoutes>();
  r->ports.assign(t.nodes.size(), std::vector<std::vector<uint16_t>>(t.hosts));
  for (int v = t.hosts; v < static_cast<int>(t.nodes.size()); ++v) {
    for (int dst = 0; dst < t.hosts; ++dst) {
      const auto hops = table.next_hops(v, dst);
      r->ports[v][dst].assign(hops.begin(), hops.end());
    }
  }
  return r;
}

// "s1 in from s0 p3"
std::string describe(const BufferDependencyGraph& g, int vertex) {
  const Topology& t = g.topology();
  const IngressGroup& x = g.group(vertex);
  return t.nodes[x.node].name + "<" + t.nodes[t.peer(x.node, x.port).node].name + " p" +
         std::to_string(x.priority);
}

std::vector<std::string> describe(const BufferDependencyGraph& g, const DependencyCycle& c) {
  std::vector<std::string> s;
  for (int v : c.vertices) s.push_back(describe(g, v));
  return s;
}

using testing::write_temp;

}  // namespace

TEST_CASE("a 3-switch ring with clockwise long-way routes has one cycle of 3 edges", "[deadlock]") {
  const Topology t = ring(3);
  const BufferDependencyGraph g(t, view_of(clockwise(t)), lossless_of({3}));
  REQUIRE(g.has_cycle());
  const CycleSearch search = g.cycles(10, 1000);
  CHECK(search.found == 1);
  CHECK_FALSE(search.capped);
  REQUIRE(search.cycles.size() == 1);
  const DependencyCycle& c = search.cycles[0];
  REQUIRE(c.edges.size() == 3);
  // Starts at its lowest vertex: s0's ingress group from s2.
  CHECK(describe(g, c) == std::vector<std::string>{"s0<s2 p3", "s1<s0 p3", "s2<s1 p3"});
  for (size_t i = 0; i < 3; ++i) {
    const DependencyEdge& e = g.edges()[c.edges[i]];
    CHECK(e.from == c.vertices[i]);
    CHECK(e.to == c.vertices[(i + 1) % 3]);
    CHECK(t.peer(g.group(e.from).node, e.out_port).node == g.group(e.to).node);
  }
  // Each switch: host port -> clockwise (3 edges) and from the previous switch -> onward (3).
  CHECK(g.edges().size() == 6);
  CHECK(g.groups_with_edges() == 6);
}

TEST_CASE("the same ring with shortest paths has no cycle", "[deadlock]") {
  const Topology t = ring(3);
  const RoutingTable table(t);
  const BufferDependencyGraph g(t, route_view(table), lossless_of({3}));
  CHECK_FALSE(g.has_cycle());
  CHECK(g.cycles(10, 1000).found == 0);
  // Host ingress of each switch to both neighbours; frames from a neighbour are delivered.
  CHECK(g.edges().size() == 6);
}

TEST_CASE("a leaf-spine with shortest paths has no cycle", "[deadlock]") {
  const Topology t = build_leaf_spine(4, 2, 2, kRate, kRate, kDelay);
  const RoutingTable table(t);
  const BufferDependencyGraph g(t, route_view(table), lossless_of({3}));
  CHECK_FALSE(g.has_cycle());
  CHECK(g.cycles(10, 1000).found == 0);
  // 8 host ports to 2 spines each, and each spine's 4 leaf ports down to the 3 other leaves.
  CHECK(g.edges().size() == 8 * 2 + 2 * 4 * 3);
}

TEST_CASE("a fat-tree k=4 with shortest paths has no cycle under every single link failure",
          "[deadlock]") {
  const Topology t = build_fat_tree(4, kRate, kDelay);
  const RouteFunction routes = policy_routes(t, kShortestPath);
  int cases = 0;
  for (int i = 0; i < static_cast<int>(t.links.size()); ++i) {
    const Link& l = t.links[i];
    if (t.nodes[l.a].kind != NodeKind::Switch || t.nodes[l.b].kind != NodeKind::Switch) continue;
    std::vector<bool> up(t.links.size(), true);
    up[i] = false;
    const RoutingTable table = routes(up);
    const BufferDependencyGraph g(t, route_view(table), lossless_of({3}), up);
    INFO("failed " << t.nodes[l.a].name << "-" << t.nodes[l.b].name);
    CHECK_FALSE(g.has_cycle());
    // No route crosses the failed link.
    for (const DependencyEdge& e : g.edges()) {
      CHECK(!(g.group(e.from).node == l.a && e.out_port == l.a_port));
      CHECK(!(g.group(e.from).node == l.b && e.out_port == l.b_port));
    }
    ++cases;
  }
  CHECK(cases == 32);
}

namespace {

// Spines S1, S2 and leaves L1..L4, one host each (h1..h4 = hosts 0..3).
Topology two_spines_four_leaves() {
  Topology t;
  t.kind = "leaf_spine";
  for (int i = 1; i <= 4; ++i) t.add_node(Tier::Host, numbered("h", i));
  for (int i = 1; i <= 4; ++i) t.add_node(Tier::Leaf, numbered("L", i));
  for (int i = 1; i <= 2; ++i) t.add_node(Tier::Spine, numbered("S", i));
  for (int i = 0; i < 4; ++i) t.connect(4 + i, i, kRate, kDelay);
  for (int l = 0; l < 4; ++l) {
    for (int s = 0; s < 2; ++s) t.connect(4 + l, 8 + s, kRate, kDelay);
  }
  return t;
}

}  // namespace

TEST_CASE("shortest paths after S1-L3 and S2-L4 fail bounce through a leaf and make a cycle",
          "[deadlock]") {
  // L3 reaches only S2 and L4 only S1, so L3 <-> L4 goes down to L1 or L2 and up again.
  const Topology t = two_spines_four_leaves();
  const int L3 = node_id(t, "L3"), L4 = node_id(t, "L4"), S1 = node_id(t, "S1"),
            S2 = node_id(t, "S2");
  std::vector<bool> up(t.links.size(), true);
  {
    const RoutingTable whole = policy_routes(t, kShortestPath)(up);
    CHECK_FALSE(BufferDependencyGraph(t, route_view(whole), lossless_of({3}), up).has_cycle());
  }
  up[link_between(t, S1, L3)] = false;
  up[link_between(t, S2, L4)] = false;
  const RoutingTable table = policy_routes(t, kShortestPath)(up);
  const BufferDependencyGraph g(t, route_view(table), lossless_of({3}), up);
  REQUIRE(g.has_cycle());
  // Among them the valley through both bounce leaves: L1<S2 -> S1<L1 carries L3 -> L4 frames,
  // S1<L1 -> L2<S1 frames for h2, L2<S1 -> S2<L2 L4 -> L3 frames, S2<L2 -> L1<S2 frames for h1.
  const CycleSearch search = g.cycles(100, 1000);
  bool valley = false;
  for (const DependencyCycle& c : search.cycles) {
    valley |=
        describe(g, c) == std::vector<std::string>{"L1<S2 p3", "S1<L1 p3", "L2<S1 p3", "S2<L2 p3"};
  }
  CHECK(valley);
}

TEST_CASE("a bouncing route (leaf, spine, leaf, spine) creates the 4-cycle of a valley",
          "[deadlock]") {
  // Flow A h1 -> h3 bounces L1 S1 L2 S2 L3; flow B h2 -> h4 bounces L2 S2 L1 S1 L4; all links
  // up, every other route shortest.
  const Topology t = two_spines_four_leaves();
  const int L1 = node_id(t, "L1"), L2 = node_id(t, "L2"), S1 = node_id(t, "S1"),
            S2 = node_id(t, "S2");
  const RoutingTable table(t);
  auto r = copy_of(t, table);
  const int h3 = 2, h4 = 3;
  auto route = [&](int sw, int dst, int next) {
    r->ports[sw][dst] = {static_cast<uint16_t>(port_to(t, sw, next))};
  };
  route(L1, h3, S1);
  route(S1, h3, L2);
  route(L2, h3, S2);
  route(L2, h4, S2);
  route(S2, h4, L1);
  route(L1, h4, S1);
  const BufferDependencyGraph g(t, view_of(r), lossless_of({3}));
  REQUIRE(g.has_cycle());
  const CycleSearch search = g.cycles(10, 1000);
  REQUIRE(search.found == 1);
  const DependencyCycle& c = search.cycles[0];
  CHECK(describe(g, c) == std::vector<std::string>{"L1<S2 p3", "S1<L1 p3", "L2<S1 p3", "S2<L2 p3"});

  // The labels: which destinations and which flows (data or ACKs) make each edge.
  const std::vector<TrafficPath> traffic{
      {false, 0, 0, 0, h3, 3},  // flow A, h1 -> h3
      {false, 1, 0, 1, h4, 3},  // flow B, h2 -> h4
      {false, 2, 1, 0, h3, 0},  // h1 -> h3 on a lossy priority
  };
  const std::vector<EdgeLabel> labels = g.explain(c.edges, traffic);
  REQUIRE(labels.size() == 4);
  // L1<S2 -> S1<L1 carries B (to h4); S1<L1 -> L2<S1 carries A, and also frames for h2, whose
  // shortest path from L1 may take S1; L2<S1 -> S2<L2 carries A; S2<L2 -> L1<S2 carries B and
  // frames for h1 on their shortest path from L2. ACKs take shortest paths: none of these edges.
  CHECK(labels[0].destinations == std::vector<int>{h4});
  CHECK(labels[1].destinations == std::vector<int>{1, h3});
  CHECK(labels[2].destinations == std::vector<int>{h3});
  CHECK(labels[3].destinations == std::vector<int>{0, h4});
  auto paths = [](const EdgeLabel& l) {
    std::vector<std::pair<uint32_t, bool>> p;
    for (const EdgeUse& u : l.uses) p.push_back({u.path, u.ack});
    return p;
  };
  using Uses = std::vector<std::pair<uint32_t, bool>>;
  CHECK(paths(labels[0]) == Uses{{1, false}});
  CHECK(paths(labels[1]) == Uses{{0, false}});
  CHECK(paths(labels[2]) == Uses{{0, false}});
  CHECK(paths(labels[3]) == Uses{{1, false}});
}

TEST_CASE("edge labels name the destinations and the flows whose data or ACKs cross an edge",
          "[deadlock]") {
  const Topology t = ring(3);
  const BufferDependencyGraph g(t, view_of(clockwise(t)), lossless_of({3}));
  const CycleSearch search = g.cycles(10, 1000);
  REQUIRE(search.cycles.size() == 1);
  // h0 -> h2 the long way (data), h1 -> h2 one hop (its ACKs h2 -> h1 go the long way through
  // s0 and s1), h2 -> h1 on lossy priority 1.
  const std::vector<TrafficPath> traffic{
      {false, 10, 0, 0, 2, 3}, {false, 11, 0, 1, 2, 3}, {false, 12, 1, 2, 1, 1}};
  const std::vector<EdgeLabel> labels = g.explain(search.cycles[0].edges, traffic);
  // Cycle s0<s2 -> s1<s0 -> s2<s1. Going on clockwise, s0<s2 holds frames for h1 (from h2),
  // s1<s0 frames for h2 (from h0), s2<s1 frames for h0 (from h1).
  CHECK(labels[0].destinations == std::vector<int>{1});
  CHECK(labels[1].destinations == std::vector<int>{2});
  CHECK(labels[2].destinations == std::vector<int>{0});
  // s0<s2 -> s1<s0: flow 11's ACKs (h2 -> h1 the long way).
  REQUIRE(labels[0].uses.size() == 1);
  CHECK(labels[0].uses[0].path == 1);
  CHECK(labels[0].uses[0].ack);
  // s1<s0 -> s2<s1: flow 10's data (h0 -> h2).
  REQUIRE(labels[1].uses.size() == 1);
  CHECK(labels[1].uses[0].path == 0);
  CHECK_FALSE(labels[1].uses[0].ack);
  // s2<s1 -> s0<s2: only traffic h1 -> h0 would; flow 10's ACKs go h2 -> h0 in one hop.
  CHECK(labels[2].uses.empty());
}

TEST_CASE("lossy priorities never make edges, a rewrite moves or breaks the ring's cycle",
          "[deadlock]") {
  const Topology t = ring(3);
  SECTION("no lossless priority: no edge at all") {
    const BufferDependencyGraph g(t, view_of(clockwise(t)), lossless_of({}));
    CHECK(g.edges().empty());
    CHECK_FALSE(g.has_cycle());
  }
  SECTION("two lossless priorities: one cycle on each, never mixing them") {
    const BufferDependencyGraph g(t, view_of(clockwise(t)), lossless_of({3, 4}));
    const CycleSearch search = g.cycles(10, 1000);
    REQUIRE(search.found == 2);
    std::vector<int> priorities;
    for (const DependencyCycle& c : search.cycles) {
      const int p = g.group(c.vertices[0]).priority;
      for (int v : c.vertices) CHECK(g.group(v).priority == p);
      priorities.push_back(p);
    }
    std::sort(priorities.begin(), priorities.end());
    CHECK(priorities == std::vector<int>{3, 4});
    for (const DependencyEdge& e : g.edges()) CHECK((g.group(e.from).priority != 0));
  }
  SECTION("s0 moves frames from s2 to priority 4: the cycle lives on priority 4 only") {
    auto r = clockwise(t);
    const int s0 = node_id(t, "s0");
    r->rewrites[{s0, port_to(t, s0, node_id(t, "s2")), 3}] = 4;
    const BufferDependencyGraph g(t, view_of(r), lossless_of({3, 4}));
    const CycleSearch search = g.cycles(10, 1000);
    REQUIRE(search.found == 1);
    CHECK(describe(g, search.cycles[0]) ==
          std::vector<std::string>{"s0<s2 p4", "s1<s0 p4", "s2<s1 p4"});
  }
  SECTION("s0 moves frames from s2 to a lossy priority: no cycle") {
    auto r = clockwise(t);
    const int s0 = node_id(t, "s0");
    const int from_s2 = port_to(t, s0, node_id(t, "s2"));
    r->rewrites[{s0, from_s2, 3}] = 0;
    const BufferDependencyGraph g(t, view_of(r), lossless_of({3}));
    CHECK_FALSE(g.has_cycle());
    for (const DependencyEdge& e : g.edges()) {
      CHECK(!(g.group(e.from).node == s0 && g.group(e.from).port == from_s2));
    }
  }
}

TEST_CASE("the count limit stops the cycle search and says so", "[deadlock]") {
  // Two lossless priorities give two cycles; a limit of one stops after the first.
  const Topology t = ring(3);
  const BufferDependencyGraph g(t, view_of(clockwise(t)), lossless_of({3, 4}));
  const CycleSearch search = g.cycles(0, 1);
  CHECK(search.found == 1);
  CHECK(search.capped);
  CHECK(search.cycles.empty());
}

namespace {

// A k=4 fat-tree with a permutation of 1 MB flows, and the analysis under up to two failures.
FabricSpec fat_tree_k4_permutation() {
  return FabricSpec::resolve(load_scenario(write_temp("fat_tree.json", R"({
    "topology": {"type": "fat_tree", "k": 4},
    "traffic": [{"type": "permutation", "size": "1MB"}]
  })")));
}
DeadlockOptions up_to_two_failures() {
  DeadlockOptions options;
  options.failures = 2;
  return options;
}

}  // namespace

TEST_CASE(
    "deadlock analysis of a fat-tree scenario: none whole or under single failures, "
    "valleys under some double failures",
    "[deadlock]") {
  const FabricSpec spec = fat_tree_k4_permutation();
  const DeadlockOptions options = up_to_two_failures();
  const StaticDeadlockReport report =
      analyse_deadlocks(spec, policy_routes(spec.topology, spec.routing), options);
  CHECK(report.whole.cycles_found == 0);
  CHECK(report.whole.edges > 0);
  CHECK(report.switch_links.size() == 32);
  CHECK(report.traffic.size() == 16);
  REQUIRE(report.failures.size() == 2);
  CHECK(report.failures[0].cases == 32);
  CHECK(report.failures[0].cases_with_cycles == 0);
  CHECK(report.failures[0].unroutable_cases == 0);
  CHECK(report.failures[1].cases == 32 * 31 / 2);
  // Both uplinks of one of the 8 edge switches down: its hosts are cut off (and the rest of the
  // fabric still analysed).
  CHECK(report.failures[1].unroutable_cases == 8);
  CHECK(report.failures[1].cases_with_cycles > 0);
  CHECK(report.cycle_found());
  // edge0.0-agg0.0 with edge0.1-agg0.1: pod 0's edge switches share no aggregation switch, so
  // shortest paths between them go down into another pod and up again.
  const Topology& t = spec.topology;
  const int a = link_between(t, node_id(t, "edge0.0"), node_id(t, "agg0.0"));
  const int b = link_between(t, node_id(t, "edge0.1"), node_id(t, "agg0.1"));
  const auto& listed = report.failures[1].listed;
  const auto it = std::find_if(listed.begin(), listed.end(), [&](const FailureCase& c) {
    return c.links == std::vector<int>{std::min(a, b), std::max(a, b)};
  });
  REQUIRE(it != listed.end());
  CHECK(it->unroutable.empty());
  CHECK(it->analysis.cycles_found > 0);
  REQUIRE(it->analysis.cycles.size() == 1);
  const nlohmann::json j = deadlock_json(report, spec);
  CHECK(j["cycle_found"] == true);
  CHECK(j["failures"][1]["cases"] == 496);
  CHECK(j["failures"][1]["listed"].size() == listed.size());
}

TEST_CASE("the failure cases' analysis is the same on one TBB thread as on all of them",
          "[deadlock]") {
  // The cases run in a tbb::parallel_for, each into a slot of its own; ThreadSanitizer cannot
  // follow libtbb's hand-over (tests/tsan.supp), so this is the check that they do not interfere.
  const FabricSpec spec = fat_tree_k4_permutation();
  const DeadlockOptions options = up_to_two_failures();
  const RouteFunction routes = policy_routes(spec.topology, spec.routing);
  const nlohmann::json all = deadlock_json(analyse_deadlocks(spec, routes, options), spec);
  nlohmann::json one;
  {
    const tbb::global_control serial(tbb::global_control::max_allowed_parallelism, 1);
    one = deadlock_json(analyse_deadlocks(spec, routes, options), spec);
  }
  CHECK(all.dump().size() > 1000);
  CHECK(one == all);
}

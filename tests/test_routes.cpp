// Topologies that can deadlock (ring, graph), routing policies (shortest_path, up_down, static
// per destination and priority, priority rewrite), TTL, and link failures with routes
// recomputed after a convergence delay.
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "models/fabric/fabric.h"
#include "run_records.h"
#include "sim/cli/report.h"
#include "test_support.h"

using namespace fabtwin;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

const BitsPerSec kRate = parse_rate("100Gbps");
const Time kDelay = parse_time("1us");

std::vector<bool> all_up(const Topology& t) {
  return std::vector<bool>(t.links.size(), true);
}

// The port of `node` that faces `peer`.
uint16_t port_to(const Topology& t, int node, int peer) {
  for (int p = 0; p < t.nodes[node].ports; ++p) {
    if (t.peer(node, p).node == peer) return static_cast<uint16_t>(p);
  }
  FAIL("no port from " << t.nodes[node].name << " to " << t.nodes[peer].name);
  return 0;
}

std::vector<uint16_t> hops(const RoutingTable& rt, int node, int dst, int priority = -1) {
  const auto span = priority < 0 ? rt.next_hops(node, dst) : rt.next_hops(node, dst, priority);
  return {span.begin(), span.end()};
}

RoutingPolicy policy_of(const nlohmann::json& routing, const Topology& t) {
  return RoutingPolicy::read(routing, t);
}

int link_between(const Topology& t, int a, int b) {
  for (size_t l = 0; l < t.links.size(); ++l) {
    if ((t.links[l].a == a && t.links[l].b == b) || (t.links[l].a == b && t.links[l].b == a)) {
      return static_cast<int>(l);
    }
  }
  FAIL("no link");
  return -1;
}

// Walks every ECMP branch from `src`'s switch toward `dst`, checking each path reaches dst
// within `limit` hops and, when `valley_free`, never goes up a tier after going down (rank =
// (tier, node index), as up_down defines it). Returns the number of paths.
int walk_all_paths(const Topology& t, const RoutingTable& rt, int src, int dst, bool valley_free,
                   int limit = 16) {
  auto rank_less = [&](int a, int b) {
    return std::pair(t.nodes[a].tier, a) < std::pair(t.nodes[b].tier, b);
  };
  int paths = 0;
  std::function<void(int, int, bool)> walk = [&](int node, int depth, bool went_down) {
    REQUIRE(depth < limit);
    if (node == dst) {
      ++paths;
      return;
    }
    REQUIRE(t.nodes[node].kind == NodeKind::Switch);
    const auto next = rt.next_hops(node, dst);
    REQUIRE(!next.empty());
    for (uint16_t port : next) {
      const int w = t.peer(node, port).node;
      const bool down = rank_less(w, node);
      if (valley_free) REQUIRE(!(went_down && !down));
      walk(w, depth + 1, went_down || down);
    }
  };
  walk(t.peer(src, 0).node, 1, false);
  return paths;
}

RunResult run_doc(const nlohmann::json& root, int threads = 1, const fs::path& dir = ".") {
  Fabric fabric(testing::inline_document(root, dir), threads);
  return fabric.run();
}

RunResult run_file(const std::string& scenario, const std::vector<std::string>& sets = {},
                   int threads = 1) {
  Fabric fabric(load_scenario(fs::path(FABTWIN_SOURCE_DIR) / scenario, sets), threads);
  return fabric.run();
}

using testing::port_record;
using testing::total;

nlohmann::json scenario_with(const nlohmann::json& topology, const nlohmann::json& extra = {}) {
  nlohmann::json s = {{"topology", topology},
                      {"fabric", {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}}},
                      {"nic", {{"mtu", "4096B"}}},
                      {"traffic", nlohmann::json::array()},
                      {"run", {{"end", "1ms"}}}};
  if (extra.is_object()) s.update(extra);
  return s;
}

FabricSpec resolve(const nlohmann::json& root, const fs::path& dir = ".") {
  return FabricSpec::resolve(testing::inline_document(root, dir));
}

const nlohmann::json kRing3 = {{"type", "ring"}, {"switches", 3}, {"hosts_per_switch", 1}};

}  // namespace

TEST_CASE("a ring links switch i to i+1 and hangs hosts off in order", "[routes][topology]") {
  const Topology t = build_ring(4, 2, kRate, kDelay);
  CHECK(t.kind == "ring");
  CHECK(t.hosts == 8);
  CHECK(t.nodes.size() == 12);
  CHECK(t.links.size() == 8 + 4);
  const int s0 = t.node_named("s0"), s1 = t.node_named("s1"), s3 = t.node_named("s3");
  CHECK(t.nodes[s0].tier == Tier::Leaf);
  CHECK(t.nodes[s0].ports == 4);  // two hosts, two ring neighbours
  CHECK(t.peer(s0, 0).node == t.node_named("h0"));
  CHECK(t.peer(s0, 1).node == t.node_named("h1"));
  CHECK(t.peer(t.node_named("h5"), 0).node == t.node_named("s2"));
  CHECK(t.peer(s0, 2).node == s1);  // ports face the hosts first, then the ring
  CHECK(t.peer(s0, 3).node == s3);
}

TEST_CASE("shortest_path on a ring takes the direct link, ECMP on the even ring's far side",
          "[routes]") {
  const Topology t = build_ring(4, 1, kRate, kDelay);
  const RoutingTable rt = compute_routes(t, RoutingPolicy{}, all_up(t));
  const int s0 = t.node_named("s0");
  CHECK(hops(rt, s0, 1) == std::vector<uint16_t>{port_to(t, s0, t.node_named("s1"))});
  CHECK(hops(rt, s0, 3) == std::vector<uint16_t>{port_to(t, s0, t.node_named("s3"))});
  CHECK(hops(rt, s0, 2).size() == 2);  // both ways round are 2 hops
  CHECK(rt.distance(0, 2) == 4);
  CHECK(rt.unreachable().empty());
  // The old constructor gives the same tables.
  const RoutingTable old(t);
  for (int v = t.hosts; v < static_cast<int>(t.nodes.size()); ++v)
    CHECK(old.table(v) == rt.table(v));
}

TEST_CASE("static routes override per destination, per priority, later entries first", "[routes]") {
  const Topology t = build_ring(3, 1, kRate, kDelay);
  const int s0 = t.node_named("s0"), s1 = t.node_named("s1"), s2 = t.node_named("s2");
  const uint16_t to_s1 = port_to(t, s0, s1), to_s2 = port_to(t, s0, s2);

  SECTION("the long way round for one destination") {
    const RoutingTable rt =
        compute_routes(t,
                       policy_of({{"algorithm", "static"},
                                  {"static", {{{"switch", "s0"}, {"dst", "h2"}, {"next", "s1"}}}}},
                                 t),
                       all_up(t));
    CHECK(hops(rt, s0, 2) == std::vector<uint16_t>{to_s1});
    CHECK(hops(rt, s0, 1) == std::vector<uint16_t>{to_s1});  // unchanged: direct
    for (int q = 0; q < 8; ++q) CHECK(hops(rt, s0, 2, q) == std::vector<uint16_t>{to_s1});
    CHECK(!rt.table(s0).has_priority_routes());  // no route names a priority
    CHECK(rt.distance(0, 2) == 3);               // distances stay the shortest paths'
  }
  SECTION("a route for one priority only") {
    const RoutingTable rt = compute_routes(
        t,
        policy_of(
            {{"algorithm", "static"},
             {"static", {{{"switch", "s0"}, {"dst", {"h2"}}, {"priority", 3}, {"next", {"s1"}}}}}},
            t),
        all_up(t));
    CHECK(hops(rt, s0, 2, 3) == std::vector<uint16_t>{to_s1});
    CHECK(hops(rt, s0, 2, 0) == std::vector<uint16_t>{to_s2});
    CHECK(hops(rt, s0, 2) == std::vector<uint16_t>{to_s2});  // the priority-blind entry
    CHECK(hops(rt, s0, 1, 3) == std::vector<uint16_t>{to_s1});
    CHECK(rt.table(s0).has_priority_routes());
    CHECK(!rt.table(s1).has_priority_routes());
  }
  SECTION("\"*\", ECMP over several next hops, and later entries win") {
    const RoutingTable rt = compute_routes(
        t,
        policy_of({{"algorithm", "static"},
                   {"static",
                    {{{"switch", "s0"}, {"dst", "*"}, {"next", {"s1", "s2"}}},
                     {{"switch", "s0"}, {"dst", "h0"}, {"next", "h0"}},
                     {{"switch", "s0"}, {"dst", "h1"}, {"priority", 5}, {"next", "s2"}}}}},
                  t),
        all_up(t));
    CHECK(hops(rt, s0, 2) == std::vector<uint16_t>{to_s1, to_s2});
    CHECK(hops(rt, s0, 1) == std::vector<uint16_t>{to_s1, to_s2});
    CHECK(hops(rt, s0, 0) == std::vector<uint16_t>{port_to(t, s0, 0)});
    CHECK(hops(rt, s0, 1, 5) == std::vector<uint16_t>{to_s2});
    CHECK(hops(rt, s0, 1, 4) == std::vector<uint16_t>{to_s1, to_s2});
  }
  SECTION("a route whose next hops are all down is withdrawn; the earlier one applies") {
    const RoutingPolicy p = policy_of({{"algorithm", "static"},
                                       {"static",
                                        {{{"switch", "s0"}, {"dst", "h2"}, {"next", "s1"}},
                                         {{"switch", "s0"}, {"dst", "h2"}, {"next", "s2"}}}}},
                                      t);
    CHECK(hops(compute_routes(t, p, all_up(t)), s0, 2) == std::vector<uint16_t>{to_s2});
    std::vector<bool> up = all_up(t);
    up[link_between(t, s0, s2)] = false;
    const RoutingTable failed = compute_routes(t, p, up);
    CHECK(hops(failed, s0, 2) == std::vector<uint16_t>{to_s1});
    up[link_between(t, s0, s1)] = false;  // s0 cut off the ring: no route, reported
    const RoutingTable cut = compute_routes(t, p, up);
    CHECK(cut.next_hops(s0, 2).empty());
    CHECK(cut.distance(0, 2) == -1);
    CHECK(cut.unreachable() == std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 0}, {2, 0}});
  }
}

TEST_CASE("a priority rewrite maps (ingress port, priority) and is identity elsewhere",
          "[routes]") {
  const Topology t = build_ring(3, 1, kRate, kDelay);
  const int s0 = t.node_named("s0"), s1 = t.node_named("s1"), s2 = t.node_named("s2");
  const RoutingTable rt =
      compute_routes(t,
                     policy_of({{"priority_rewrite",
                                 {{{"switch", "s1"}, {"from", "s0"}, {"priority", 3}, {"to", 4}},
                                  {{"switch", "s2"}, {"priority", 2}, {"to", 1}}}}},
                               t),
                     all_up(t));
  CHECK(rt.rewrite(s1, port_to(t, s1, s0), 3) == 4);
  CHECK(rt.rewrite(s1, port_to(t, s1, s0), 2) == 2);
  CHECK(rt.rewrite(s1, port_to(t, s1, s2), 3) == 3);
  CHECK(rt.rewrite(s1, port_to(t, s1, 1), 3) == 3);
  for (int port = 0; port < 3; ++port) CHECK(rt.rewrite(s2, port, 2) == 1);  // any ingress
  CHECK(rt.table(s0).rewrites.empty());
  CHECK(rt.rewrite(s0, 1, 3) == 3);
  CHECK(hops(rt, s1, 0) == hops(compute_routes(t, RoutingPolicy{}, all_up(t)), s1, 0));
}

TEST_CASE("up_down routes are valley-free and shortest among those", "[routes][up_down]") {
  SECTION(
      "a fat-tree: the same tables as shortest_path, with every link and under every "
      "single switch-to-switch failure every path stays valley-free") {
    const Topology t = build_fat_tree(4, kRate, kDelay);
    RoutingPolicy up_down;
    up_down.algorithm = RoutingAlgorithm::UpDown;
    const RoutingTable ud = compute_routes(t, up_down, all_up(t));
    const RoutingTable sp = compute_routes(t, RoutingPolicy{}, all_up(t));
    for (int v = t.hosts; v < static_cast<int>(t.nodes.size()); ++v)
      CHECK(ud.table(v) == sp.table(v));
    int failures = 0;
    for (size_t l = 0; l < t.links.size(); ++l) {
      if (t.links[l].a < t.hosts || t.links[l].b < t.hosts) continue;
      std::vector<bool> up = all_up(t);
      up[l] = false;
      const RoutingTable rt = compute_routes(t, up_down, up);
      REQUIRE(rt.unreachable().empty());
      for (int s = 0; s < t.hosts; ++s) {
        for (int d = 0; d < t.hosts; ++d) {
          if (s != d) CHECK(walk_all_paths(t, rt, s, d, true) >= 1);
        }
      }
      ++failures;
    }
    CHECK(failures == 32);
  }
  SECTION("a ring: the link from the highest to the lowest switch is a way down") {
    const Topology t = build_ring(4, 1, kRate, kDelay);
    RoutingPolicy up_down;
    up_down.algorithm = RoutingAlgorithm::UpDown;
    const RoutingTable rt = compute_routes(t, up_down, all_up(t));
    CHECK(rt.unreachable().empty());
    for (int s = 0; s < 4; ++s) {
      for (int d = 0; d < 4; ++d) {
        if (s != d) CHECK(walk_all_paths(t, rt, s, d, true) >= 1);
      }
    }
    // s1 -> h3: shortest is either way (2 hops), but s1 -> s0 -> s3 goes down then up.
    const int s1 = t.node_named("s1");
    CHECK(hops(rt, s1, 3) == std::vector<uint16_t>{port_to(t, s1, t.node_named("s2"))});
    CHECK(hops(compute_routes(t, RoutingPolicy{}, all_up(t)), s1, 3).size() == 2);
  }
  SECTION("a destination reachable only through a valley is unreachable, not an error") {
    // spine0 - leaf2 - spine1 with the hosts on the spines' other leaves: leaf0 -> spine0 ->
    // leaf2 -> spine1 -> leaf1 goes down into leaf2 and up again.
    Topology t;
    for (int h = 0; h < 2; ++h) t.add_node(Tier::Host, h == 0 ? "h0" : "h1");
    const int l0 = t.add_node(Tier::Leaf, "leaf0"), l1 = t.add_node(Tier::Leaf, "leaf1");
    const int l2 = t.add_node(Tier::Leaf, "leaf2");
    const int sp0 = t.add_node(Tier::Spine, "spine0"), sp1 = t.add_node(Tier::Spine, "spine1");
    t.connect(0, l0, kRate, kDelay);
    t.connect(1, l1, kRate, kDelay);
    t.connect(l0, sp0, kRate, kDelay);
    t.connect(sp0, l2, kRate, kDelay);
    t.connect(l2, sp1, kRate, kDelay);
    t.connect(sp1, l1, kRate, kDelay);
    RoutingPolicy up_down;
    up_down.algorithm = RoutingAlgorithm::UpDown;
    const RoutingTable rt = compute_routes(t, up_down, all_up(t));
    CHECK(rt.unreachable() == std::vector<std::pair<int, int>>{{0, 1}, {1, 0}});
    CHECK(rt.next_hops(l0, 1).empty());
    CHECK(compute_routes(t, RoutingPolicy{}, all_up(t)).unreachable().empty());
  }
}

TEST_CASE("routing, graph and event errors name the JSON path", "[routes][errors]") {
  const nlohmann::json graph = {{"type", "graph"},
                                {"switches", {{{"name", "A"}}, {{"name", "B"}, {"tier", "spine"}}}},
                                {"hosts", {{{"name", "h0"}}, {{"name", "h1"}}}},
                                {"links",
                                 {{{"a", "h0"}, {"b", "A"}},
                                  {{"a", "h1"}, {"b", "B"}},
                                  {{"a", "A"}, {"b", "B"}, {"delay", "2us"}}}}};
  SECTION("a valid graph") {
    const FabricSpec spec = resolve(scenario_with(graph));
    CHECK(spec.topology.kind == "graph");
    CHECK(spec.topology.hosts == 2);
    CHECK(spec.topology.nodes[spec.topology.node_named("B")].tier == Tier::Spine);
    CHECK(spec.topology.links[2].delay == parse_time("2us"));
    CHECK(spec.topology.links[0].delay == parse_time("1us"));
    CHECK(spec.routes.distance(0, 1) == 3);
  }
  auto error_of = [&](nlohmann::json topology, const nlohmann::json& extra = {}) {
    try {
      resolve(scenario_with(topology, extra));
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  nlohmann::json g = graph;
  g["links"][2]["b"] = "C";
  CHECK_THAT(error_of(g), Contains("at topology.links[2].b") && Contains("found \"C\""));
  g = graph;
  g["hosts"][1]["name"] = "A";
  CHECK_THAT(error_of(g), Contains("at topology.switches[0].name") && Contains("unique name") &&
                              Contains("topology.hosts[1].name"));
  g = graph;
  g["links"].push_back({{"a", "B"}, {"b", "h0"}});
  CHECK_THAT(error_of(g), Contains("at topology.links[3].b") && Contains("one link per host"));
  g = graph;
  g["links"].erase(1);
  CHECK_THAT(error_of(g), Contains("at topology.hosts[1]") && Contains("found none"));
  g = graph;
  g["links"].push_back({{"a", "h0"}, {"b", "h1"}});
  CHECK_THAT(error_of(g), Contains("at topology.links[3]") && Contains("hosts link to switches"));
  g = graph;
  g["switches"][0]["tier"] = "host";
  CHECK_THAT(error_of(g), Contains("at topology.switches[0].tier") && Contains("leaf,spine,core"));
  g = graph;
  g["file"] = "x.json";
  CHECK_THAT(error_of(g), Contains("at topology.switches") && Contains("found both"));
  CHECK_THAT(error_of({{"type", "graph"}, {"file", "no-such-graph.json"}}),
             Contains("at topology.file") && Contains("no-such-graph.json"));
  CHECK_THAT(error_of({{"type", "graph"}, {"file", "."}}),
             Contains("at topology.file") && Contains("found a directory"));
  CHECK_THAT(error_of({{"type", "ring"}, {"switches", 2}}), Contains("at topology.switches"));
  CHECK_THAT(error_of({{"type", "star"}, {"links", nlohmann::json::array()}}),
             Contains("at topology.links") && Contains("does not apply"));

  auto routing_error = [&](const nlohmann::json& routing) {
    return error_of(graph, {{"routing", routing}});
  };
  CHECK_THAT(routing_error({{"static", {{{"switch", "A"}, {"dst", "h1"}, {"next", "B"}}}}}),
             Contains("at routing.static") && Contains("only with algorithm \"static\""));
  CHECK_THAT(routing_error({{"algorithm", "static"},
                            {"static", {{{"switch", "A"}, {"dst", "h1"}, {"next", "h1"}}}}}),
             Contains("at routing.static[0].next") && Contains("neighbour of A (h0, B)"));
  CHECK_THAT(routing_error({{"algorithm", "static"},
                            {"static", {{{"switch", "h0"}, {"dst", "h1"}, {"next", "B"}}}}}),
             Contains("at routing.static[0].switch") && Contains("found host \"h0\""));
  CHECK_THAT(routing_error({{"algorithm", "static"},
                            {"static", {{{"switch", "A"}, {"dst", {"h1", "B"}}, {"next", "B"}}}}}),
             Contains("at routing.static[0].dst[1]") && Contains("name of a host"));
  CHECK_THAT(routing_error({{"algorithm", "static"},
                            {"static", {{{"switch", "A"}, {"dst", "*"}, {"next", "h0"}}}}}),
             Contains("at routing.static[0].next") && Contains("to itself alone"));
  CHECK_THAT(routing_error(
                 {{"algorithm", "static"},
                  {"static", {{{"switch", "A"}, {"dst", "h1"}, {"priority", 8}, {"next", "B"}}}}}),
             Contains("at routing.static[0].priority") && Contains("0..7"));
  CHECK_THAT(routing_error({{"priority_rewrite",
                             {{{"switch", "A"}, {"from", "h1"}, {"priority", 3}, {"to", 4}}}}}),
             Contains("at routing.priority_rewrite[0].from"));
  // A lossless frame may not be moved to a lossy priority (it could then be dropped).
  CHECK_THAT(routing_error({{"priority_rewrite",
                             {{{"switch", "A"}, {"from", "h0"}, {"priority", 3}, {"to", 0}}}}}),
             Contains("at routing.priority_rewrite[0].to") && Contains("lossy priority 0"));
  CHECK_THAT(routing_error({{"ttl", 0}}), Contains("at routing.ttl") && Contains("1..255"));
  CHECK_THAT(routing_error({{"algorithm", "ospf"}}), Contains("at routing.algorithm"));
  CHECK_NOTHROW(resolve(scenario_with(graph, {{"routing", {{"algorithm", "ecmp"}}}})));

  auto event_error = [&](const nlohmann::json& events) {
    return error_of(graph, {{"events", events}});
  };
  CHECK_THAT(event_error({{{"at", "1us"}, {"link", {"h0", "B"}}, {"state", "down"}}}),
             Contains("at events[0].link") && Contains("not neighbours"));
  CHECK_THAT(
      event_error({{{"at", "1us"}, {"link", {"A", "B"}}, {"switch", "A"}, {"state", "down"}}}),
      Contains("at events[0]") && Contains("found both"));
  CHECK_THAT(event_error({{{"at", "1us"}, {"switch", "h0"}, {"state", "down"}}}),
             Contains("at events[0].switch") && Contains("name of a switch"));
  CHECK_THAT(event_error({{{"at", "1us"}, {"link", {"A", "B"}}, {"state", "broken"}}}),
             Contains("at events[0].state") && Contains("down,up"));
  CHECK_THAT(event_error({{{"link", {"A", "B"}}, {"state", "down"}}}),
             Contains("at events[0].at") && Contains("required"));
  CHECK_THAT(event_error(nlohmann::json::object({{"at", "1us"}})),
             Contains("at events: expected a list"));
}

TEST_CASE("a graph topology may come from a file beside the scenario", "[routes][topology]") {
  const fs::path dir = testing::temp_dir() / "routes";
  fs::create_directories(dir);
  std::ofstream(dir / "ring.json") << R"({"switches": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
    "hosts": [{"name": "x"}, {"name": "y"}],
    "links": [{"a": "x", "b": "a"}, {"a": "y", "b": "c"},
              {"a": "a", "b": "b"}, {"a": "b", "b": "c"}, {"a": "c", "b": "a", "rate": "200Gbps"}]})";
  const FabricSpec spec = resolve(scenario_with({{"type", "graph"}, {"file", "ring.json"}}), dir);
  CHECK(spec.topology.hosts == 2);
  CHECK(spec.topology.links.size() == 5);
  CHECK(spec.topology.links[4].rate == parse_rate("200Gbps"));
  CHECK(spec.routes.distance(0, 1) == 3);  // x - a - c - y, over the direct link
  std::ofstream(dir / "bad.json") << R"({"switches": [], "hosts": [], "links": [], "extra": 1})";
  CHECK_THROWS_WITH(resolve(scenario_with({{"type", "graph"}, {"file", "bad.json"}}), dir),
                    Contains("at topology.file(bad.json).extra"));
}

TEST_CASE("link events plan per-switch route updates a convergence delay later", "[routes]") {
  const nlohmann::json ls = {
      {"type", "leaf_spine"}, {"leaves", 2}, {"spines", 2}, {"hosts_per_leaf", 1}};
  const FabricSpec spec = resolve(
      scenario_with(ls, {{"routing", {{"convergence_delay", "10us"}}},
                         {"events",
                          {{{"at", "50us"}, {"link", {"leaf1", "spine0"}}, {"state", "down"}},
                           {{"at", "50us"}, {"link", {"host1", "leaf1"}}, {"state", "down"}},
                           {{"at", "80us"}, {"switch", "leaf1"}, {"state", "up"}}}}}));
  const Topology& t = spec.topology;
  REQUIRE(spec.events.size() == 2 + 3);  // leaf1 has 3 links
  CHECK(spec.events[0].at == parse_time("50us"));
  CHECK_FALSE(spec.events[0].up);
  CHECK(spec.events[4].up);
  // At 60us every switch loses host1 (its link is down); at 90us they all get it back.
  std::set<std::string> first, second;
  for (const RouteUpdate& u : spec.route_updates) {
    if (u.at == parse_time("60us")) first.insert(t.nodes[u.node].name);
    if (u.at == parse_time("90us")) second.insert(t.nodes[u.node].name);
    CHECK((u.at == parse_time("60us") || u.at == parse_time("90us")));
  }
  CHECK(first == std::set<std::string>{"leaf0", "leaf1", "spine0", "spine1"});
  CHECK(second == first);
  REQUIRE(spec.route_epochs.size() == 3);
  CHECK(spec.route_epochs[0].unreachable.empty());
  CHECK(spec.route_epochs[1].from == parse_time("60us"));
  CHECK(spec.route_epochs[1].unreachable == std::vector<std::pair<int, int>>{{0, 1}, {1, 0}});
  CHECK(spec.route_epochs[2].unreachable.empty());
  const int leaf0 = t.node_named("leaf0");
  for (const RouteUpdate& u : spec.route_updates) {
    if (u.node == leaf0 && u.at == parse_time("60us")) CHECK(u.table.next_hops(1).empty());
    if (u.node == leaf0 && u.at == parse_time("90us")) CHECK(u.table == spec.routes.table(leaf0));
  }
}

TEST_CASE("a routing loop ends in TTL drops at the switch where the TTL runs out",
          "[routes][run]") {
  const RunResult r = run_file("scenarios/deadlock/routing_loop.json");
  // 16 frames per (re)transmission, each dropped at its 64th switch (B, on the port from A);
  // the flow is retransmitted at 500us, 1ms and 1.5ms, and the last round is gone by 2ms.
  CHECK(total(r, &PriorityCounters::drops_ttl) == 64);
  CHECK(port_record(r, "B", "A").total(&PriorityCounters::drops_ttl) == 64);
  CHECK(total(r, &PriorityCounters::drops) == 64);
  CHECK_FALSE(r.flows[0].completed);
  CHECK(r.flows[0].bytes_received == 0);
  CHECK(r.routing == "static");
  // A TTL of 65 takes each frame round once more: still never delivered.
  const RunResult longer = run_file("scenarios/deadlock/routing_loop.json", {"routing.ttl=65"});
  CHECK(port_record(longer, "A", "B").total(&PriorityCounters::drops_ttl) > 0);
  CHECK(port_record(longer, "B", "A").total(&PriorityCounters::drops_ttl) == 0);
}

TEST_CASE("long-way static routes deadlock a ring, a priority rewrite removes the cycle",
          "[routes][run]") {
  const RunResult stuck = run_file("scenarios/deadlock/ring3_longway.json", {"run.end=3ms"});
  CHECK(stuck.stop_reason == "deadlock");  // the detector ends it (else it runs to its end)
  for (const FlowRecord& f : stuck.flows) CHECK_FALSE(f.completed);
  CHECK(total(stuck, &PriorityCounters::drops) == 0);
  // Each flow's first ring hop is the long way.
  CHECK(port_record(stuck, "s0", "s1").total(&PriorityCounters::tx_packets) > 0);
  CHECK(port_record(stuck, "s0", "s2").counters[3].tx_packets == 0);

  const RunResult control = run_file("scenarios/deadlock/ring3_longway_control.json");
  CHECK(control.flows.size() == 2);
  for (const FlowRecord& f : control.flows) CHECK(f.completed);

  const RunResult tagger = run_file("scenarios/deadlock/ring3_longway_tagger.json");
  for (const FlowRecord& f : tagger.flows) CHECK(f.completed);
  // Frames cross the second ring link on priority 4; pauses stay on the arrival priority 3.
  const PortRecord& s1_s2 = port_record(tagger, "s1", "s2");
  CHECK(s1_s2.counters[3].tx_packets > 0);  // h1's flow, first ring hop
  CHECK(s1_s2.counters[4].tx_packets > 0);  // h0's flow, rewritten at s1
  const PortRecord& s2_h2 = port_record(tagger, "s2", "h2");
  CHECK(s2_h2.counters[4].tx_packets >= s1_s2.counters[4].tx_packets);
  CHECK(s2_h2.counters[3].tx_packets == 0);  // whatever reaches h2 from s1 was rewritten
  CHECK(total(tagger, &PriorityCounters::drops) == 0);
}

TEST_CASE(
    "a link failure loses frames, routes converge, and the run is the same on any "
    "thread count",
    "[routes][run]") {
  const std::string scenario = "scenarios/deadlock/leafspine_failure_static.json";
  const RunResult r = run_file(scenario, {"run.end=1ms"});
  CHECK(r.link_events.size() == 2);
  CHECK(r.link_events[0].a == "leaf2");
  CHECK(r.link_events[0].b == "spine0");
  CHECK_FALSE(r.link_events[0].up);
  CHECK(r.route_updates == 4);  // spine0 and spine1 (their backups), leaf2 and leaf3
  CHECK(r.unreachable.empty());
  // Frames queued for, on, or routed to the failed links before convergence are lost there.
  const int64_t lost = total(r, &PriorityCounters::drops_link_down);
  CHECK(lost > 0);
  CHECK(port_record(r, "spine0", "leaf2").total(&PriorityCounters::drops_link_down) > 0);
  CHECK(total(r, &PriorityCounters::drops) == lost);
  // After convergence the traffic bounces through the other leaf.
  CHECK(port_record(r, "spine0", "leaf1").total(&PriorityCounters::tx_packets) > 0);
  CHECK(port_record(r, "spine1", "leaf0").total(&PriorityCounters::tx_packets) > 0);
  for (int threads : {2, 4}) {
    const RunResult other = run_file(scenario, {"run.end=1ms"}, threads);
    CHECK(other.fingerprint == r.fingerprint);
    CHECK(total(other, &PriorityCounters::drops_link_down) == lost);
  }
}

TEST_CASE("a host cut off is reported unreachable and its traffic dropped, not a crash",
          "[routes][run]") {
  nlohmann::json s = scenario_with(
      {{"type", "leaf_spine"}, {"leaves", 2}, {"spines", 1}, {"hosts_per_leaf", 1}},
      {{"routing", {{"convergence_delay", "5us"}}},
       {"events",
        {{{"at", "20us"}, {"link", {"host1", "leaf1"}}, {"state", "down"}},
         {{"at", "300us"}, {"link", {"host1", "leaf1"}}, {"state", "up"}}}},
       {"traffic", {{{"type", "flows"}, {"flows", {{{"src", 0}, {"dst", 1}, {"size", "1MB"}}}}}}},
       {"nic", {{"mtu", "4096B"}, {"ack_timeout", "50us"}}}});
  const RunResult r = run_doc(s);
  REQUIRE(r.unreachable.size() == 2);
  CHECK(r.unreachable[0].from == parse_time("25us"));
  CHECK(r.unreachable[0].src == 0);
  CHECK(r.unreachable[0].dst == 1);
  CHECK(port_record(r, "leaf0", "host0").total(&PriorityCounters::drops_unroutable) > 0);
  CHECK(total(r, &PriorityCounters::drops_link_down) > 0);
  CHECK(r.flows[0].completed);  // the link returns at 300us and go-back-N finishes the flow
  CHECK(r.flows[0].finish > parse_time("300us"));
  std::ostringstream summary;
  print_summary(r, summary);
  CHECK_THAT(summary.str(), Contains("leaf1 - host1 down") &&
                                Contains("unreachable from 25.000 us: 2 host pair(s)"));
  const nlohmann::json j = json_report(r);
  CHECK(j["routing"]["unreachable"].size() == 2);
  CHECK(j["routing"]["link_events"][1]["state"] == "up");
}

TEST_CASE("a scenario without the new features keeps the fast path", "[routes]") {
  const FabricSpec plain = resolve(scenario_with(kRing3));
  CHECK_FALSE(plain.ttl_can_expire);
  CHECK(plain.route_updates.empty());
  CHECK(resolve(scenario_with(kRing3, {{"routing", {{"ttl", 2}}}})).ttl_can_expire);
  CHECK_FALSE(resolve(scenario_with(kRing3, {{"routing", {{"ttl", 3}}}})).ttl_can_expire);
  CHECK(resolve(scenario_with(kRing3, {{"routing", {{"algorithm", "static"}}}})).ttl_can_expire);
}

// The compact route store (issue 16 item 4): the same next hops, distances and unreachable
// pairs as the per-(node, host) tables it replaced (kept as an oracle in dense_routes_oracle.h)
// on every topology builder and a graph, under every policy, before and after link failures,
// whether a switch maps destinations per host or by runs; memory bounded by the fabric's
// structure; and a fabric too large for the machine refused before it is built.
#include <chrono>

#include "dense_routes_oracle.h"
#include "models/fabric/fabric_spec.h"
#include "models/fabric/memory_estimate.h"
#include "test_support.h"

using namespace fabtwin;
using Catch::Matchers::Contains;

namespace {

const BitsPerSec kRate = parse_rate("100Gbps");
const Time kDelay = parse_time("1us");

Topology graph_topology() {
  // Two racks joined by two spines and a direct leaf-leaf link, and hosts on the spines: hosts
  // numbered across racks, classes of one host, a spine delivering locally.
  const nlohmann::json scenario = {{"topology",
                                    {{"type", "graph"},
                                     {"switches",
                                      {{{"name", "l0"}},
                                       {{"name", "l1"}},
                                       {{"name", "s0"}, {"tier", "spine"}},
                                       {{"name", "s1"}, {"tier", "spine"}}}},
                                     {"hosts",
                                      {{{"name", "a"}},
                                       {{"name", "b"}},
                                       {{"name", "m"}},
                                       {{"name", "c"}},
                                       {{"name", "d"}},
                                       {{"name", "e"}}}},
                                     {"links",
                                      {{{"a", "a"}, {"b", "l0"}},
                                       {{"a", "b"}, {"b", "l0"}},
                                       {{"a", "m"}, {"b", "s0"}},
                                       {{"a", "c"}, {"b", "l1"}},
                                       {{"a", "d"}, {"b", "l1"}},
                                       {{"a", "e"}, {"b", "s1"}},
                                       {{"a", "l0"}, {"b", "s0"}},
                                       {{"a", "l0"}, {"b", "s1"}},
                                       {{"a", "l1"}, {"b", "s0"}},
                                       {{"a", "l1"}, {"b", "s1"}},
                                       {{"a", "l0"}, {"b", "l1"}}}}}},
                                   {"fabric", {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}}}};
  return read_topology(scenario);
}

std::vector<uint16_t> as_vector(std::span<const uint16_t> s) {
  return {s.begin(), s.end()};
}

// Compares the store with the oracle for every (node, host) and priority; counts mismatches.
void check_same_routes(const Topology& t, const RoutingPolicy& policy,
                       const std::vector<bool>& link_up) {
  const oracle::DenseRoutes dense = oracle::dense_routes(t, policy, link_up);
  int longest = 0;
  for (int s = 0; s < t.hosts; ++s) {
    for (int d = 0; d < t.hosts; ++d) {
      if (s != d && dense.distance[s][d] < oracle::kFar) {
        longest = std::max(longest, dense.distance[s][d]);
      }
    }
  }
  const int n = static_cast<int>(t.nodes.size());
  for (const int limit : {kDirectHostsLimit, 0}) {
    INFO("direct_hosts_limit " << limit);
    const RoutingTable rt = compute_routes(t, policy, link_up, limit);
    int mismatches = 0;
    std::string first;
    auto mismatch = [&](const std::string& what) {
      if (mismatches++ == 0) first = what;
    };
    for (int v = 0; v < n; ++v) {
      for (int h = 0; h < t.hosts; ++h) {
        const int want = dense.distance[v][h] >= oracle::kFar ? -1 : dense.distance[v][h];
        if (rt.distance(v, h) != want) {
          mismatch("distance " + t.nodes[v].name + " -> " + t.nodes[h].name);
        }
        if (v < t.hosts) continue;
        for (int q = -1; q < kPriorities; ++q) {
          const auto got = q < 0 ? rt.next_hops(v, h) : rt.next_hops(v, h, q);
          const auto expected =
              q < 0 ? dense.tables[v].next_hops(h) : dense.tables[v].next_hops(h, q);
          if (as_vector(got) != expected) {
            mismatch("next hops " + t.nodes[v].name + " -> " + t.nodes[h].name + " priority " +
                     std::to_string(q));
          }
        }
      }
      if (v >= t.hosts) {
        CHECK(rt.table(v).has_priority_routes() == !dense.tables[v].priority_offsets.empty());
      }
    }
    INFO("first mismatch: " << first);
    CHECK(mismatches == 0);
    CHECK(rt.unreachable() == dense.unreachable);
    CHECK(rt.longest_distance() == longest);
  }
}

// Every link up; then every `stride`-th link down (from `offset`), which cuts some hosts off
// and some paths short.
void check_with_failures(const Topology& t, const RoutingPolicy& policy) {
  std::vector<bool> up(t.links.size(), true);
  SECTION("every link up") {
    check_same_routes(t, policy, up);
  }
  for (const auto& [stride, offset] : {std::pair{5, 0}, std::pair{3, 1}, std::pair{7, 4}}) {
    DYNAMIC_SECTION("every " << stride << "th link from " << offset << " down") {
      for (size_t l = static_cast<size_t>(offset); l < up.size(); l += stride) up[l] = false;
      check_same_routes(t, policy, up);
    }
  }
}

RoutingPolicy algorithm(const char* name, const Topology& t) {
  return RoutingPolicy::read({{"algorithm", name}}, t);
}

}  // namespace

TEST_CASE("route store: fat-trees give the old next hops and distances", "[routes][route_store]") {
  for (const int k : {4, 6}) {
    const Topology t = build_fat_tree(k, kRate, kDelay);
    for (const char* a : {"shortest_path", "up_down"}) {
      DYNAMIC_SECTION("k=" << k << " " << a) {
        check_with_failures(t, algorithm(a, t));
      }
    }
  }
}

TEST_CASE("route store: leaf-spine, rail, ring and graph give the old next hops",
          "[routes][route_store]") {
  const std::vector<std::pair<const char*, Topology>> topologies = {
      {"leaf_spine", build_leaf_spine(4, 3, 5, kRate, kRate, kDelay)},
      {"rail", build_rail_optimized(6, 4, 4, 2, 3, kRate, kRate, kDelay)},
      {"ring", build_ring(5, 2, kRate, kDelay)},
      {"star", build_star(9, kRate, kDelay)},
      {"graph", graph_topology()}};
  for (const auto& [name, t] : topologies) {
    for (const char* a : {"shortest_path", "up_down"}) {
      DYNAMIC_SECTION(name << " " << a) {
        check_with_failures(t, algorithm(a, t));
      }
    }
  }
}

TEST_CASE("route store: static routes per destination and priority give the old next hops",
          "[routes][route_store]") {
  const Topology t = build_leaf_spine(3, 2, 4, kRate, kRate, kDelay);
  const RoutingPolicy policy = RoutingPolicy::read(
      {{"algorithm", "static"},
       {"static",
        {{{"switch", "leaf0"}, {"dst", "*"}, {"next", "spine1"}},
         {{"switch", "leaf0"}, {"dst", {"host5", "host9"}}, {"priority", 3}, {"next", "spine0"}},
         {{"switch", "spine0"}, {"dst", "host11"}, {"next", {"leaf1", "leaf2"}}},
         {{"switch", "leaf2"}, {"dst", "host8"}, {"next", "host8"}}}},
       {"priority_rewrite", {{{"switch", "spine1"}, {"priority", 3}, {"to", 4}}}}},
      t);
  check_with_failures(t, policy);
}

TEST_CASE("route store: a k=32 fat-tree's routes take memory bounded by its structure",
          "[routes][route_store]") {
  const int k = 32;
  const Topology t = build_fat_tree(k, kRate, kDelay);
  const RoutingTable rt(t);
  // Every switch has k ports. Its destinations fall in at most k + 2 runs (an edge switch: its
  // k/2 hosts one by one and the rest of the fabric before and after them, all sent up; an
  // aggregation switch: its pod's k/2 racks and the rest; a core: the k pods), at most k + 1
  // distinct entries, each of at most k/2 ports. A run costs 16 bytes (its first host and entry
  // in the map, its first host and ports' start in the lookup), an entry 8 (its span) + 4
  // (distance) + 2 per port and 2 for their count. Hosts: 8 bytes each for the switch they hang
  // off.
  const int64_t switches = static_cast<int64_t>(t.nodes.size()) - t.hosts;
  const int64_t per_switch = static_cast<int64_t>(sizeof(ForwardingTable)) + 16 * (k + 2) +
                             (k + 1) * (8 + 4 + 2 + 2 * (k / 2));
  const int64_t bound = switches * per_switch + static_cast<int64_t>(t.hosts) * 8 + 64;
  CHECK(static_cast<int64_t>(rt.memory_bytes()) <= bound);
  // The tables it replaced: 4 bytes of distance per (node, host) alone.
  CHECK(bound * 50 < static_cast<int64_t>(t.nodes.size()) * t.hosts * 4);
  for (int v = t.hosts; v < static_cast<int>(t.nodes.size()); ++v) {
    REQUIRE(rt.table(v).by_runs());
    REQUIRE(rt.table(v).entries() <= static_cast<size_t>(k + 1));
  }
  CHECK(rt.distance(0, t.hosts - 1) == 6);
  CHECK(rt.longest_distance() == 6);
  CHECK(rt.unreachable().empty());
}

TEST_CASE("a fabric too large for the machine is refused with its size and the estimate",
          "[routes][memory_estimate]") {
  // A k=128 fat-tree: k^3/4 hosts, 5k^2/4 switches, 3k^3/4 links.
  const TopologySize k128{"fat_tree", 524'288, 20'480, 1'572'864};
  const int64_t needed = estimated_start_bytes(k128);
  CHECK(needed > int64_t{8} << 30);
  CHECK_NOTHROW(check_fits_in_memory(k128, needed));
  CHECK_NOTHROW(check_fits_in_memory(k128, -1));  // unknown: nothing refused
  CHECK_THROWS_WITH(check_fits_in_memory(k128, int64_t{8} << 30),
                    Contains("at topology") && Contains("fat_tree of 524,288 hosts") &&
                        Contains("20,480 switches") && Contains("1,572,864 links") &&
                        Contains("needs about") && Contains("GB of memory") &&
                        Contains("this machine's 8.6 GB"));
  CHECK(with_commas(0) == "0");
  CHECK(with_commas(999) == "999");
  CHECK(with_commas(1000) == "1,000");
  CHECK(with_commas(-123456) == "-123,456");
  CHECK(with_commas(INT64_MIN) == "-9,223,372,036,854,775,808");
  CHECK(gigabytes(135'100'000'000) == "135.1 GB");
  // Estimates grow with the fabric: a k=32 fat-tree starts in the 150 MB it is measured at.
  const int64_t k32 = estimated_start_bytes({"fat_tree", 8192, 1280, 24'576});
  CHECK(k32 > 100'000'000);
  CHECK(k32 < 200'000'000);

  // read_topology hands the size to the check before building anything.
  TopologySize seen;
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(read_topology({{"topology", {{"type", "fat_tree"}, {"k", 128}}}}, {},
                                  [&](const TopologySize& s) {
                                    seen = s;
                                    check_fits_in_memory(s, int64_t{1} << 30);
                                  }),
                    Contains("524,288 hosts"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  CHECK(seen.hosts == k128.hosts);
  CHECK(seen.switches == k128.switches);
  CHECK(seen.links == k128.links);
  // The sizes every builder declares match what it builds.
  auto size_of = [](const nlohmann::json& topology) {
    TopologySize s;
    const Topology t =
        read_topology({{"topology", topology}}, {}, [&](const TopologySize& x) { s = x; });
    CHECK(s.hosts == t.hosts);
    CHECK(s.switches == static_cast<int64_t>(t.nodes.size()) - t.hosts);
    CHECK(s.links == static_cast<int64_t>(t.links.size()));
    return s;
  };
  size_of({{"type", "star"}, {"hosts", 5}});
  size_of({{"type", "leaf_spine"}, {"leaves", 3}, {"spines", 2}, {"hosts_per_leaf", 4}});
  size_of({{"type", "fat_tree"}, {"k", 6}});
  size_of({{"type", "ring"}, {"switches", 4}, {"hosts_per_switch", 3}});
  CHECK(size_of({{"type", "rail_optimized"},
                 {"nodes", 5},
                 {"gpus_per_node", 4},
                 {"nodes_per_leaf", 2},
                 {"spines", 3}})
            .spines == 3);

  // Through FabricSpec::resolve, on this machine: the largest rail-optimized fabric the
  // parameter ranges allow (67 million NICs) is refused before it is built.
  const nlohmann::json huge = {
      {"topology",
       {{"type", "rail_optimized"}, {"nodes", 65536}, {"gpus_per_node", 1024}, {"spines", 4}}},
      {"fabric", {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}}},
      {"traffic", nlohmann::json::array()},
      {"run", {{"end", "1us"}}}};
  const TopologySize rail{"rail_optimized", int64_t{65536} * 1024, 1024 + 4,
                          int64_t{65536} * 1024 + 1024 * 4, 4};
  if (machine_memory_bytes() >= 0 && machine_memory_bytes() < estimated_start_bytes(rail)) {
    CHECK_THROWS_WITH(FabricSpec::resolve(testing::inline_document(huge)),
                      Contains("rail_optimized of 67,108,864 hosts") &&
                          Contains("1,028 switches") && Contains("more than this machine's"));
  }
}

// The resolved scenario (FabricSpec): tiers and port peers of every topology, forwarding entries,
// composition by `extends` lists, shadowed keys, and the Ethernet MTU apart from the RoCE
// payload — all without building a simulator.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>

#include "models/fabric/fabric_spec.h"
#include "models/net/roce_framing.h"
#include "sim/scenario_file.h"
#include "test_support.h"

using namespace fabtwin;
namespace fs = std::filesystem;

namespace {

using testing::write_temp;

FabricSpec resolve(const nlohmann::json& scenario, const std::vector<std::string>& sets = {}) {
  return FabricSpec::resolve(load_scenario(write_temp("spec.json", scenario.dump()), sets));
}

std::string error_of(const nlohmann::json& scenario, const std::vector<std::string>& sets = {}) {
  try {
    resolve(scenario, sets);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

const nlohmann::json kStar = nlohmann::json::parse(R"({
  "topology": {"type": "star", "hosts": 4},
  "traffic": [{"type": "flows", "flows": [{"src": 0, "dst": 1, "size": "64KiB"}]}]
})");

std::map<Tier, int> tier_counts(const Topology& t) {
  std::map<Tier, int> n;
  for (const TopologyNode& node : t.nodes) ++n[node.tier];
  return n;
}

// Every port's peer points back at it, and agrees with the link list.
void check_peers(const Topology& t) {
  for (int v = 0; v < static_cast<int>(t.nodes.size()); ++v) {
    REQUIRE(static_cast<int>(t.peers[v].size()) == t.nodes[v].ports);
    for (int p = 0; p < t.nodes[v].ports; ++p) {
      const PortPeer& q = t.peer(v, p);
      CHECK(t.peer(q.node, q.port).node == v);
      CHECK(t.peer(q.node, q.port).port == p);
    }
  }
  for (const Link& l : t.links) {
    CHECK(t.peer(l.a, l.a_port).node == l.b);
    CHECK(t.peer(l.b, l.b_port).node == l.a);
  }
}

}  // namespace

TEST_CASE("a fat-tree resolves with its tiers, port peers and forwarding entries", "[spec]") {
  const FabricSpec spec = resolve({{"topology", {{"type", "fat_tree"}, {"k", 4}}},
                                   {"traffic", {{{"type", "permutation"}, {"size", "1MB"}}}}});
  const Topology& t = spec.topology;
  const auto n = tier_counts(t);
  CHECK(n.at(Tier::Host) == 16);
  CHECK(n.at(Tier::Leaf) == 8);   // edge switches
  CHECK(n.at(Tier::Spine) == 8);  // aggregation switches
  CHECK(n.at(Tier::Core) == 4);
  check_peers(t);
  // Edge switch of host 0: one port down to it; toward a host of another pod, both uplinks.
  const int edge = t.peer(0, 0).node;
  CHECK(t.nodes[edge].tier == Tier::Leaf);
  const auto down = spec.routes.table(edge).next_hops(0);
  REQUIRE(down.size() == 1);
  CHECK(t.peer(edge, down[0]).node == 0);
  const auto up = spec.routes.table(edge).next_hops(15);
  CHECK(up.size() == 2);
  for (uint16_t port : up) CHECK(t.nodes[t.peer(edge, port).node].tier == Tier::Spine);
  CHECK(spec.routes.distance(0, 15) == 6);
  CHECK(spec.flows.size() == 16);
}

TEST_CASE("every built-in topology has tiers, rail-optimized nodes carry their rail", "[spec]") {
  const FabricSpec leaf_spine =
      resolve({{"topology", {{"type", "leaf_spine"}, {"leaves", 3}, {"spines", 2}}}});
  CHECK(tier_counts(leaf_spine.topology).at(Tier::Leaf) == 3);
  CHECK(tier_counts(leaf_spine.topology).at(Tier::Spine) == 2);
  check_peers(leaf_spine.topology);
  const FabricSpec star = resolve(kStar);
  CHECK(tier_counts(star.topology).at(Tier::Leaf) == 1);
  const FabricSpec rail =
      resolve({{"topology",
                {{"type", "rail_optimized"}, {"nodes", 2}, {"gpus_per_node", 4}, {"spines", 1}}}});
  const Topology& t = rail.topology;
  check_peers(t);
  for (int h = 0; h < t.hosts; ++h) {
    CHECK(t.nodes[h].rail == h % 4);
    const int leaf = t.peer(h, 0).node;  // every NIC on its own rail's leaf
    CHECK(t.nodes[leaf].tier == Tier::Leaf);
    CHECK(t.nodes[leaf].rail == t.nodes[h].rail);
  }
}

TEST_CASE("the spec carries the resolved NIC, switch and run settings", "[spec]") {
  const FabricSpec spec = resolve(kStar, {"nic.mtu=1024B", "fabric.qos.dscp_to_priority={\"26\":5}",
                                          "run.seed=7", "fabric.pfc.lossless_priorities=[5]"});
  CHECK(spec.nic.mtu.count == 1024);
  CHECK(spec.run.seed == 7);
  CHECK(spec.nic.dscp_to_priority[26] == 5);  // the NIC follows the fabric's QoS map
  CHECK(spec.nic.lossless[5]);
  CHECK_FALSE(spec.nic.lossless[3]);
  CHECK(spec.switches.headroom_mtu == roce::data_frame(1024, true));
  CHECK(spec.congestion_control == "none");
}

TEST_CASE("an extends list applies in order, later files and the extending file winning",
          "[spec][scenario]") {
  write_temp("base_a.json", R"({"topology": {"type": "star", "hosts": 4},
                                 "run": {"seed": 3, "end": "2ms"},
                                 "fabric": {"ecn": {"kmin": "10KB"}}})");
  write_temp("calibrated.json", R"({"run": {"seed": 5},
                                    "fabric": {"ecn": {"kmax": "300KB"}}})");
  const fs::path child =
      write_temp("layered.json", R"({"extends": ["base_a.json", "calibrated.json"],
                                                         "run": {"end": "3ms"}})");
  const FabricSpec spec = FabricSpec::resolve(load_scenario(child));
  CHECK(spec.run.seed == 5);                   // calibrated.json over base_a.json
  CHECK(spec.run.end == Time{3'000'000'000});  // the extending file over both
  CHECK(spec.switches.red.kmin == 10'000);     // only base_a.json sets it
  CHECK(spec.switches.red.kmax == 300'000);    // only calibrated.json sets it
  const fs::path bad = write_temp("bad_list.json", R"({"extends": ["base_a.json", 7]})");
  CHECK_THROWS_WITH(load_scenario(bad),
                    Catch::Contains("extends[1]") && Catch::Contains("expected the path"));
}

TEST_CASE("gpu and nccl sections are accepted without collective traffic, and still checked",
          "[spec]") {
  nlohmann::json s = kStar;
  s["gpu"] = {{"pcie_rate", "200Gbps"}};
  s["nccl"] = {{"buffsize", "8MiB"}};
  CHECK(error_of(s) == "(no error)");
  s["gpu"]["pcie_speed"] = "1Gbps";
  CHECK_THAT(error_of(s), Catch::Contains("gpu.pcie_speed") && Catch::Contains("unknown key"));
}

TEST_CASE("a collective too large to plan is refused, naming its generator", "[spec]") {
  nlohmann::json s = nlohmann::json::parse(R"({
    "topology": {"type": "rail_optimized", "nodes": 1, "gpus_per_node": 8, "spines": 1},
    "traffic": [{"type": "collective", "op": "all_reduce", "size": "1GiB", "algorithm": "ring"}]
  })");
  CHECK(error_of(s) == "(no error)");
  // Found by the fuzzer: 3,333,330 GiB ran its plan's loops about 10^10 times.
  s["traffic"][0]["size"] = "3333330GiB";
  CHECK_THAT(error_of(s), Catch::Contains("traffic[0]") && Catch::Contains("NCCL steps"));
  s["traffic"][0]["op"] = "all_to_all";
  CHECK_THAT(error_of(s), Catch::Contains("traffic[0]") && Catch::Contains("NCCL steps"));
}

TEST_CASE("fabric.ecn keys shadowed by by_rate for every port speed are an error naming both",
          "[spec]") {
  const nlohmann::json kRate100 = {{"kmin", "400KB"}, {"kmax", "1600KB"}, {"pmax", 0.2}};
  nlohmann::json s = kStar;
  s["fabric"]["ecn"] = {{"kmin", "20KB"}, {"by_rate", {{"100Gbps", kRate100}}}};
  CHECK_THAT(error_of(s), Catch::Contains("fabric.ecn.kmin") &&
                              Catch::Contains("shadowed by fabric.ecn.by_rate.100Gbps"));
  // Without kmin outside by_rate there is nothing to shadow.
  s["fabric"]["ecn"].erase("kmin");
  CHECK(error_of(s) == "(no error)");
  // A port speed that by_rate does not list still uses the default marking.
  nlohmann::json ls = {
      {"topology", {{"type", "leaf_spine"}, {"uplink_rate", "400Gbps"}}},
      {"fabric", {{"ecn", {{"kmin", "20KB"}, {"by_rate", {{"100Gbps", kRate100}}}}}}}};
  CHECK(error_of(ls) == "(no error)");
  ls["fabric"]["ecn"]["by_rate"]["400Gbps"] = kRate100;
  CHECK_THAT(error_of(ls),
             Catch::Contains("fabric.ecn.by_rate.100Gbps, fabric.ecn.by_rate.400Gbps"));
}

TEST_CASE("the Ethernet port MTU is separate from the RoCE payload", "[spec]") {
  // auto: the headroom allows for the NICs' largest frame, as before.
  CHECK(resolve(kStar).switches.headroom_mtu == roce::data_frame(4096, true));
  // A jumbo port MTU: the headroom allows for a 9216-byte IP packet plus Ethernet framing.
  CHECK(resolve(kStar, {"fabric.link.mtu=9216B"}).switches.headroom_mtu == 9216 + 18);
  CHECK_THAT(error_of(kStar, {"fabric.link.mtu=1500B"}), Catch::Contains("fabric.link.mtu") &&
                                                             Catch::Contains("at least 4.156KB") &&
                                                             Catch::Contains("nic.mtu"));
  CHECK(error_of(kStar, {"fabric.link.mtu=1500B", "nic.mtu=1024B"}) == "(no error)");
  CHECK_THAT(error_of(kStar, {"fabric.link.mtu=10000B"}), Catch::Contains("1500B to 9216B"));
}

TEST_CASE("a flow needing more packets than the 32-bit PSNs number is refused, not truncated",
          "[spec]") {
  // 4295 GB in 1000 B packets is 4,295,000,000 packets: once cut to 32 bits, a flow that
  // "completed" in milliseconds.
  const nlohmann::json flows = {
      {"topology", {{"type", "star"}, {"hosts", 2}}},
      {"nic", {{"mtu", "1000B"}}},
      {"traffic",
       {{{"type", "flows"}, {"flows", {{{"src", 0}, {"dst", 1}, {"size", "4295GB"}}}}}}}};
  CHECK_THROWS_WITH(resolve(flows), Catch::Contains("at traffic[0]") &&
                                        Catch::Contains("4294967295 packets") &&
                                        Catch::Contains("4295GB"));
  nlohmann::json fits = flows;
  fits["traffic"][0]["flows"][0]["size"] = "4294GB";
  CHECK(resolve(fits).flows.at(0).size.count == 4'294'000'000'000);
}

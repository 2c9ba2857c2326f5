// The rail-optimized GPU-cluster topology: wiring, the GPU-to-NIC map, scenario errors, reading
// it from a scenario, and partitioning that keeps a GPU node's NICs together.
#include <map>
#include <set>
#include <string>

#include "models/fabric/partitioning.h"
#include "models/fabric/topology.h"
#include "models/net/routing.h"
#include "test_support.h"

using namespace fabtwin;

namespace {

const BitsPerSec k400 = parse_rate("400Gbps");
const Time k1us = parse_time("1us");

Topology rail(int nodes, int gpus, int nics, int per_leaf, int spines,
              BitsPerSec uplink = parse_rate("400Gbps")) {
  return build_rail_optimized(nodes, gpus, nics, per_leaf, spines, k400, uplink, k1us);
}

int node_named(const Topology& t, const std::string& name) {
  for (size_t v = 0; v < t.nodes.size(); ++v) {
    if (t.nodes[v].name == name) return static_cast<int>(v);
  }
  return -1;
}

// The switch host `h` hangs off.
int switch_of(const Topology& t, int h) {
  for (const Link& l : t.links) {
    if (l.a == h && t.nodes[l.b].kind == NodeKind::Switch) return l.b;
    if (l.b == h && t.nodes[l.a].kind == NodeKind::Switch) return l.a;
  }
  return -1;
}

Topology read(const nlohmann::json& topology) {
  return read_topology({{"topology", topology}, {"fabric", {{"link", {{"rate", "400Gbps"}}}}}});
}

}  // namespace

TEST_CASE("a 2-node, 8-GPU rail-optimized fabric: 8 rails, 2 spines", "[rail]") {
  const Topology t = rail(2, 8, 8, 2, 2, parse_rate("200Gbps"));
  CHECK(t.kind == "rail_optimized");
  CHECK(t.hosts == 16);
  CHECK(t.gpus_per_node == 8);
  CHECK(t.nics_per_node == 8);
  CHECK(t.gpu_nodes() == 2);
  CHECK(t.gpus() == 16);
  CHECK(t.nodes.size() == 16 + 8 + 2);
  CHECK(t.links.size() == 16 + 8 * 2);  // NIC links, then leaf-spine links
  for (int h = 0; h < t.hosts; ++h) {
    CHECK(t.nodes[h].kind == NodeKind::Host);
    CHECK(t.nodes[h].ports == 1);
  }
  CHECK(t.nodes[0].name == "node0-nic0");
  CHECK(t.nodes[9].name == "node1-nic1");
  for (int r = 0; r < 8; ++r) {
    const int leaf = node_named(t, "rail" + std::to_string(r));
    REQUIRE(leaf >= t.hosts);
    CHECK(t.nodes[leaf].kind == NodeKind::Switch);
    CHECK(t.nodes[leaf].ports == 2 + 2);  // two nodes, two spines
  }
  for (int s = 0; s < 2; ++s) {
    const int spine = node_named(t, "spine" + std::to_string(s));
    REQUIRE(spine >= t.hosts);
    CHECK(t.nodes[spine].ports == 8);
  }
  CHECK(t.oversubscription == Approx(2.0 * 400 / (2 * 200)));
  for (const Link& l : t.links) {
    const bool spine_link = t.nodes[l.b].name.rfind("spine", 0) == 0;
    CHECK(l.rate == (spine_link ? parse_rate("200Gbps") : k400));
    CHECK(l.delay == k1us);
  }
  // Every pair of NICs reaches each other: same rail through its leaf, across rails by a spine.
  const RoutingTable rt(t);
  CHECK(rt.distance(0, 8) == 2);  // node0-nic0 to node1-nic0: rail 0's leaf
  CHECK(rt.distance(0, 9) == 4);  // node0-nic0 to node1-nic1: leaf, spine, leaf
  CHECK(rt.next_hops(node_named(t, "rail0"), 9).size() == 2);
}

TEST_CASE("NIC i of every node is on rail i", "[rail]") {
  const Topology t = rail(3, 8, 8, 3, 1);
  for (int n = 0; n < 3; ++n) {
    for (int i = 0; i < 8; ++i) {
      const int h = n * 8 + i;
      INFO("node " << n << " NIC " << i);
      CHECK(t.nodes[h].name == "node" + std::to_string(n) + "-nic" + std::to_string(i));
      CHECK(t.node_of_host(h) == n);
      const int sw = switch_of(t, h);
      REQUIRE(sw >= 0);
      CHECK(t.nodes[sw].name == "rail" + std::to_string(i));
    }
  }
}

TEST_CASE("each GPU uses its NIC: one per GPU, or shared by consecutive GPUs", "[rail]") {
  SECTION("8 GPUs, 8 NICs") {
    const Topology t = rail(2, 8, 8, 2, 1);
    for (int g = 0; g < 16; ++g) {
      CHECK(t.node_of_gpu(g) == g / 8);
      CHECK(t.nic_of_gpu(g) == g);
    }
  }
  SECTION("8 GPUs, 2 NICs") {
    const Topology t = rail(2, 8, 2, 2, 1);
    CHECK(t.hosts == 4);
    CHECK(t.gpus() == 16);
    const std::vector<int> nic = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
    for (int g = 0; g < 16; ++g) CHECK(t.nic_of_gpu(g) == nic[g]);
    CHECK(t.node_of_gpu(11) == 1);
  }
  SECTION("4 GPUs, 1 NIC") {
    const Topology t = rail(3, 4, 1, 3, 0);
    CHECK(t.hosts == 3);
    CHECK(t.gpus() == 12);
    for (int g = 0; g < 12; ++g) CHECK(t.nic_of_gpu(g) == g / 4);
    CHECK(t.links.size() == 3);  // one rail of one leaf, no spines
    CHECK(t.nodes[switch_of(t, 0)].name == "rail0");
    CHECK(t.oversubscription == Approx(1.0));
    CHECK_NOTHROW(RoutingTable(t));
  }
}

TEST_CASE("nodes_per_leaf splits each rail over several leaves", "[rail]") {
  const Topology t = rail(4, 8, 8, 2, 4, parse_rate("200Gbps"));
  CHECK(t.hosts == 32);
  CHECK(t.nodes.size() == 32 + 8 * 2 + 4);
  CHECK(t.links.size() == 32 + 16 * 4);
  for (int n = 0; n < 4; ++n) {
    for (int i = 0; i < 8; ++i) {
      const int sw = switch_of(t, n * 8 + i);
      CHECK(t.nodes[sw].name == "rail" + std::to_string(i) + "-leaf" + std::to_string(n / 2));
    }
  }
  for (int v = t.hosts; v < static_cast<int>(t.nodes.size()); ++v) {
    const bool spine = t.nodes[v].name.rfind("spine", 0) == 0;
    CHECK(t.nodes[v].ports == (spine ? 16 : 2 + 4));
  }
  CHECK(node_named(t, "rail0") == -1);
  CHECK(t.oversubscription == Approx(2.0 * 400 / (4 * 200)));

  // An uneven split: the last leaf takes what is left; nodes_per_leaf above nodes is one leaf.
  const Topology uneven = rail(5, 2, 2, 2, 1);
  CHECK(uneven.nodes.size() == 10 + 2 * 3 + 1);
  CHECK(uneven.nodes[switch_of(uneven, 9)].name == "rail1-leaf2");
  CHECK(uneven.nodes[uneven.hosts + 2].ports == 1 + 1);
  const Topology wide = rail(3, 2, 2, 10, 1);
  CHECK(node_named(wide, "rail1") >= 0);
  CHECK(wide.oversubscription == Approx(3.0));
}

TEST_CASE("impossible rail-optimized shapes are scenario errors at their key", "[rail]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(rail(0, 8, 8, 1, 1), Contains("at topology.nodes"));
  CHECK_THROWS_WITH(rail(2, 0, 1, 1, 1), Contains("at topology.gpus_per_node"));
  CHECK_THROWS_WITH(rail(2, 8, 0, 1, 1), Contains("at topology.nics_per_node"));
  CHECK_THROWS_WITH(rail(2, 4, 8, 1, 1),
                    Contains("at topology.nics_per_node") && Contains("at most"));
  CHECK_THROWS_WITH(rail(2, 8, 3, 1, 1),
                    Contains("at topology.nics_per_node") && Contains("divisor"));
  CHECK_THROWS_WITH(rail(2, 8, 8, 0, 1), Contains("at topology.nodes_per_leaf"));
  CHECK_THROWS_WITH(rail(2, 8, 8, 2, -1), Contains("at topology.spines"));
  CHECK_THROWS_WITH(rail(1, 1, 1, 1, 1), Contains("at topology:") && Contains("2 NICs"));
  // No spine: fine for one rail of one leaf, an error when rails or leaves need joining.
  CHECK_NOTHROW(rail(4, 8, 1, 4, 0));
  CHECK_THROWS_WITH(rail(2, 8, 8, 2, 0), Contains("at topology.spines") && Contains("8 rail"));
  CHECK_THROWS_WITH(rail(4, 8, 1, 2, 0), Contains("at topology.spines") && Contains("2 leaf"));
}

TEST_CASE("read_topology builds a rail-optimized fabric from a scenario", "[rail]") {
  using Catch::Contains;
  SECTION("defaults: 2 nodes of 8 GPUs, one NIC per GPU, one leaf per rail, 2 spines") {
    const Topology t = read({{"type", "rail_optimized"}});
    CHECK(t.kind == "rail_optimized");
    CHECK(t.hosts == 16);
    CHECK(t.gpus_per_node == 8);
    CHECK(t.nics_per_node == 8);
    CHECK(node_named(t, "rail7") >= 0);
    CHECK(node_named(t, "spine1") >= 0);
    CHECK(node_named(t, "spine2") == -1);
    CHECK(t.links[0].rate == k400);
  }
  SECTION("every key given") {
    const Topology t = read({{"type", "rail_optimized"},
                             {"nodes", 8},
                             {"gpus_per_node", 8},
                             {"nics_per_node", 4},
                             {"nodes_per_leaf", 4},
                             {"spines", 3},
                             {"uplink_rate", "800Gbps"}});
    CHECK(t.hosts == 32);
    CHECK(t.nics_per_node == 4);
    CHECK(t.nodes.size() == 32 + 4 * 2 + 3);
    CHECK(node_named(t, "rail3-leaf1") >= 0);
    CHECK(t.oversubscription == Approx(4.0 * 400 / (3 * 800)));
    CHECK(t.nic_of_gpu(13) == 4 + 2);
  }
  SECTION("errors name the JSON path") {
    CHECK_THROWS_WITH(read({{"type", "rail_optimized"}, {"nics_per_node", 3}}),
                      Contains("at topology.nics_per_node"));
    CHECK_THROWS_WITH(read({{"type", "rail_optimized"}, {"nodes", 0}}),
                      Contains("at topology.nodes") && Contains("found 0"));
    CHECK_THROWS_WITH(read({{"type", "rail_optimized"}, {"spines", 0}}),
                      Contains("at topology.spines"));
    CHECK_THROWS_WITH(read({{"type", "rail_optimized"}, {"nodes_per_leaf", "two"}}),
                      Contains("at topology.nodes_per_leaf") && Contains("integer"));
    CHECK_THROWS_WITH(read({{"type", "rail_optimized"}, {"hosts", 8}}),
                      Contains("at topology.hosts") && Contains("does not apply"));
    CHECK_THROWS_WITH(read({{"type", "rail_optimized"}, {"leaves", 2}}),
                      Contains("at topology.leaves") && Contains("does not apply"));
    CHECK_THROWS_WITH(read({{"type", "leaf_spine"}, {"nodes", 2}}),
                      Contains("at topology.nodes") && Contains("does not apply"));
    CHECK_THROWS_WITH(read({{"type", "leaf_spine"}, {"spines", 0}}),
                      Contains("at topology.spines") && Contains("at least 1 spine"));
    CHECK_THROWS_WITH(read({{"type", "torus"}}), Contains("rail_optimized"));
  }
  SECTION("one rail of one leaf may go without spines") {
    const Topology t = read({{"type", "rail_optimized"},
                             {"nodes", 4},
                             {"gpus_per_node", 4},
                             {"nics_per_node", 1},
                             {"spines", 0}});
    CHECK(t.nodes.size() == 4 + 1);
    CHECK(t.oversubscription == Approx(1.0));
  }
}

TEST_CASE("partitioning keeps a GPU node's NICs together", "[rail]") {
  const Topology t = rail(4, 8, 8, 2, 2);
  const FabricPartitioning p = partition_fabric(t, 4, true);
  CHECK(p.partitions == 4);
  std::set<uint32_t> node_parts;
  for (int n = 0; n < t.gpu_nodes(); ++n) {
    const uint32_t first = p.partition_of[n * t.nics_per_node];
    node_parts.insert(first);
    for (int i = 1; i < t.nics_per_node; ++i) {
      INFO("node " << n << " NIC " << i);
      CHECK(p.partition_of[n * t.nics_per_node + i] == first);
    }
    // ... the partition of the switch its NIC n mod NICs hangs off (nodes spread over rails).
    const int anchor = n * t.nics_per_node + n % t.nics_per_node;
    CHECK(first == p.partition_of[switch_of(t, anchor)]);
  }
  CHECK(node_parts.size() > 1);
  CHECK(p.lookahead == k1us);
  // Cut links are counted, NIC-to-leaf links among them.
  int cut = 0, cut_nic = 0;
  for (const Link& l : t.links) {
    if (p.partition_of[l.a] == p.partition_of[l.b]) continue;
    ++cut;
    cut_nic += l.b < t.hosts || l.a < t.hosts;
  }
  CHECK(p.cut_links == cut);
  CHECK(cut_nic > 0);

  // A zero-delay link that crosses partitions leaves no lookahead, NIC links included.
  Topology zero = build_rail_optimized(2, 8, 8, 2, 1, k400, k400, Time{0});
  CHECK_THROWS_WITH(partition_fabric(zero, 4, true),
                    Catch::Contains("fabric.link.delay") && Catch::Contains("zero delay"));

  // Without keeping node NICs together (GPU nodes reach their NICs over PCIe, whose latency is
  // then the lookahead), every NIC goes with its own rail leaf and no NIC link is cut.
  const FabricPartitioning own = partition_fabric(t, 4);
  CHECK(own.partitions == 4);
  for (int h = 0; h < t.hosts; ++h) {
    INFO("NIC " << h);
    CHECK(own.partition_of[h] == own.partition_of[switch_of(t, h)]);
  }
  CHECK_NOTHROW(partition_fabric(zero, 1));

  // With GPU nodes, each NIC stays with its rail (packets stay inside their partition, PCIe's
  // latency bounds the windows) wherever the windows stay at least kLocalityWindow long; below
  // that, the cut with the longer lookahead, and a node's NICs together when PCIe takes no time.
  const FabricPartitioning quick = partition_gpu_fabric(t, 4, Time{500'000});
  CHECK_FALSE(quick.node_nics_together);
  CHECK(quick.partition_of == own.partition_of);
  CHECK(quick.lookahead == Time{500'000});
  const FabricPartitioning slow = partition_gpu_fabric(t, 4, Time{2'000'000});
  CHECK_FALSE(slow.node_nics_together);
  CHECK(slow.partition_of == own.partition_of);
  CHECK(slow.lookahead == k1us);
  const FabricPartitioning at_least = partition_gpu_fabric(t, 4, kLocalityWindow);
  CHECK_FALSE(at_least.node_nics_together);
  CHECK(at_least.lookahead == kLocalityWindow);
  const FabricPartitioning quicker = partition_gpu_fabric(t, 4, kLocalityWindow - Time{1});
  CHECK(quicker.node_nics_together);
  CHECK(quicker.partition_of == p.partition_of);
  CHECK(quicker.lookahead == k1us);
  CHECK(partition_gpu_fabric(t, 4, Time{0}).partition_of == p.partition_of);
  // NIC links of zero delay: keeping nodes together would cut one, so each NIC stays with its
  // rail and PCIe's latency is the lookahead.
  Topology zero_nic_links = t;
  for (Link& l : zero_nic_links.links) {
    if (l.a < t.hosts || l.b < t.hosts) l.delay = Time{0};
  }
  const FabricPartitioning zero_links = partition_gpu_fabric(zero_nic_links, 4, Time{10'000});
  CHECK_FALSE(zero_links.node_nics_together);
  CHECK(zero_links.lookahead == Time{10'000});

  // A run on several threads cuts a GPU fabric into two partitions per thread, unless
  // run.partitions says otherwise; one thread keeps it whole, a fabric without GPUs one per thread.
  const Time pcie{500'000};
  CHECK(partition_run(t, 1, 0, pcie, Partitioner::Metis).partitions == 1);
  CHECK(partition_run(t, 2, 0, pcie, Partitioner::Metis).partitions == 2 * 2);
  CHECK(partition_run(t, 2, 3, pcie, Partitioner::Metis).partitions == 3);
  CHECK(partition_run(t, 2, 0, std::nullopt, Partitioner::Metis).partitions == 2);
}

TEST_CASE("the other builders make one-GPU, one-NIC nodes", "[rail]") {
  const BitsPerSec r = parse_rate("100Gbps");
  for (const Topology& t : {build_star(4, r, k1us), build_leaf_spine(2, 2, 4, r, r, k1us),
                            build_fat_tree(4, r, k1us)}) {
    INFO(t.kind);
    CHECK(t.gpus_per_node == 1);
    CHECK(t.nics_per_node == 1);
    CHECK(t.gpu_nodes() == t.hosts);
    CHECK(t.gpus() == t.hosts);
    CHECK(t.nic_of_gpu(t.hosts - 1) == t.hosts - 1);
    CHECK(t.nodes[0].name == "host0");
  }
  // Partitioning of a leaf-spine: each host with its own leaf, no host link cut.
  const Topology ls = build_leaf_spine(4, 2, 8, r, r, k1us);
  const FabricPartitioning p = partition_fabric(ls, 4);
  for (int h = 0; h < ls.hosts; ++h) CHECK(p.partition_of[h] == p.partition_of[switch_of(ls, h)]);
  CHECK(p.cut_links > 0);
}

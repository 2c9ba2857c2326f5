// The fabric's wiring: hosts and switches, their ports, and full-duplex links between ports.
// Builders for a star, a two-tier leaf-spine, a k-ary fat-tree, a rail-optimized GPU cluster, a
// ring of switches and a free-form graph of named switches, hosts and links.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "models/net/link.h"
#include "sim/params.h"
#include "sim/units.h"

namespace fabtwin {

enum class NodeKind { Host, Switch };

// Where a node sits in the fabric: hosts (NICs), then the switch tiers from the hosts up. The
// star's switch and every top-of-rack, edge or rail switch is a leaf; leaf-spine spines,
// fat-tree aggregation switches and the spines joining rails are spines; fat-tree core
// switches are core.
enum class Tier : uint8_t { Host, Leaf, Spine, Core };
const char* tier_name(Tier tier);

struct TopologyNode {
  NodeKind kind;
  std::string name;
  int ports = 0;
  Tier tier = Tier::Host;
  int rail = -1;  // rail-optimized: the rail of a NIC or a rail leaf; -1 elsewhere
};

// The other end of a port: node and its port.
struct PortPeer {
  int node = -1;
  int port = -1;
};

// Hosts are nodes 0..hosts-1 (so a host index is its node id); switches follow.
//
// A host is one NIC. NICs belong to GPU nodes (servers), numbered node-major: host h is NIC
// h % nics_per_node of GPU node h / nics_per_node. The star, leaf-spine and fat-tree builders
// make every host a GPU node of one GPU and one NIC.
struct Topology {
  std::string kind;
  std::vector<TopologyNode> nodes;
  std::vector<Link> links;
  std::vector<std::vector<PortPeer>> peers;  // [node][port]: what the port is wired to
  int hosts = 0;
  double oversubscription = 1.0;  // host-facing over uplink capacity at the first tier
  int gpus_per_node = 1;
  int nics_per_node = 1;     // divides gpus_per_node
  int64_t ethernet_mtu = 0;  // fabric.link.mtu: IP packet bytes a port carries; 0 = auto

  int gpu_nodes() const { return hosts / nics_per_node; }
  int gpus() const { return gpu_nodes() * gpus_per_node; }
  int node_of_gpu(int gpu) const { return gpu / gpus_per_node; }
  // The host index of the NIC that GPU `gpu` uses: GPU i of a node uses NIC i when there are as
  // many NICs as GPUs; with fewer NICs, consecutive GPUs share one.
  int nic_of_gpu(int gpu) const {
    const int local = gpu % gpus_per_node;
    return node_of_gpu(gpu) * nics_per_node + local * nics_per_node / gpus_per_node;
  }
  int node_of_host(int host) const { return host / nics_per_node; }

  // A node of `tier` (hosts are Tier::Host, everything else a switch).
  int add_node(Tier tier, std::string name, int rail = -1);
  const PortPeer& peer(int node, int port) const { return peers[node][port]; }
  // The node of that name, or -1.
  int node_named(const std::string& name) const;
  // Connects the next free port of `a` to the next free port of `b`.
  void connect(int a, int b, BitsPerSec rate, Time delay);
};

Topology build_star(int hosts, BitsPerSec rate, Time delay);
Topology build_leaf_spine(int leaves, int spines, int hosts_per_leaf, BitsPerSec host_rate,
                          BitsPerSec uplink_rate, Time delay);
Topology build_fat_tree(int k, BitsPerSec rate, Time delay);
// GPU nodes of `gpus_per_node` GPUs and `nics_per_node` NICs (hosts "node{n}-nic{i}"); one rail
// per NIC index, each rail ceil(nodes / nodes_per_leaf) leaf switches ("rail{r}" when one leaf
// per rail, else "rail{r}-leaf{l}"); NIC i of node n on rail i's leaf n / nodes_per_leaf; every
// leaf connects to every spine ("spine{s}") at `uplink_rate`. Spines may be 0 only with one rail
// of one leaf. Throws ScenarioError, naming the `topology.*` key, for impossible values.
Topology build_rail_optimized(int nodes, int gpus_per_node, int nics_per_node, int nodes_per_leaf,
                              int spines, BitsPerSec host_rate, BitsPerSec uplink_rate, Time delay);

// `switches` switches "s0".. in a ring (switch i linked to i+1 mod N), each with
// `hosts_per_switch` hosts ("h0".., host j on switch j / hosts_per_switch); all leaves. A
// switch's ports face its hosts first, then the ring.
Topology build_ring(int switches, int hosts_per_switch, BitsPerSec rate, Time delay);

// The largest fabric a scenario may describe: a k=128 fat-tree (544,768 nodes, 1.6 million
// links) fits; kLinksPerNode links per node at most.
constexpr int64_t kMaxTopologyNodes = int64_t{1} << 20;
constexpr int64_t kLinksPerNode = 4;

// Reads `topology` and `fabric.link` from a scenario and builds the wiring. A graph topology's
// `file` is read relative to `dir` (the scenario's directory). A shape of more than `max_nodes`
// nodes (or kLinksPerNode x max_nodes links) is refused before it is built.
Topology read_topology(const nlohmann::json& scenario, const std::filesystem::path& dir = {},
                       int64_t max_nodes = kMaxTopologyNodes);

extern const ParamGroup kTopologyParams;
extern const ParamGroup kLinkParams;
extern const ParamGroup kGraphSwitchParams;  // topology.switches[] of a graph
extern const ParamGroup kGraphHostParams;    // topology.hosts[]
extern const ParamGroup kGraphLinkParams;    // topology.links[]

}  // namespace fabtwin

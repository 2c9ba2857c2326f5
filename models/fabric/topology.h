// The fabric's wiring: hosts and switches, their ports, and full-duplex links between ports.
// Builders for a star, a two-tier leaf-spine, a k-ary fat-tree and a rail-optimized GPU cluster.
#pragma once

#include <string>
#include <vector>

#include "sim/params.h"
#include "sim/units.h"

namespace fabtwin {

enum class NodeKind { Host, Switch };

struct TopologyNode {
  NodeKind kind;
  std::string name;
  int ports = 0;
};

// One full-duplex link: port `a_port` of node `a` to port `b_port` of node `b`.
struct TopologyLink {
  int a, a_port, b, b_port;
  BitsPerSec rate;
  Time delay;
};

// Hosts are nodes 0..hosts-1 (so a host index is its node id); switches follow.
//
// A host is one NIC. NICs belong to GPU nodes (servers), numbered node-major: host h is NIC
// h % nics_per_node of GPU node h / nics_per_node. The star, leaf-spine and fat-tree builders
// make every host a GPU node of one GPU and one NIC.
struct Topology {
  std::string kind;
  std::vector<TopologyNode> nodes;
  std::vector<TopologyLink> links;
  int hosts = 0;
  double oversubscription = 1.0;  // host-facing over uplink capacity at the first tier
  int gpus_per_node = 1;
  int nics_per_node = 1;  // divides gpus_per_node

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

  int add_node(NodeKind kind, std::string name);
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

// Reads `topology` and `fabric.link` from a scenario and builds the wiring.
Topology read_topology(const nlohmann::json& scenario);

extern const ParamGroup kTopologyParams;
extern const ParamGroup kLinkParams;

}  // namespace fabtwin

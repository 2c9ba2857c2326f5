// The fabric's wiring: hosts and switches, their ports, and full-duplex links between ports.
// Builders for a star, a two-tier leaf-spine and a k-ary fat-tree.
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
struct Topology {
  std::string kind;
  std::vector<TopologyNode> nodes;
  std::vector<TopologyLink> links;
  int hosts = 0;
  double oversubscription = 1.0;  // host-facing over uplink capacity at the first tier

  int add_node(NodeKind kind, std::string name);
  // Connects the next free port of `a` to the next free port of `b`.
  void connect(int a, int b, BitsPerSec rate, Time delay);
};

Topology build_star(int hosts, BitsPerSec rate, Time delay);
Topology build_leaf_spine(int leaves, int spines, int hosts_per_leaf, BitsPerSec host_rate,
                          BitsPerSec uplink_rate, Time delay);
Topology build_fat_tree(int k, BitsPerSec rate, Time delay);

// Reads `topology` and `fabric.link` from a scenario and builds the wiring.
Topology read_topology(const nlohmann::json& scenario);

extern const ParamGroup kTopologyParams;
extern const ParamGroup kLinkParams;

}  // namespace fabtwin

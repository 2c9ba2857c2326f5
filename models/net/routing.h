// Shortest-path routing tables with equal-cost multipath: for every switch and destination
// host, the egress ports that lie on a shortest path. Hosts never forward.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/fabric/topology.h"

namespace fabtwin {

class RoutingTable {
 public:
  // Computes the tables; throws ScenarioError if some host cannot reach another.
  explicit RoutingTable(const Topology& topology);

  std::span<const uint16_t> next_hops(int node, int dst_host) const {
    const NodeTable& t = tables_[node];
    const uint32_t begin = t.offsets[dst_host];
    return {t.ports.data() + begin, t.offsets[dst_host + 1] - begin};
  }
  // Hops (links) from `node` to `dst_host`.
  int distance(int node, int dst_host) const { return distance_[node][dst_host]; }

 private:
  struct NodeTable {
    std::vector<uint32_t> offsets;  // hosts + 1 entries into `ports`
    std::vector<uint16_t> ports;
  };
  std::vector<NodeTable> tables_;
  std::vector<std::vector<int>> distance_;  // [node][host]
};

// ECMP choice among `n` equal-cost ports for a flow hash at one switch.
inline uint32_t ecmp_pick(uint32_t flow_hash, uint32_t switch_salt, uint32_t n) {
  uint32_t h = (flow_hash ^ switch_salt) * 0x9E3779B1u;
  h ^= h >> 15;
  h *= 0x85EBCA77u;
  h ^= h >> 13;
  return static_cast<uint32_t>((static_cast<uint64_t>(h) * n) >> 32);
}

// The 5-tuple hash a switch sees for a RoCEv2 flow: (src IP, dst IP, UDP 17, source port,
// destination port 4791). Hosts are numbered, so their index stands in for the address.
uint32_t roce_flow_hash(uint32_t src_host, uint32_t dst_host, uint16_t udp_source_port);

}  // namespace fabtwin

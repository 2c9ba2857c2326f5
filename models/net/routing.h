// Forwarding: each switch's table gives, for every destination host, its equal-cost egress
// ports (an ECMP group). Shortest-path routing computes the tables of a whole topology; a
// switch owns a copy of its own, so that one switch's entries can change during a run without
// touching any other. Hosts never forward.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/fabric/topology.h"

namespace fabtwin {

// One switch's forwarding entries.
struct ForwardingTable {
  std::vector<uint32_t> offsets;  // hosts + 1 entries into `ports` (empty at a host)
  std::vector<uint16_t> ports;

  std::span<const uint16_t> next_hops(int dst_host) const {
    const uint32_t begin = offsets[dst_host];
    return {ports.data() + begin, offsets[dst_host + 1] - begin};
  }
};

class RoutingTable {
 public:
  RoutingTable() = default;
  // Computes shortest-path tables; throws ScenarioError if some host cannot reach another.
  explicit RoutingTable(const Topology& topology);

  const ForwardingTable& table(int node) const { return tables_[node]; }
  // Replaces one switch's entries (hand-built routes, e.g. in tests); distances stay shortest.
  void set_table(int node, ForwardingTable table) { tables_[node] = std::move(table); }
  std::span<const uint16_t> next_hops(int node, int dst_host) const {
    return tables_[node].next_hops(dst_host);
  }
  // Hops (links) from `node` to `dst_host`.
  int distance(int node, int dst_host) const { return distance_[node][dst_host]; }

 private:
  std::vector<ForwardingTable> tables_;
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

// Forwarding: each switch's table gives, for every destination host, its equal-cost egress
// ports (an ECMP group). A routing policy (`routing` section: shortest paths, valley-free
// up/down paths over the tiers, or static routes on top of shortest paths) computes the tables
// of a whole topology for a given set of working links; a switch owns a copy of its own, so
// that one switch's entries can change during a run (after a link failure or recovery) without
// touching any other. Hosts never forward.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "models/fabric/topology.h"

namespace fabtwin {

// One switch's forwarding entries.
struct ForwardingTable {
  std::vector<uint32_t> offsets;  // hosts + 1 entries into `ports` (empty at a host)
  std::vector<uint16_t> ports;
  // Per-priority entries, only at a switch where a static route names a priority:
  // hosts x kPriorities + 1 offsets into `priority_ports` (entry dst * kPriorities + priority).
  // Empty everywhere else, so that the common case stays one lookup by destination.
  std::vector<uint32_t> priority_offsets;
  std::vector<uint16_t> priority_ports;
  // Tagger-style priority rewrite: entry in_port * kPriorities + priority is the priority a
  // frame that arrived on that port with that priority leaves on. Empty: identity everywhere.
  std::vector<uint8_t> rewrites;

  // The priority-blind entry (what every priority uses unless a static route names one).
  std::span<const uint16_t> next_hops(int dst_host) const {
    const uint32_t begin = offsets[dst_host];
    return {ports.data() + begin, offsets[dst_host + 1] - begin};
  }
  // The egress ports toward `dst_host` of a frame of `priority`; empty: no route.
  std::span<const uint16_t> next_hops(int dst_host, int priority) const {
    if (priority_offsets.empty()) return next_hops(dst_host);
    const size_t i = static_cast<size_t>(dst_host) * kPriorities + static_cast<size_t>(priority);
    const uint32_t begin = priority_offsets[i];
    return {priority_ports.data() + begin, priority_offsets[i + 1] - begin};
  }
  // The priority a frame that arrived on `in_port` with `priority` leaves with.
  int rewrite(int in_port, int priority) const {
    if (rewrites.empty()) return priority;
    return rewrites[static_cast<size_t>(in_port) * kPriorities + static_cast<size_t>(priority)];
  }

  bool operator==(const ForwardingTable&) const = default;
};

enum class RoutingAlgorithm : uint8_t { ShortestPath, UpDown, Static };
const char* routing_algorithm_name(RoutingAlgorithm a);

// routing.static[i]: at switch `node`, frames to any host of `dst` (every host when empty) of
// `priority` (every priority when -1) leave toward the neighbours `next` (ECMP among them).
struct StaticRoute {
  int node = -1;
  std::vector<int> dst;
  int priority = -1;
  std::vector<int> next;

  bool operator==(const StaticRoute&) const = default;
};

// routing.priority_rewrite[i]: at switch `node`, a frame arriving from neighbour `from` (any
// neighbour when -1) with `priority` leaves with priority `to`.
struct PriorityRewrite {
  int node = -1;
  int from = -1;
  int priority = 0;
  int to = 0;

  bool operator==(const PriorityRewrite&) const = default;
};

// The `routing` section, resolved against a topology's node names.
struct RoutingPolicy {
  RoutingAlgorithm algorithm = RoutingAlgorithm::ShortestPath;
  std::vector<StaticRoute> routes;               // algorithm Static only; later entries win
  std::vector<PriorityRewrite> rewrites;         // any algorithm
  int ttl = 64;                                  // IP TTL the NICs send with
  Time convergence_delay = Time{1'000'000'000};  // link event to new routes at every switch

  // Reads `routing` (the section, may be null) naming nodes of `topology`; throws ScenarioError.
  static RoutingPolicy read(const nlohmann::json& section, const Topology& topology);

  bool operator==(const RoutingPolicy&) const = default;
};

extern const ParamGroup kRoutingParams;
extern const ParamGroup kStaticRouteParams;
extern const ParamGroup kPriorityRewriteParams;

class RoutingTable {
 public:
  RoutingTable() = default;
  // Shortest-path tables over every link; throws ScenarioError if some host cannot reach
  // another (compute_routes reports that instead).
  explicit RoutingTable(const Topology& topology);

  const ForwardingTable& table(int node) const { return tables_[node]; }
  // Replaces one switch's entries (hand-built routes, e.g. in tests); distances stay shortest.
  void set_table(int node, ForwardingTable table) { tables_[node] = std::move(table); }
  std::span<const uint16_t> next_hops(int node, int dst_host) const {
    return tables_[node].next_hops(dst_host);
  }
  std::span<const uint16_t> next_hops(int node, int dst_host, int priority) const {
    return tables_[node].next_hops(dst_host, priority);
  }
  int rewrite(int node, int in_port, int priority) const {
    return tables_[node].rewrite(in_port, priority);
  }
  // Hops (links) from `node` to `dst_host` along the policy's paths (shortest paths, or
  // valley-free ones for up_down; static routes do not change it); -1 when unreachable.
  int distance(int node, int dst_host) const {
    const int d = distance_[node][dst_host];
    return d >= kFar ? -1 : d;
  }
  // (source host, destination host) pairs with no path under the policy, in host order.
  const std::vector<std::pair<int, int>>& unreachable() const { return unreachable_; }

 private:
  static constexpr int kFar = 1 << 29;
  friend RoutingTable compute_routes(const Topology&, const RoutingPolicy&,
                                     const std::vector<bool>&);
  std::vector<ForwardingTable> tables_;
  std::vector<std::vector<int>> distance_;  // [node][host]
  std::vector<std::pair<int, int>> unreachable_;

 public:
  bool operator==(const RoutingTable&) const = default;
};

// The tables `policy` gives every switch of `topology` when only the links with
// link_up[i] (indexed like topology.links) work. Never throws for an unreachable destination:
// its entries are empty and unreachable() lists the pairs.
RoutingTable compute_routes(const Topology& topology, const RoutingPolicy& policy,
                            const std::vector<bool>& link_up);

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

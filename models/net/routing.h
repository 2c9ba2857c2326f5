// Forwarding: each switch's table gives, for every destination host, its equal-cost egress
// ports (an ECMP group). A routing policy (`routing` section: shortest paths, valley-free
// up/down paths over the tiers, or static routes on top of shortest paths) computes the tables
// of a whole topology for a given set of working links; a switch owns a copy of its own, so
// that one switch's entries can change during a run (after a link failure or recovery) without
// touching any other. Hosts never forward.
//
// The computation works per destination class (the hosts hanging off the same set of switches:
// the hosts of one rack): they have the same next hops at every switch but those, so one search
// per class serves them all, and nothing of size switches x hosts is ever held (see
// forwarding_table.h for how a switch stores its entries).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "models/fabric/topology.h"
#include "models/net/adaptive_routing.h"
#include "models/net/forwarding_table.h"
#include "sim/rng.h"

namespace fabtwin {

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
  StrategyPolicy strategies;                     // how each switch chooses among equal-cost ports

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

  // Switch `node`'s table; a host's is empty (hosts do not forward).
  const ForwardingTable& table(int node) const {
    return node < hosts_ ? kNoTable : tables_[node - hosts_];
  }
  // Replaces one switch's next hops (hand-built routes, e.g. in tests): per_host[h] toward
  // host h. Distances and priority rewrites stay.
  void set_next_hops(int node, const std::vector<std::vector<uint16_t>>& per_host);
  std::span<const uint16_t> next_hops(int node, int dst_host) const {
    return table(node).next_hops(dst_host);
  }
  std::span<const uint16_t> next_hops(int node, int dst_host, int priority) const {
    return table(node).next_hops(dst_host, priority);
  }
  int rewrite(int node, int in_port, int priority) const {
    return table(node).rewrite(in_port, priority);
  }
  // Hops (links) from `node` to `dst_host` along the policy's paths (shortest paths, or
  // valley-free ones for up_down; static routes do not change it); -1 when unreachable.
  int distance(int node, int dst_host) const;
  // (source host, destination host) pairs with no path under the policy, in host order.
  const std::vector<std::pair<int, int>>& unreachable() const { return unreachable_; }
  // The most hops between two different hosts with a path; 0 when there are none.
  int longest_distance() const { return longest_distance_; }
  // Heap bytes of every table and of the host attachments (sizes, not capacities).
  size_t memory_bytes() const;

 private:
  friend RoutingTable compute_routes(const Topology&, const RoutingPolicy&,
                                     const std::vector<bool>&, int);
  static const ForwardingTable kNoTable;
  int hosts_ = 0;
  std::vector<ForwardingTable> tables_;  // [switch node - hosts]
  // The switches each host hangs off over working links: attached_[attach_first_[h] ..
  // attach_first_[h + 1]).
  std::vector<uint32_t> attach_first_;
  std::vector<int> attached_;
  std::vector<std::pair<int, int>> unreachable_;
  int longest_distance_ = 0;

 public:
  bool operator==(const RoutingTable&) const = default;
};

// The tables `policy` gives every switch of `topology` when only the links with
// link_up[i] (indexed like topology.links) work. Never throws for an unreachable destination:
// its entries are empty and unreachable() lists the pairs. A fabric of more than
// `direct_hosts_limit` hosts maps destinations by runs of hosts where that is smaller (see
// HostEntryMap); the next hops are the same either way.
RoutingTable compute_routes(const Topology& topology, const RoutingPolicy& policy,
                            const std::vector<bool>& link_up,
                            int direct_hosts_limit = kDirectHostsLimit);

// ECMP choice among `n` equal-cost ports for a flow hash at one switch.
inline uint32_t ecmp_pick(uint32_t flow_hash, uint32_t switch_salt, uint32_t n) {
  uint32_t h = (flow_hash ^ switch_salt) * 0x9E3779B1u;
  h ^= h >> 15;
  h *= 0x85EBCA77u;
  h ^= h >> 13;
  return static_cast<uint32_t>((static_cast<uint64_t>(h) * n) >> 32);
}

// The salt switch `node` mixes into its ECMP hash (switches differ, so that a flow's choices at
// successive tiers are independent).
inline uint32_t ecmp_salt(int node) {
  return static_cast<uint32_t>(mix64(static_cast<uint64_t>(node), 0xEC3B));
}

// The hops (node, egress port) a packet of flow hash `hash` takes from host `src` to host `dst`
// when every switch picks by ECMP with salt `salt(node)` over `routes`' next hops (the host
// sends on its port 0). Empty when there is no route.
std::vector<std::pair<int, int>> ecmp_path(const Topology& topology, const RoutingTable& routes,
                                           int src, int dst, uint32_t hash,
                                           const std::function<uint32_t(int)>& salt);

// The 5-tuple hash a switch sees for a RoCEv2 flow: (src IP, dst IP, UDP 17, source port,
// destination port 4791). Hosts are numbered, so their index stands in for the address.
uint32_t roce_flow_hash(uint32_t src_host, uint32_t dst_host, uint16_t udp_source_port);

}  // namespace fabtwin

// The buffer dependency graph of a lossless fabric: which PFC ingress groups can wait on which.
// A vertex is a lossless ingress group (switch, ingress port, priority); an edge u -> v says a
// frame held in u's buffer can be forwarded onto a link whose far end accounts it to v, so a
// pause from v stops u from draining. A cycle of such edges (a cyclic buffer dependency) is the
// necessary condition for a PFC deadlock (docs/references.md §2.4). Built from every route the
// forwarding can produce, independent of the routing implementation through a `RouteView`.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "models/fabric/topology.h"
#include "models/net/routing.h"

namespace fabtwin {

struct FabricSpec;

constexpr int kDependencyPriorities = 8;

// What the analysis needs of the forwarding, and nothing more.
struct RouteView {
  // Egress ports of switch `node` toward host `dst_host` for a frame that arrived with
  // `priority`; empty when the switch has no route (the frame is dropped).
  std::function<std::span<const uint16_t>(int node, int dst_host, int priority)> next_hops;
  // The priority a frame arriving at switch `node` on `in_port` with `priority` leaves with: its
  // egress queue and the next hop's ingress group. Identity when the switch rewrites nothing.
  std::function<int(int node, int in_port, int priority)> rewrite;
};

// A view of a routing table set: each switch's per-priority next hops and priority rewrites.
// `routes` must outlive it.
RouteView route_view(const RoutingTable& routes);

// A lossless ingress group: frames that arrived on `port` of switch `node` with `priority`.
struct IngressGroup {
  int node = -1;
  int port = -1;
  int priority = -1;
};

struct DependencyEdge {
  int from = -1, to = -1;  // vertices
  int out_port = -1;       // egress port of `from`'s switch that leads to `to`
};

// A flow or a collective connection, as the labels of an edge name it.
struct TrafficPath {
  bool collective = false;
  uint32_t id = 0;         // flow id, or index of the collective connection
  uint32_t generator = 0;  // the scenario's `traffic` entry (flows) or collective index
  int src = 0, dst = 0;    // hosts
  int priority = 0;        // of its data and ACKs as the NICs send them
};

// Every flow and network collective connection of a resolved scenario, flows first, in order.
std::vector<TrafficPath> traffic_paths(const FabricSpec& spec);

// One traffic path over an edge: its data (src to dst) or its ACKs (dst back to src).
struct EdgeUse {
  uint32_t path = 0;  // index into the traffic paths given to `explain`
  bool ack = false;
};

// Why an edge exists: the destination hosts whose routes cross it, and the traffic that does.
struct EdgeLabel {
  std::vector<int> destinations;  // ascending
  std::vector<EdgeUse> uses;      // by path, data before ACKs
};

// An elementary cycle: vertices in order, each edge from vertices[i] to vertices[i + 1] (the
// last back to the first). It starts at its lowest vertex.
struct DependencyCycle {
  std::vector<int> vertices;
  std::vector<int> edges;
};

struct CycleSearch {
  std::vector<DependencyCycle> cycles;  // the first `report` found, in search order
  size_t found = 0;                     // cycles counted (at most the count limit)
  bool capped = false;                  // the count limit stopped the search: there may be more
};

class BufferDependencyGraph {
 public:
  // Walks every route: for every destination host, from every other host's first switch, every
  // ECMP branch, for every priority a host sends that can reach a lossless group. `link_up`
  // (indexed like `topology.links`; empty = all up) removes failed links: a route onto one
  // ends there. `injected`: the priorities hosts send on (empty = any priority that can reach
  // a lossless group). `topology` and `routes` must outlive the graph (`explain` walks them
  // again).
  BufferDependencyGraph(const Topology& topology, RouteView routes,
                        const std::array<bool, kDependencyPriorities>& lossless,
                        std::vector<bool> link_up = {}, std::vector<int> injected = {});

  const Topology& topology() const { return *topology_; }
  int vertices() const { return static_cast<int>(groups_.size()); }
  const IngressGroup& group(int vertex) const { return groups_[vertex]; }
  // The vertex of a switch's ingress group; -1 for a host.
  int vertex(int node, int port, int priority) const;
  // Sorted by (from, out_port, priority of `to`).
  const std::vector<DependencyEdge>& edges() const { return edges_; }
  int find_edge(int from, int to) const;  // -1 if none
  // Vertices with at least one edge.
  int groups_with_edges() const { return groups_with_edges_; }

  // Whether any cycle exists (strongly connected components; cheap).
  bool has_cycle() const;
  // Elementary cycles (Hawick and James), keeping the first `report` and counting up to
  // `count_limit`, searched only inside the strongly connected components.
  CycleSearch cycles(size_t report, size_t count_limit) const;

  // The label of each edge in `edges` (indices into edges()): destinations from the all-pairs
  // routes, and which of `traffic` cross it.
  std::vector<EdgeLabel> explain(std::span<const int> edges,
                                 std::span<const TrafficPath> traffic) const;

 private:
  // Depth-first over (switch, ingress port, priority) states toward `dst`, from `sources`
  // (hosts) each sending at each of `priorities`; calls on_edge(edge key, from, to, out port)
  // for every lossless-to-lossless hop.
  template <class OnEdge>
  void walk(int dst, std::span<const int> sources, std::span<const int> priorities,
            OnEdge&& on_edge) const;
  int components(std::vector<int>& component) const;
  int64_t edge_key(int from, int out_port, int priority) const {
    return (static_cast<int64_t>(from) * max_ports_ + out_port) * kDependencyPriorities + priority;
  }

  const Topology* topology_;
  RouteView routes_;
  std::array<bool, kDependencyPriorities> lossless_;
  std::vector<bool> link_up_;
  std::vector<std::vector<int>> port_link_;  // [node][port] -> link index
  std::vector<int> first_vertex_;            // [node] -> vertex of port 0, priority 0; -1 host
  std::vector<IngressGroup> groups_;         // [vertex]
  int max_ports_ = 1;
  std::vector<int> injected_;   // priorities hosts are assumed to send
  std::vector<int> all_hosts_;  // 0..hosts-1
  std::vector<DependencyEdge> edges_;
  std::vector<int> out_begin_;  // [vertex] -> first edge from it; vertices + 1 entries
  int groups_with_edges_ = 0;
  mutable std::vector<uint32_t> visited_;  // walk stamps per state
  mutable uint32_t stamp_ = 0;
  mutable std::vector<int> stack_;
};

}  // namespace fabtwin

#include "models/fabric/buffer_dependency.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/hawick_circuits.hpp>
#include <boost/graph/strong_components.hpp>
#include <map>
#include <tuple>

#include "models/fabric/fabric_spec.h"

namespace fabtwin {

namespace {

using Digraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

// Thrown by the circuit visitor to end the search at the count limit.
struct StopSearch {};

// Hands each circuit Boost finds, as vertices of the whole graph, to `on_cycle`.
struct CircuitVisitor {
  const std::vector<int>* original;
  const std::function<void(std::vector<int>)>* on_cycle;
  template <class Path, class Graph>
  void cycle(const Path& path, const Graph&) const {
    std::vector<int> vs;
    vs.reserve(path.size());
    for (const auto v : path) vs.push_back((*original)[v]);
    (*on_cycle)(std::move(vs));
  }
};

}  // namespace

RouteView route_view(const RoutingTable& routes) {
  return {[&routes](int node, int dst, int priority) {
            return routes.table(node).next_hops(dst, priority);
          },
          [&routes](int node, int in_port, int priority) {
            return routes.table(node).rewrite(in_port, priority);
          }};
}

std::vector<TrafficPath> traffic_paths(const FabricSpec& spec) {
  std::vector<TrafficPath> paths;
  for (const FlowSpec& f : spec.flows) {
    paths.push_back({false, f.id, f.generator, f.src, f.dst,
                     spec.nic.dscp_to_priority[static_cast<uint8_t>(f.dscp)]});
  }
  const CollectiveSetup& c = spec.collectives;
  for (uint32_t i = 0; i < c.connections.size(); ++i) {
    const CollectiveConnection& conn = c.connections[i];
    if (conn.transport != CollectiveTransport::Net) continue;
    const int dscp = c.specs[conn.spec].dscp;
    paths.push_back({true, i, conn.spec, conn.src_host, conn.dst_host,
                     spec.nic.dscp_to_priority[static_cast<uint8_t>(dscp)]});
  }
  return paths;
}

BufferDependencyGraph::BufferDependencyGraph(
    const Topology& topology, RouteView routes,
    const std::array<bool, kDependencyPriorities>& lossless, std::vector<bool> link_up,
    std::vector<int> injected)
    : topology_(&topology),
      routes_(std::move(routes)),
      lossless_(lossless),
      link_up_(std::move(link_up)) {
  const Topology& t = topology;
  const int n = static_cast<int>(t.nodes.size());
  if (link_up_.empty()) link_up_.assign(t.links.size(), true);
  port_link_.resize(n);
  for (int v = 0; v < n; ++v) {
    port_link_[v].assign(t.nodes[v].ports, -1);
    max_ports_ = std::max(max_ports_, t.nodes[v].ports);
  }
  for (size_t i = 0; i < t.links.size(); ++i) {
    const Link& l = t.links[i];
    port_link_[l.a][l.a_port] = static_cast<int>(i);
    port_link_[l.b][l.b_port] = static_cast<int>(i);
  }
  first_vertex_.assign(n, -1);
  for (int v = 0; v < n; ++v) {
    if (t.nodes[v].kind != NodeKind::Switch) continue;
    first_vertex_[v] = static_cast<int>(groups_.size());
    for (int port = 0; port < t.nodes[v].ports; ++port) {
      for (int p = 0; p < kDependencyPriorities; ++p) groups_.push_back({v, port, p});
    }
  }
  visited_.assign(groups_.size(), 0);
  for (int h = 0; h < t.hosts; ++h) all_hosts_.push_back(h);

  // Hosts send on the given priorities, or on any that can reach a lossless group: the lossless
  // ones, and every priority where some switch rewrites a lossy priority to a lossless one (a
  // lossy frame holds no lossless buffer until then).
  std::sort(injected.begin(), injected.end());
  injected.erase(std::unique(injected.begin(), injected.end()), injected.end());
  injected_ = std::move(injected);
  bool lossy_to_lossless = false;
  for (int v = 0; v < n && !lossy_to_lossless; ++v) {
    if (t.nodes[v].kind != NodeKind::Switch) continue;
    for (int port = 0; port < t.nodes[v].ports; ++port) {
      for (int p = 0; p < kDependencyPriorities; ++p) {
        const int q = lossless_[p] ? p : routes_.rewrite(v, port, p);
        if (!lossless_[p] && q >= 0 && q < kDependencyPriorities && lossless_[q]) {
          lossy_to_lossless = true;
        }
      }
    }
  }
  if (injected_.empty()) {
    for (int p = 0; p < kDependencyPriorities; ++p) {
      if (lossless_[p] || lossy_to_lossless) injected_.push_back(p);
    }
  }

  std::vector<bool> seen(static_cast<size_t>(edge_key(vertices(), 0, 0)), false);
  std::vector<int64_t> keys;
  for (int dst = 0; dst < t.hosts; ++dst) {
    walk(dst, all_hosts_, injected_, [&](int64_t key, int, int, int) {
      if (!seen[key]) {
        seen[key] = true;
        keys.push_back(key);
      }
    });
  }
  std::sort(keys.begin(), keys.end());
  out_begin_.assign(vertices() + 1, 0);
  std::vector<bool> has_edge(vertices(), false);
  for (const int64_t key : keys) {
    const int from = static_cast<int>(key / (int64_t{max_ports_} * kDependencyPriorities));
    const int rest = static_cast<int>(key % (int64_t{max_ports_} * kDependencyPriorities));
    const int out_port = rest / kDependencyPriorities;
    const PortPeer& q = t.peer(groups_[from].node, out_port);
    const int to = vertex(q.node, q.port, rest % kDependencyPriorities);
    edges_.push_back({from, to, out_port});
    ++out_begin_[from + 1];
    has_edge[from] = has_edge[to] = true;
  }
  for (int v = 0; v < vertices(); ++v) out_begin_[v + 1] += out_begin_[v];
  groups_with_edges_ = static_cast<int>(std::count(has_edge.begin(), has_edge.end(), true));
}

int BufferDependencyGraph::vertex(int node, int port, int priority) const {
  if (first_vertex_[node] < 0) return -1;
  return first_vertex_[node] + port * kDependencyPriorities + priority;
}

int BufferDependencyGraph::find_edge(int from, int to) const {
  for (int e = out_begin_[from]; e < out_begin_[from + 1]; ++e) {
    if (edges_[e].to == to) return e;
  }
  return -1;
}

template <class OnEdge>
void BufferDependencyGraph::walk(int dst, std::span<const int> sources,
                                 std::span<const int> priorities, OnEdge&& on_edge) const {
  const Topology& t = *topology_;
  if (++stamp_ == 0) {
    std::fill(visited_.begin(), visited_.end(), 0);
    stamp_ = 1;
  }
  auto up = [&](int node, int port) {
    const int link = port_link_[node][port];
    return link >= 0 && link_up_[link];
  };
  std::vector<int>& stack = stack_;
  stack.clear();
  for (const int src : sources) {
    // A NIC sends on its port 0; its first switch accounts the frame to that ingress port.
    if (src == dst || t.nodes[src].ports == 0 || !up(src, 0)) continue;
    const PortPeer& first = t.peer(src, 0);
    if (first.node < 0 || t.nodes[first.node].kind != NodeKind::Switch) continue;
    for (const int p : priorities) stack.push_back(vertex(first.node, first.port, p));
  }
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    if (visited_[v] == stamp_) continue;
    visited_[v] = stamp_;
    const IngressGroup g = groups_[v];
    const int out_priority = routes_.rewrite(g.node, g.port, g.priority);
    if (out_priority < 0 || out_priority >= kDependencyPriorities) continue;
    for (const uint16_t out_port : routes_.next_hops(g.node, dst, g.priority)) {
      if (out_port >= t.nodes[g.node].ports || !up(g.node, out_port)) continue;
      const PortPeer& q = t.peer(g.node, out_port);
      if (t.nodes[q.node].kind != NodeKind::Switch) continue;  // delivered (or misdelivered)
      const int w = vertex(q.node, q.port, out_priority);
      if (lossless_[g.priority] && lossless_[out_priority]) {
        on_edge(edge_key(v, out_port, out_priority), v, w, out_port);
      }
      if (visited_[w] != stamp_) stack.push_back(w);
    }
  }
}

// Strongly connected component of every vertex; returns their number. The edges are sorted by
// source, so the graph is a compressed sparse row graph built without copying lists.
int BufferDependencyGraph::components(std::vector<int>& component) const {
  using Csr = boost::compressed_sparse_row_graph<boost::directedS>;
  std::vector<std::pair<int, int>> pairs;
  pairs.reserve(edges_.size());
  for (const DependencyEdge& e : edges_) pairs.push_back({e.from, e.to});
  const Csr g(boost::edges_are_sorted, pairs.begin(), pairs.end(),
              static_cast<Csr::vertices_size_type>(vertices()));
  component.assign(vertices(), 0);
  return boost::strong_components(
      g, boost::make_iterator_property_map(component.begin(), boost::get(boost::vertex_index, g)));
}

bool BufferDependencyGraph::has_cycle() const {
  for (const DependencyEdge& e : edges_) {
    if (e.from == e.to) return true;
  }
  std::vector<int> component;
  return components(component) < vertices();
}

CycleSearch BufferDependencyGraph::cycles(size_t report, size_t count_limit) const {
  CycleSearch result;
  // Cycles lie inside strongly connected components: search only there (Hawick and James's
  // search costs time per start vertex, and most vertices are on no cycle).
  std::vector<int> component;
  const int count = components(component);
  std::vector<int> size(count, 0);
  for (const int c : component) ++size[c];
  std::vector<int> compact(vertices(), -1), original;
  for (int v = 0; v < vertices(); ++v) {
    if (size[component[v]] > 1) {
      compact[v] = static_cast<int>(original.size());
      original.push_back(v);
    }
  }
  std::vector<int> self_loops;
  for (const DependencyEdge& e : edges_) {
    if (e.from == e.to && compact[e.from] < 0) self_loops.push_back(e.from);
  }
  const std::function<void(std::vector<int>)> record = [&](std::vector<int> vertices_in_order) {
    ++result.found;
    if (result.cycles.size() < report) {
      DependencyCycle c;
      for (size_t i = 0; i < vertices_in_order.size(); ++i) {
        const int from = vertices_in_order[i];
        const int to = vertices_in_order[(i + 1) % vertices_in_order.size()];
        c.edges.push_back(find_edge(from, to));
      }
      c.vertices = std::move(vertices_in_order);
      result.cycles.push_back(std::move(c));
    }
    if (count_limit > 0 && result.found >= count_limit) throw StopSearch{};
  };
  try {
    for (const int v : self_loops) record({v});
    if (original.empty()) return result;
    Digraph g(original.size());
    for (const DependencyEdge& e : edges_) {
      if (compact[e.from] >= 0 && compact[e.to] >= 0 && component[e.from] == component[e.to]) {
        boost::add_edge(compact[e.from], compact[e.to], g);
      }
    }
    boost::hawick_circuits(g, CircuitVisitor{&original, &record});
  } catch (const StopSearch&) {
    result.capped = true;
  }
  return result;
}

std::vector<EdgeLabel> BufferDependencyGraph::explain(std::span<const int> edges,
                                                      std::span<const TrafficPath> traffic) const {
  std::vector<EdgeLabel> labels(edges.size());
  std::vector<std::pair<int64_t, int>> wanted;  // edge key -> label
  for (size_t i = 0; i < edges.size(); ++i) {
    const DependencyEdge& e = edges_[edges[i]];
    wanted.push_back({edge_key(e.from, e.out_port, groups_[e.to].priority), static_cast<int>(i)});
  }
  std::sort(wanted.begin(), wanted.end());
  auto each_label = [&](int64_t key, auto&& f) {
    auto it = std::lower_bound(wanted.begin(), wanted.end(), std::pair<int64_t, int>{key, -1});
    for (; it != wanted.end() && it->first == key; ++it) f(labels[it->second]);
  };
  for (int dst = 0; dst < topology_->hosts; ++dst) {
    walk(dst, all_hosts_, injected_, [&](int64_t key, int, int, int) {
      each_label(key, [&](EdgeLabel& l) {
        if (l.destinations.empty() || l.destinations.back() != dst) l.destinations.push_back(dst);
      });
    });
  }
  // Paths with the same (source, destination, priority) share a route: walk it once. ACKs go
  // back from the destination on the same priority.
  std::map<std::tuple<int, int, int>, std::vector<EdgeUse>> routes;
  for (uint32_t i = 0; i < traffic.size(); ++i) {
    const TrafficPath& p = traffic[i];
    routes[{p.src, p.dst, p.priority}].push_back({i, false});
    routes[{p.dst, p.src, p.priority}].push_back({i, true});
  }
  for (const auto& [route, uses] : routes) {
    const auto [src, dst, priority] = route;
    if (src < 0 || dst < 0 || src == dst) continue;
    const int sources[] = {src};
    const int priorities[] = {priority};
    walk(dst, sources, priorities, [&](int64_t key, int, int, int) {
      each_label(key, [&](EdgeLabel& l) { l.uses.insert(l.uses.end(), uses.begin(), uses.end()); });
    });
  }
  for (EdgeLabel& l : labels) {
    std::sort(l.uses.begin(), l.uses.end(), [](const EdgeUse& a, const EdgeUse& b) {
      return std::tie(a.path, a.ack) < std::tie(b.path, b.ack);
    });
  }
  return labels;
}

}  // namespace fabtwin

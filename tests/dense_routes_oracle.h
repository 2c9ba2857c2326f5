// The routes as fabtwin computed them before issue 16 (main 804b460): one entry per (switch,
// host) pair and a distance per (node, host) pair, kept as a test oracle so that the compact
// route store can be checked to give the same next hops and distances on every topology, policy
// and set of working links. Small fabrics only: it takes memory of switches x hosts.
#pragma once

#include <algorithm>
#include <vector>

#include "models/net/routing.h"

namespace fabtwin::oracle {

struct DenseTable {
  std::vector<uint32_t> offsets;
  std::vector<uint16_t> ports;
  std::vector<uint32_t> priority_offsets;
  std::vector<uint16_t> priority_ports;

  std::vector<uint16_t> next_hops(int dst) const {
    return {ports.begin() + offsets[dst], ports.begin() + offsets[dst + 1]};
  }
  std::vector<uint16_t> next_hops(int dst, int priority) const {
    if (priority_offsets.empty()) return next_hops(dst);
    const size_t i = static_cast<size_t>(dst) * kPriorities + static_cast<size_t>(priority);
    return {priority_ports.begin() + priority_offsets[i],
            priority_ports.begin() + priority_offsets[i + 1]};
  }
};

struct DenseRoutes {
  std::vector<DenseTable> tables;          // [node]
  std::vector<std::vector<int>> distance;  // [node][host], kFar when unreachable
  std::vector<std::pair<int, int>> unreachable;
};

constexpr int kFar = 1 << 29;

// Per node and port: whether the port's link works.
inline std::vector<std::vector<char>> ports_up(const Topology& t,
                                               const std::vector<bool>& link_up) {
  std::vector<std::vector<char>> up(t.nodes.size());
  for (size_t v = 0; v < t.nodes.size(); ++v) up[v].assign(t.nodes[v].ports, 1);
  for (size_t i = 0; i < t.links.size() && i < link_up.size(); ++i) {
    if (link_up[i]) continue;
    up[t.links[i].a][t.links[i].a_port] = 0;
    up[t.links[i].b][t.links[i].b_port] = 0;
  }
  return up;
}

// Appends the entry of the next destination host to `t`.
inline void append(DenseTable& t, const uint16_t* ports, size_t n) {
  t.offsets.push_back(static_cast<uint32_t>(t.ports.size()));
  t.ports.insert(t.ports.end(), ports, ports + n);
}
inline void close(DenseTable& t) {
  t.offsets.push_back(static_cast<uint32_t>(t.ports.size()));
}

// Shortest paths over the working links; routes never pass through a host.
inline void shortest_paths(const Topology& topo, const std::vector<std::vector<char>>& up,
                           std::vector<std::vector<int>>& distance,
                           std::vector<DenseTable>& tables) {
  const int n = static_cast<int>(topo.nodes.size());
  const int hosts = topo.hosts;
  std::vector<std::vector<int>> attached(hosts);  // switches each host hangs off
  for (int h = 0; h < hosts; ++h) {
    for (int port = 0; port < topo.nodes[h].ports; ++port) {
      const int peer = topo.peer(h, port).node;
      if (up[h][port] && topo.nodes[peer].kind == NodeKind::Switch) attached[h].push_back(peer);
    }
  }
  // Switch-to-switch hop counts, one breadth-first search per switch some host hangs off.
  std::vector<std::vector<int>> sw_dist(n);
  std::vector<int> frontier;
  for (int h = 0; h < hosts; ++h) {
    for (int s : attached[h]) {
      if (!sw_dist[s].empty()) continue;
      std::vector<int> d(n, kFar);
      d[s] = 0;
      frontier.assign(1, s);
      for (size_t i = 0; i < frontier.size(); ++i) {
        const int v = frontier[i];
        for (int port = 0; port < topo.nodes[v].ports; ++port) {
          const int w = topo.peer(v, port).node;
          if (!up[v][port] || topo.nodes[w].kind != NodeKind::Switch || d[w] < kFar) continue;
          d[w] = d[v] + 1;
          frontier.push_back(w);
        }
      }
      sw_dist[s] = std::move(d);
    }
  }
  distance.assign(n, std::vector<int>(hosts, kFar));
  for (int h = 0; h < hosts; ++h) {
    for (int s : attached[h]) {
      for (int v = 0; v < n; ++v) {
        if (topo.nodes[v].kind == NodeKind::Switch && sw_dist[s][v] < kFar) {
          distance[v][h] = std::min(distance[v][h], sw_dist[s][v] + 1);
        }
      }
    }
  }
  // A host is one hop further than the nearest switch it hangs off.
  for (int v = 0; v < hosts; ++v) {
    for (int h = 0; h < hosts; ++h) {
      if (v == h) {
        distance[v][h] = 0;
        continue;
      }
      for (int s : attached[v]) distance[v][h] = std::min(distance[v][h], distance[s][h] + 1);
    }
  }
  // A port is a next hop toward h if its neighbour is one hop closer; a host only as the
  // destination itself (hosts do not forward).
  struct Next {
    uint16_t port;
    int peer;
    const int* distance;  // the peer switch's distances; null for a host
  };
  std::vector<Next> next;  // the working ports of a switch
  for (int v = hosts; v < n; ++v) {
    next.clear();
    for (int port = 0; port < topo.nodes[v].ports; ++port) {
      const int peer = topo.peer(v, port).node;
      if (!up[v][port]) continue;
      next.push_back(
          {static_cast<uint16_t>(port), peer, peer < hosts ? nullptr : distance[peer].data()});
    }
    DenseTable& t = tables[v];
    t.offsets.resize(hosts + 1);
    const std::vector<int>& own = distance[v];
    for (int h = 0; h < hosts; ++h) {
      t.offsets[h] = static_cast<uint32_t>(t.ports.size());
      if (own[h] >= kFar) continue;
      for (const Next& x : next) {
        if (x.distance ? x.distance[h] == own[h] - 1 : x.peer == h) t.ports.push_back(x.port);
      }
    }
    t.offsets[hosts] = static_cast<uint32_t>(t.ports.size());
  }
}

// Valley-free (up*/down*) shortest paths. Nodes are ranked by (tier, node index); a move to a
// higher rank is up, to a lower one down, and a path may not go up after it went down. With
// one table per destination (no ingress port), a switch that some switch routes down into must
// itself route only down: such switches are marked and the distances recomputed until no new
// switch is marked.
inline void up_down_paths(const Topology& topo, const std::vector<std::vector<char>>& up,
                          std::vector<std::vector<int>>& distance,
                          std::vector<DenseTable>& tables) {
  const int n = static_cast<int>(topo.nodes.size());
  const int hosts = topo.hosts;
  auto rank_less = [&](int a, int b) {
    return std::pair(topo.nodes[a].tier, a) < std::pair(topo.nodes[b].tier, b);
  };
  std::vector<int> switches;
  for (int v = hosts; v < n; ++v) switches.push_back(v);
  std::sort(switches.begin(), switches.end(), rank_less);
  distance.assign(n, std::vector<int>(hosts, kFar));

  std::vector<int> down(n), any(n);
  std::vector<char> down_only(n);
  std::vector<uint16_t> ports;
  for (int h = 0; h < hosts; ++h) {
    // down[v]: hops from v to h moving only down.
    std::fill(down.begin(), down.end(), kFar);
    down[h] = 0;
    for (int v : switches) {
      for (int port = 0; port < topo.nodes[v].ports; ++port) {
        const int w = topo.peer(v, port).node;
        if (up[v][port] && rank_less(w, v) && down[w] < kFar) {
          down[v] = std::min(down[v], down[w] + 1);
        }
      }
    }
    std::fill(down_only.begin(), down_only.end(), 0);
    for (;;) {
      // any[v]: hops from v to h going up, then down (down only at a marked switch).
      std::fill(any.begin(), any.end(), kFar);
      for (auto it = switches.rbegin(); it != switches.rend(); ++it) {
        const int v = *it;
        any[v] = down[v];
        if (down_only[v]) continue;
        for (int port = 0; port < topo.nodes[v].ports; ++port) {
          const int w = topo.peer(v, port).node;
          if (up[v][port] && rank_less(v, w) && any[w] < kFar) {
            any[v] = std::min(any[v], any[w] + 1);
          }
        }
      }
      bool marked = false;
      for (int v : switches) {
        if (any[v] >= kFar) continue;
        for (int port = 0; port < topo.nodes[v].ports; ++port) {
          const int w = topo.peer(v, port).node;
          if (up[v][port] && w >= hosts && rank_less(w, v) && down[w] + 1 == any[v] &&
              !down_only[w]) {
            down_only[w] = 1;
            marked = true;
          }
        }
      }
      if (!marked) break;
    }
    for (int v = hosts; v < n; ++v) {
      distance[v][h] = any[v];
      ports.clear();
      for (int port = 0; any[v] < kFar && port < topo.nodes[v].ports; ++port) {
        const int w = topo.peer(v, port).node;
        if (!up[v][port]) continue;
        if (w < hosts && w != h) continue;  // hosts do not forward
        const bool via =
            rank_less(w, v) ? down[w] + 1 == any[v] : !down_only[v] && any[w] + 1 == any[v];
        if (via) ports.push_back(static_cast<uint16_t>(port));
      }
      append(tables[v], ports.data(), ports.size());
    }
    for (int s = 0; s < hosts; ++s) {
      if (s == h) {
        distance[s][h] = 0;
        continue;
      }
      for (int port = 0; port < topo.nodes[s].ports; ++port) {
        const int w = topo.peer(s, port).node;
        if (up[s][port] && w >= hosts) distance[s][h] = std::min(distance[s][h], any[w] + 1);
      }
    }
  }
  for (int v = hosts; v < n; ++v) close(tables[v]);
}

// The entries of `t` (offsets and ports) as one port list per entry.
inline std::vector<std::vector<uint16_t>> unpack(const std::vector<uint32_t>& offsets,
                                                 const std::vector<uint16_t>& ports) {
  std::vector<std::vector<uint16_t>> entries(offsets.size() - 1);
  for (size_t i = 0; i + 1 < offsets.size(); ++i) {
    entries[i].assign(ports.begin() + offsets[i], ports.begin() + offsets[i + 1]);
  }
  return entries;
}

inline void pack(const std::vector<std::vector<uint16_t>>& entries, std::vector<uint32_t>& offsets,
                 std::vector<uint16_t>& ports) {
  offsets.clear();
  ports.clear();
  for (const auto& e : entries) {
    offsets.push_back(static_cast<uint32_t>(ports.size()));
    ports.insert(ports.end(), e.begin(), e.end());
  }
  offsets.push_back(static_cast<uint32_t>(ports.size()));
}

// Static routes, in order, over the computed entries of switch `v`: per priority where one names
// a priority (the switch then gets a per-priority table). A route whose next hops are all down
// is withdrawn.
inline void apply_static_routes(const Topology& topo, const std::vector<std::vector<char>>& up,
                                const std::vector<const StaticRoute*>& routes, DenseTable& t) {
  const int v = routes.front()->node;
  const int hosts = topo.hosts;
  std::vector<std::vector<uint16_t>> entries = unpack(t.offsets, t.ports);
  std::vector<std::vector<uint16_t>> per_priority;  // [dst * kPriorities + priority]
  for (const StaticRoute* route : routes) {
    std::vector<uint16_t> ports;
    for (int port = 0; port < topo.nodes[v].ports; ++port) {
      const int w = topo.peer(v, port).node;
      if (up[v][port] &&
          std::find(route->next.begin(), route->next.end(), w) != route->next.end()) {
        ports.push_back(static_cast<uint16_t>(port));
      }
    }
    if (ports.empty()) continue;  // every next hop is down: withdrawn
    if (route->priority >= 0 && per_priority.empty()) {
      per_priority.resize(static_cast<size_t>(hosts) * kPriorities);
      for (int d = 0; d < hosts; ++d) {
        for (int q = 0; q < kPriorities; ++q) per_priority[d * kPriorities + q] = entries[d];
      }
    }
    auto apply = [&](int d) {
      if (route->priority < 0) {
        entries[d] = ports;
        for (int q = 0; q < kPriorities && !per_priority.empty(); ++q) {
          per_priority[d * kPriorities + q] = ports;
        }
      } else {
        per_priority[d * kPriorities + route->priority] = ports;
      }
    };
    if (route->dst.empty()) {
      for (int d = 0; d < hosts; ++d) apply(d);
    } else {
      for (int d : route->dst) apply(d);
    }
  }
  pack(entries, t.offsets, t.ports);
  if (!per_priority.empty()) pack(per_priority, t.priority_offsets, t.priority_ports);
}

inline DenseRoutes dense_routes(const Topology& topo, const RoutingPolicy& policy,
                                const std::vector<bool>& link_up) {
  const int n = static_cast<int>(topo.nodes.size());
  const int hosts = topo.hosts;
  const std::vector<std::vector<char>> up = ports_up(topo, link_up);
  DenseRoutes rt;
  rt.tables.resize(n);
  if (policy.algorithm == RoutingAlgorithm::UpDown) {
    up_down_paths(topo, up, rt.distance, rt.tables);
  } else {
    shortest_paths(topo, up, rt.distance, rt.tables);
  }
  for (int s = 0; s < hosts; ++s) {
    for (int d = 0; d < hosts; ++d) {
      if (s != d && rt.distance[s][d] >= kFar) rt.unreachable.emplace_back(s, d);
    }
  }
  if (policy.algorithm == RoutingAlgorithm::Static) {
    std::vector<std::vector<const StaticRoute*>> by_switch(n);
    for (const StaticRoute& route : policy.routes) by_switch[route.node].push_back(&route);
    for (int v = hosts; v < n; ++v) {
      if (!by_switch[v].empty()) apply_static_routes(topo, up, by_switch[v], rt.tables[v]);
    }
  }
  return rt;
}

}  // namespace fabtwin::oracle

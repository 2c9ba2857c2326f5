#include "models/net/routing.h"

#include <algorithm>
#include <map>

#include "sim/rng.h"

namespace fabtwin {

uint32_t roce_flow_hash(uint32_t src_host, uint32_t dst_host, uint16_t udp_source_port) {
  constexpr uint64_t kUdpProtocol = 17, kRoceV2Port = 4791;
  const uint64_t tuple_a = (uint64_t{src_host} << 32) | dst_host;
  const uint64_t tuple_b = (kUdpProtocol << 32) | (uint64_t{udp_source_port} << 16) | kRoceV2Port;
  return static_cast<uint32_t>(mix64(tuple_a, tuple_b));
}

const char* routing_algorithm_name(RoutingAlgorithm a) {
  switch (a) {
    case RoutingAlgorithm::ShortestPath:
      return "shortest_path";
    case RoutingAlgorithm::UpDown:
      return "up_down";
    case RoutingAlgorithm::Static:
      return "static";
  }
  return "?";
}

const ParamGroup kRoutingParams{
    "routing",
    "routing",
    "Routing",
    {{"algorithm", ParamType::Choice, "\"shortest_path\"",
      "how every switch's forwarding table is computed: shortest_path (ECMP over all shortest "
      "paths; `ecmp` is its old name), up_down (valley-free: up the tiers, then down, ECMP over "
      "the shortest such paths; links inside one tier go up toward the node declared later), "
      "static (shortest_path, then the `static` entries override)",
      "fabtwin; up*/down* routing: Schroeder et al., Autonet (docs/references.md §2.7)",
      "shortest_path|ecmp|up_down|static"},
     {"static", ParamType::List, "[]",
      "static routes, applied in order over the shortest paths (later entries win): "
      "[{switch, dst, priority, next}], see routing.static[]",
      "fabtwin"},
     {"priority_rewrite", ParamType::List, "[]",
      "Tagger-style per-hop priority rewrite: [{switch, from, priority, to}], see "
      "routing.priority_rewrite[]",
      "Tagger, CoNEXT 2017 (docs/references.md §2.7)"},
     {"ttl", ParamType::Integer, "64",
      "IP TTL of every packet a NIC sends; each switch decrements it and drops the frame when it "
      "reaches 0 (drops_ttl), so a routing loop cannot circulate a frame forever",
      "the usual default IP TTL (RFC 1700; Linux net.ipv4.ip_default_ttl)", "1..255"},
     {"convergence_delay", ParamType::Time, "\"1ms\"",
      "time from a link failure or recovery (`events`) until every switch installs the routes "
      "the algorithm computes for the new set of working links; until then the old routes stay "
      "and frames sent toward a down link are lost (drops_link_down)",
      "fabtwin: a stand-in for failure detection, route computation and FIB update; set it for "
      "the fabric studied"}}};

const ParamGroup kStaticRouteParams{
    "routing.static[]",
    "routing",
    "A static route",
    {{"switch", ParamType::Text, "", "name of the switch the route is installed at", "fabtwin"},
     {"dst", ParamType::List, "",
      "destination: a host name, a list of host names, or \"*\" for every host", "fabtwin"},
     {"priority", ParamType::Integer, "(all)",
      "the priority (0..7, after DSCP classification) the route applies to; other priorities "
      "keep their route",
      "fabtwin", "0..7"},
     {"next", ParamType::List, "",
      "next hop: the name of a neighbour of the switch, or a list of them (ECMP among them). A "
      "route whose next hops are all on down links is withdrawn until one recovers",
      "fabtwin"}}};

const ParamGroup kPriorityRewriteParams{
    "routing.priority_rewrite[]",
    "routing",
    "A priority rewrite",
    {{"switch", ParamType::Text, "", "name of the switch that rewrites", "fabtwin"},
     {"from", ParamType::Text, "(any)",
      "name of the neighbour the frame arrives from; absent: from any neighbour", "fabtwin"},
     {"priority", ParamType::Integer, "", "the priority the frame arrives with", "fabtwin", "0..7"},
     {"to", ParamType::Integer, "",
      "the priority it leaves with: its egress queue, and the priority the next hop sees (the "
      "switch rewrites the DSCP to the lowest one fabric.qos maps to it). The ingress "
      "accounting, and the PFC pause sent upstream, stay on the arrival priority",
      "Tagger, CoNEXT 2017 (docs/references.md §2.7)", "0..7"}}};

namespace {

int node_of(const ParamReader& r, const std::string& key, const std::string& name,
            const Topology& t) {
  const int v = t.node_named(name);
  if (v < 0) {
    throw ScenarioError(r.path_of(key),
                        "expected the name of a node of the topology, found \"" + name + "\"");
  }
  return v;
}

int switch_of(ParamReader& r, const std::string& key, const Topology& t) {
  const std::string name = r.text(key);
  const int v = node_of(r, key, name, t);
  if (t.nodes[v].kind != NodeKind::Switch) {
    throw ScenarioError(r.path_of(key),
                        "expected the name of a switch, found host \"" + name + "\"");
  }
  return v;
}

std::string neighbours_text(const Topology& t, int v) {
  std::string s;
  std::vector<int> seen;
  for (const PortPeer& p : t.peers[v]) {
    if (std::find(seen.begin(), seen.end(), p.node) != seen.end()) continue;
    seen.push_back(p.node);
    s += (s.empty() ? "" : ", ") + t.nodes[p.node].name;
  }
  return s;
}

bool adjacent(const Topology& t, int v, int w) {
  for (const PortPeer& p : t.peers[v]) {
    if (p.node == w) return true;
  }
  return false;
}

// A name or a list of names, as strings; `what` says what they must be.
std::vector<std::pair<std::string, std::string>> names_of(const nlohmann::json& v,
                                                          const std::string& path,
                                                          const char* what) {
  std::vector<std::pair<std::string, std::string>> names;  // (path, name)
  if (v.is_string()) {
    names.emplace_back(path, v.get<std::string>());
  } else if (v.is_array() && !v.empty()) {
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string p = path + "[" + std::to_string(i) + "]";
      if (!v[i].is_string())
        throw ScenarioError(p, std::string("expected ") + what + ", found " + json_text(v[i]));
      names.emplace_back(p, v[i].get<std::string>());
    }
  } else {
    throw ScenarioError(path, std::string("expected ") + what +
                                  " or a non-empty list of them, "
                                  "found " +
                                  json_text(v));
  }
  return names;
}

StaticRoute read_static_route(const nlohmann::json& entry, const std::string& path,
                              const Topology& t) {
  ParamReader r(entry, path, kStaticRouteParams);
  StaticRoute route;
  route.node = switch_of(r, "switch", t);
  const nlohmann::json& dst = r.raw("dst");
  if (dst.is_null()) throw ScenarioError(r.path_of("dst"), "required, but missing");
  if (!(dst.is_string() && dst.get<std::string>() == "*")) {
    for (const auto& [p, name] : names_of(dst, r.path_of("dst"), "a host name, \"*\"")) {
      const int h = t.node_named(name);
      if (h < 0 || t.nodes[h].kind != NodeKind::Host) {
        throw ScenarioError(p, "expected the name of a host, found \"" + name + "\"");
      }
      if (std::find(route.dst.begin(), route.dst.end(), h) == route.dst.end()) {
        route.dst.push_back(h);
      }
    }
  }
  if (r.has("priority")) route.priority = static_cast<int>(r.integer("priority"));
  const nlohmann::json& next = r.raw("next");
  if (next.is_null()) throw ScenarioError(r.path_of("next"), "required, but missing");
  for (const auto& [p, name] : names_of(next, r.path_of("next"), "a neighbour's name")) {
    const int w = t.node_named(name);
    if (w < 0 || !adjacent(t, route.node, w)) {
      throw ScenarioError(p, "expected a neighbour of " + t.nodes[route.node].name + " (" +
                                 neighbours_text(t, route.node) + "), found \"" + name + "\"");
    }
    if (t.nodes[w].kind == NodeKind::Host && !(route.dst.size() == 1 && route.dst.front() == w)) {
      throw ScenarioError(p, "expected a switch: a host (" + name +
                                 ") is a next hop only for routes to itself alone");
    }
    if (std::find(route.next.begin(), route.next.end(), w) == route.next.end()) {
      route.next.push_back(w);
    }
  }
  r.finish();
  return route;
}

PriorityRewrite read_rewrite(const nlohmann::json& entry, const std::string& path,
                             const Topology& t) {
  ParamReader r(entry, path, kPriorityRewriteParams);
  PriorityRewrite rw;
  rw.node = switch_of(r, "switch", t);
  if (r.has("from")) {
    const std::string name = r.text("from");
    const int w = t.node_named(name);
    if (w < 0 || !adjacent(t, rw.node, w)) {
      throw ScenarioError(r.path_of("from"), "expected a neighbour of " + t.nodes[rw.node].name +
                                                 " (" + neighbours_text(t, rw.node) +
                                                 "), found \"" + name + "\"");
    }
    rw.from = w;
  }
  rw.priority = static_cast<int>(r.integer("priority"));
  rw.to = static_cast<int>(r.integer("to"));
  r.finish();
  return rw;
}

const nlohmann::json& list_of(ParamReader& r, const std::string& key) {
  const nlohmann::json& v = r.raw(key);
  if (!v.is_null() && !v.is_array()) {
    throw ScenarioError(r.path_of(key), "expected a list, found " + json_text(v));
  }
  return v;
}

}  // namespace

RoutingPolicy RoutingPolicy::read(const nlohmann::json& section, const Topology& t) {
  ParamReader r(section, "routing", kRoutingParams);
  RoutingPolicy policy;
  const std::string algorithm = r.choice("algorithm");
  if (algorithm == "up_down") {
    policy.algorithm = RoutingAlgorithm::UpDown;
  } else if (algorithm == "static") {
    policy.algorithm = RoutingAlgorithm::Static;
  }
  const nlohmann::json& routes = list_of(r, "static");
  if (!routes.is_null() && !routes.empty() && policy.algorithm != RoutingAlgorithm::Static) {
    throw ScenarioError(r.path_of("static"),
                        "static routes are used only with algorithm \"static\", found algorithm "
                        "\"" +
                            algorithm + "\"");
  }
  for (size_t i = 0; i < routes.size(); ++i) {
    policy.routes.push_back(
        read_static_route(routes[i], r.path_of("static") + "[" + std::to_string(i) + "]", t));
  }
  const nlohmann::json& rewrites = list_of(r, "priority_rewrite");
  for (size_t i = 0; i < rewrites.size(); ++i) {
    policy.rewrites.push_back(read_rewrite(
        rewrites[i], r.path_of("priority_rewrite") + "[" + std::to_string(i) + "]", t));
  }
  policy.ttl = static_cast<int>(r.integer("ttl"));
  policy.convergence_delay = r.time("convergence_delay");
  r.finish();
  return policy;
}

namespace {

constexpr int kFar = 1 << 29;

// Per node and port: whether the port's link works.
std::vector<std::vector<char>> ports_up(const Topology& t, const std::vector<bool>& link_up) {
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
void append(ForwardingTable& t, const uint16_t* ports, size_t n) {
  t.offsets.push_back(static_cast<uint32_t>(t.ports.size()));
  t.ports.insert(t.ports.end(), ports, ports + n);
}
void close(ForwardingTable& t) {
  t.offsets.push_back(static_cast<uint32_t>(t.ports.size()));
}

// Shortest paths over the working links; routes never pass through a host.
void shortest_paths(const Topology& topo, const std::vector<std::vector<char>>& up,
                    std::vector<std::vector<int>>& distance, std::vector<ForwardingTable>& tables) {
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
    ForwardingTable& t = tables[v];
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
void up_down_paths(const Topology& topo, const std::vector<std::vector<char>>& up,
                   std::vector<std::vector<int>>& distance, std::vector<ForwardingTable>& tables) {
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
std::vector<std::vector<uint16_t>> unpack(const std::vector<uint32_t>& offsets,
                                          const std::vector<uint16_t>& ports) {
  std::vector<std::vector<uint16_t>> entries(offsets.size() - 1);
  for (size_t i = 0; i + 1 < offsets.size(); ++i) {
    entries[i].assign(ports.begin() + offsets[i], ports.begin() + offsets[i + 1]);
  }
  return entries;
}

void pack(const std::vector<std::vector<uint16_t>>& entries, std::vector<uint32_t>& offsets,
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
void apply_static_routes(const Topology& topo, const std::vector<std::vector<char>>& up,
                         const std::vector<const StaticRoute*>& routes, ForwardingTable& t) {
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

}  // namespace

RoutingTable compute_routes(const Topology& topo, const RoutingPolicy& policy,
                            const std::vector<bool>& link_up) {
  const int n = static_cast<int>(topo.nodes.size());
  const int hosts = topo.hosts;
  const std::vector<std::vector<char>> up = ports_up(topo, link_up);
  RoutingTable rt;
  rt.tables_.resize(n);
  if (policy.algorithm == RoutingAlgorithm::UpDown) {
    up_down_paths(topo, up, rt.distance_, rt.tables_);
  } else {
    shortest_paths(topo, up, rt.distance_, rt.tables_);
  }
  for (int s = 0; s < hosts; ++s) {
    for (int d = 0; d < hosts; ++d) {
      if (s != d && rt.distance_[s][d] >= kFar) rt.unreachable_.emplace_back(s, d);
    }
  }
  if (policy.algorithm == RoutingAlgorithm::Static) {
    std::vector<std::vector<const StaticRoute*>> by_switch(n);
    for (const StaticRoute& route : policy.routes) by_switch[route.node].push_back(&route);
    for (int v = hosts; v < n; ++v) {
      if (!by_switch[v].empty()) apply_static_routes(topo, up, by_switch[v], rt.tables_[v]);
    }
  }
  for (const PriorityRewrite& rw : policy.rewrites) {
    ForwardingTable& t = rt.tables_[rw.node];
    const int ports = topo.nodes[rw.node].ports;
    if (t.rewrites.empty()) {
      t.rewrites.resize(static_cast<size_t>(ports) * kPriorities);
      for (int port = 0; port < ports; ++port) {
        for (int q = 0; q < kPriorities; ++q) {
          t.rewrites[port * kPriorities + q] = static_cast<uint8_t>(q);
        }
      }
    }
    for (int port = 0; port < ports; ++port) {
      if (rw.from >= 0 && topo.peer(rw.node, port).node != rw.from) continue;
      t.rewrites[port * kPriorities + rw.priority] = static_cast<uint8_t>(rw.to);
    }
  }
  return rt;
}

RoutingTable::RoutingTable(const Topology& topo) {
  for (int h = 0; h < topo.hosts; ++h) {
    bool attached = false;
    for (const PortPeer& p : topo.peers[h]) attached |= topo.nodes[p.node].kind == NodeKind::Switch;
    if (!attached) {
      throw ScenarioError("topology", "host " + topo.nodes[h].name + " has no link to a switch");
    }
  }
  *this = compute_routes(topo, RoutingPolicy{}, std::vector<bool>(topo.links.size(), true));
  if (!unreachable_.empty()) {
    const auto [src, dst] = unreachable_.front();
    throw ScenarioError("topology",
                        topo.nodes[src].name + " has no route to " + topo.nodes[dst].name);
  }
}

}  // namespace fabtwin

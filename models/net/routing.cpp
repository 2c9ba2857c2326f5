#include "models/net/routing.h"

#include <algorithm>
#include <map>
#include <memory>

#include "sim/rng.h"

namespace fabtwin {

uint32_t roce_flow_hash(uint32_t src_host, uint32_t dst_host, uint16_t udp_source_port) {
  constexpr uint64_t kUdpProtocol = 17, kRoceV2Port = 4791;
  const uint64_t tuple_a = (uint64_t{src_host} << 32) | dst_host;
  const uint64_t tuple_b = (kUdpProtocol << 32) | (uint64_t{udp_source_port} << 16) | kRoceV2Port;
  return static_cast<uint32_t>(mix64(tuple_a, tuple_b));
}

std::vector<std::pair<int, int>> ecmp_path(const Topology& topology, const RoutingTable& routes,
                                           int src, int dst, uint32_t hash,
                                           const std::function<uint32_t(int)>& salt) {
  std::vector<std::pair<int, int>> path{{src, 0}};
  int node = topology.peer(src, 0).node;
  while (node != dst) {
    const auto hops = routes.next_hops(node, dst);
    if (hops.empty() || path.size() > topology.nodes.size()) return {};
    const int port = hops.size() == 1
                         ? hops[0]
                         : hops[ecmp_pick(hash, salt(node), static_cast<uint32_t>(hops.size()))];
    path.emplace_back(node, port);
    node = topology.peer(node, port).node;
  }
  return path;
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
      "the fabric studied"},
     {"strategy", ParamType::Choice, "\"ecmp\"",
      "how every switch chooses among the equal-cost ports of a destination: ecmp (hash of the "
      "flow's 5-tuple: a flow keeps one path), adaptive (per packet, the least-loaded eligible "
      "port), flowlet (per flowlet: a flow moves to the least-loaded port only after a pause "
      "longer than routing.adaptive.flowlet_gap), drill (per packet, the least loaded of d "
      "random ports and m remembered ones), spray (per packet, round robin). Every strategy "
      "but ecmp skips ports whose link is down or that are paused (PFC) for the packet's "
      "priority; routing.adaptive sets the load signal. docs/routing.md",
      "ECMP: RFC 2992; adaptive: InfiniBand/Spectrum-X AR; flowlet: CONGA (SIGCOMM 2014), "
      "LetFlow (NSDI 2017); drill: DRILL (SIGCOMM 2017); spray: Dixit et al. (INFOCOM 2013) "
      "(docs/references.md §2.8)",
      "ecmp|adaptive|flowlet|drill|spray"},
     {"strategies", ParamType::List, "[]",
      "per-tier, per-switch and per-priority strategies over routing.strategy, applied in order "
      "(later entries win): [{tier, switch, priorities, strategy}], see routing.strategies[]",
      "fabtwin"},
     {"adaptive", ParamType::List, "{}", "load signal and strategy knobs, see routing.adaptive",
      "fabtwin"}}};

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
  policy.strategies = StrategyPolicy::read(r, t);
  r.finish();
  return policy;
}

namespace {

constexpr int kFar = ForwardingTable::kUnreachable;

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

// Destination classes: hosts hanging off the same switches over working links. At any switch
// they do not hang off, every host of a class has the same next hops and distance.
struct HostClasses {
  std::vector<int> class_of;               // [host]
  std::vector<std::vector<int>> switches;  // [class]: sorted, the switches its hosts hang off
  std::vector<std::vector<int>> hosts;     // [class]: its hosts, ascending
  // Per host, the (switch, switch port) pairs of its working links to switches, sorted.
  std::vector<uint32_t> local_first;
  std::vector<std::pair<int, uint16_t>> local;

  bool attached(int c, int v) const {
    const std::vector<int>& s = switches[c];
    return std::binary_search(s.begin(), s.end(), v);
  }
};

HostClasses host_classes(const Topology& topo, const std::vector<std::vector<char>>& up) {
  HostClasses hc;
  const int hosts = topo.hosts;
  hc.class_of.resize(hosts);
  hc.local_first.assign(1, 0);
  std::map<std::vector<int>, int> ids;
  std::vector<int> key;
  for (int h = 0; h < hosts; ++h) {
    const size_t first = hc.local.size();
    for (int port = 0; port < topo.nodes[h].ports; ++port) {
      const PortPeer& p = topo.peer(h, port);
      if (up[h][port] && topo.nodes[p.node].kind == NodeKind::Switch) {
        hc.local.emplace_back(p.node, static_cast<uint16_t>(p.port));
      }
    }
    std::sort(hc.local.begin() + static_cast<std::ptrdiff_t>(first), hc.local.end());
    hc.local_first.push_back(static_cast<uint32_t>(hc.local.size()));
    key.clear();
    for (size_t i = first; i < hc.local.size(); ++i) {
      if (key.empty() || key.back() != hc.local[i].first) key.push_back(hc.local[i].first);
    }
    const auto [it, added] = ids.emplace(key, static_cast<int>(hc.switches.size()));
    if (added) {
      hc.switches.push_back(key);
      hc.hosts.emplace_back();
    }
    hc.class_of[h] = it->second;
    hc.hosts[it->second].push_back(h);
  }
  return hc;
}

// One destination class's view of the fabric, per switch (indices are node ids; hosts unused):
// the distance to the class, and whether a working port leads toward it.
class ClassPaths {
 public:
  virtual ~ClassPaths() = default;
  // Computes the class whose hosts hang off `attached` (sorted switches).
  virtual void compute(const std::vector<int>& attached) = 0;
  // Hops from switch v to a host of the class; kFar when there is no path.
  virtual int distance(int v) const = 0;
  // Whether `port` of switch v (its link working, toward switch w) is a next hop.
  virtual bool via(int v, int w) const = 0;
};

// Shortest paths over the working links; routes never pass through a host.
class ShortestPaths final : public ClassPaths {
 public:
  ShortestPaths(const Topology& topo, const std::vector<std::vector<char>>& up)
      : topo_(topo), up_(up), dist_(topo.nodes.size(), kFar) {}
  void compute(const std::vector<int>& attached) override {
    std::fill(dist_.begin(), dist_.end(), kFar);
    frontier_.clear();
    for (int s : attached) {
      dist_[s] = 1;
      frontier_.push_back(s);
    }
    for (size_t i = 0; i < frontier_.size(); ++i) {
      const int v = frontier_[i];
      for (int port = 0; port < topo_.nodes[v].ports; ++port) {
        const int w = topo_.peer(v, port).node;
        if (!up_[v][port] || topo_.nodes[w].kind != NodeKind::Switch || dist_[w] < kFar) continue;
        dist_[w] = dist_[v] + 1;
        frontier_.push_back(w);
      }
    }
  }
  int distance(int v) const override { return dist_[v]; }
  bool via(int v, int w) const override { return dist_[w] == dist_[v] - 1; }

 private:
  const Topology& topo_;
  const std::vector<std::vector<char>>& up_;
  std::vector<int> dist_;
  std::vector<int> frontier_;
};

// Valley-free (up*/down*) shortest paths. Nodes are ranked by (tier, node index); a move to a
// higher rank is up, to a lower one down, and a path may not go up after it went down. With
// one table per destination (no ingress port), a switch that some switch routes down into must
// itself route only down: such switches are marked and the distances recomputed until no new
// switch is marked.
class UpDownPaths final : public ClassPaths {
 public:
  UpDownPaths(const Topology& topo, const std::vector<std::vector<char>>& up)
      : topo_(topo),
        up_(up),
        down_(topo.nodes.size()),
        any_(topo.nodes.size()),
        down_only_(topo.nodes.size()) {
    for (int v = topo.hosts; v < static_cast<int>(topo.nodes.size()); ++v) switches_.push_back(v);
    std::sort(switches_.begin(), switches_.end(), [&](int a, int b) { return rank_less(a, b); });
  }
  void compute(const std::vector<int>& attached) override {
    const int hosts = topo_.hosts;
    // down[v]: hops from v to the class moving only down (a host's switches: 1).
    std::fill(down_.begin(), down_.end(), kFar);
    for (int s : attached) down_[s] = 1;
    for (int v : switches_) {
      for (int port = 0; port < topo_.nodes[v].ports; ++port) {
        const int w = topo_.peer(v, port).node;
        if (up_[v][port] && w >= hosts && rank_less(w, v) && down_[w] < kFar) {
          down_[v] = std::min(down_[v], down_[w] + 1);
        }
      }
    }
    std::fill(down_only_.begin(), down_only_.end(), 0);
    for (;;) {
      // any[v]: hops from v to the class going up, then down (down only at a marked switch).
      std::fill(any_.begin(), any_.end(), kFar);
      for (auto it = switches_.rbegin(); it != switches_.rend(); ++it) {
        const int v = *it;
        any_[v] = down_[v];
        if (down_only_[v]) continue;
        for (int port = 0; port < topo_.nodes[v].ports; ++port) {
          const int w = topo_.peer(v, port).node;
          if (up_[v][port] && rank_less(v, w) && any_[w] < kFar) {
            any_[v] = std::min(any_[v], any_[w] + 1);
          }
        }
      }
      bool marked = false;
      for (int v : switches_) {
        if (any_[v] >= kFar) continue;
        for (int port = 0; port < topo_.nodes[v].ports; ++port) {
          const int w = topo_.peer(v, port).node;
          if (up_[v][port] && w >= hosts && rank_less(w, v) && down_[w] + 1 == any_[v] &&
              !down_only_[w]) {
            down_only_[w] = 1;
            marked = true;
          }
        }
      }
      if (!marked) break;
    }
  }
  int distance(int v) const override { return any_[v]; }
  bool via(int v, int w) const override {
    return rank_less(w, v) ? down_[w] + 1 == any_[v] : !down_only_[v] && any_[w] + 1 == any_[v];
  }

 private:
  bool rank_less(int a, int b) const {
    return std::pair(topo_.nodes[a].tier, a) < std::pair(topo_.nodes[b].tier, b);
  }
  const Topology& topo_;
  const std::vector<std::vector<char>>& up_;
  std::vector<int> switches_;  // by rank
  std::vector<int> down_, any_;
  std::vector<char> down_only_;
};

// Static routes, in order, over the computed entries of switch `v` (`entries`, per host): per
// priority where one names a priority (`per_priority`, hosts x kPriorities, then filled). A
// route whose next hops are all down is withdrawn. Static routes keep each host's distance.
void apply_static_routes(const Topology& topo, const std::vector<std::vector<char>>& up,
                         const std::vector<const StaticRoute*>& routes, ForwardingTableBuilder& b,
                         std::vector<uint32_t>& entries, std::vector<uint32_t>& per_priority) {
  const int v = routes.front()->node;
  const int hosts = topo.hosts;
  std::vector<uint16_t> ports;
  for (const StaticRoute* route : routes) {
    ports.clear();
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
      const uint32_t e = b.entry(ports, b.distance(entries[d]));
      if (route->priority < 0) {
        entries[d] = e;
        for (int q = 0; q < kPriorities && !per_priority.empty(); ++q) {
          per_priority[d * kPriorities + q] = e;
        }
      } else {
        per_priority[d * kPriorities + route->priority] = e;
      }
    };
    if (route->dst.empty()) {
      for (int d = 0; d < hosts; ++d) apply(d);
    } else {
      for (int d : route->dst) apply(d);
    }
  }
}

// Switch `v`'s priority rewrites (empty: none).
std::vector<uint8_t> rewrites_of(const Topology& topo, const RoutingPolicy& policy, int v) {
  std::vector<uint8_t> rewrites;
  const int ports = topo.nodes[v].ports;
  for (const PriorityRewrite& rw : policy.rewrites) {
    if (rw.node != v) continue;
    if (rewrites.empty()) {
      rewrites.resize(static_cast<size_t>(ports) * kPriorities);
      for (int port = 0; port < ports; ++port) {
        for (int q = 0; q < kPriorities; ++q) {
          rewrites[port * kPriorities + q] = static_cast<uint8_t>(q);
        }
      }
    }
    for (int port = 0; port < ports; ++port) {
      if (rw.from >= 0 && topo.peer(v, port).node != rw.from) continue;
      rewrites[port * kPriorities + rw.priority] = static_cast<uint8_t>(rw.to);
    }
  }
  return rewrites;
}

}  // namespace

RoutingTable compute_routes(const Topology& topo, const RoutingPolicy& policy,
                            const std::vector<bool>& link_up, int direct_hosts_limit) {
  const int n = static_cast<int>(topo.nodes.size());
  const int hosts = topo.hosts;
  const int switches = n - hosts;
  const std::vector<std::vector<char>> up = ports_up(topo, link_up);
  const HostClasses hc = host_classes(topo, up);
  const int classes = static_cast<int>(hc.switches.size());
  std::unique_ptr<ClassPaths> paths;
  if (policy.algorithm == RoutingAlgorithm::UpDown) {
    paths = std::make_unique<UpDownPaths>(topo, up);
  } else {
    paths = std::make_unique<ShortestPaths>(topo, up);
  }

  // Per class, every switch's entry toward it (switches it hangs off excepted: there each host
  // has its own), and the distance from every class's hosts to it.
  std::vector<ForwardingTableBuilder> builders;
  builders.reserve(switches);
  for (int v = 0; v < switches; ++v) builders.emplace_back(hosts);
  std::vector<uint32_t> class_entry(static_cast<size_t>(classes) * switches);
  RoutingTable rt;
  std::vector<std::pair<int, int>> unreachable_classes;  // (source class, destination class)
  std::vector<uint16_t> ports;
  for (int c = 0; c < classes; ++c) {
    paths->compute(hc.switches[c]);
    for (int v = hosts; v < n; ++v) {
      if (hc.attached(c, v)) continue;
      const int d = paths->distance(v);
      ports.clear();
      for (int port = 0; d < kFar && port < topo.nodes[v].ports; ++port) {
        const int w = topo.peer(v, port).node;
        if (up[v][port] && w >= hosts && paths->via(v, w)) {
          ports.push_back(static_cast<uint16_t>(port));
        }
      }
      class_entry[static_cast<size_t>(c) * switches + (v - hosts)] =
          builders[v - hosts].entry(ports, d);
    }
    // A host of class `from` reaches one of `c` through the nearest switch it hangs off.
    for (int from = 0; from < classes; ++from) {
      if (from == c && hc.hosts[c].size() < 2) continue;  // no pair of different hosts
      int d = kFar;
      for (int s : hc.switches[from]) d = std::min(d, paths->distance(s) + 1);
      if (d >= kFar) {
        unreachable_classes.emplace_back(from, c);
      } else {
        rt.longest_distance_ = std::max(rt.longest_distance_, d);
      }
    }
  }

  std::vector<std::vector<const StaticRoute*>> static_routes(n);
  if (policy.algorithm == RoutingAlgorithm::Static) {
    for (const StaticRoute& route : policy.routes) static_routes[route.node].push_back(&route);
  }
  // Blocks: runs of consecutive hosts of one class (a leaf's hosts, in every builder).
  std::vector<std::pair<int, int>> blocks;  // (first host, class)
  for (int h = 0; h < hosts; ++h) {
    if (h == 0 || hc.class_of[h] != hc.class_of[h - 1]) blocks.emplace_back(h, hc.class_of[h]);
  }
  blocks.emplace_back(hosts, -1);
  rt.hosts_ = hosts;
  rt.tables_.resize(switches);
  ForwardingTableBuilder::Runs runs;
  std::vector<ForwardingTableBuilder::Runs> per_priority;
  std::vector<uint32_t> entries;
  for (int v = hosts; v < n; ++v) {
    ForwardingTableBuilder& b = builders[v - hosts];
    const uint32_t* of_class = class_entry.data() + (v - hosts);
    runs.clear();
    auto add = [&](int first, uint32_t e) {
      if (runs.empty() || runs.back().second != e) runs.emplace_back(first, e);
    };
    for (size_t i = 0; i + 1 < blocks.size(); ++i) {
      const auto [first, c] = blocks[i];
      if (!hc.attached(c, v)) {
        add(first, of_class[static_cast<size_t>(c) * switches]);
        continue;
      }
      // A switch the hosts hang off delivers each on its own ports to it.
      for (int h = first; h < blocks[i + 1].first; ++h) {
        ports.clear();
        for (uint32_t j = hc.local_first[h]; j < hc.local_first[h + 1]; ++j) {
          if (hc.local[j].first == v) ports.push_back(hc.local[j].second);
        }
        add(h, b.entry(ports, 1));
      }
    }
    per_priority.clear();
    if (!static_routes[v].empty()) {
      entries.resize(hosts);
      for (size_t i = 0; i < runs.size(); ++i) {
        const int end = i + 1 < runs.size() ? static_cast<int>(runs[i + 1].first) : hosts;
        std::fill(entries.begin() + runs[i].first, entries.begin() + end, runs[i].second);
      }
      std::vector<uint32_t> priority_entries;
      apply_static_routes(topo, up, static_routes[v], b, entries, priority_entries);
      runs = ForwardingTableBuilder::runs_of(entries);
      if (!priority_entries.empty()) {
        std::vector<uint32_t> one(hosts);
        for (int q = 0; q < kPriorities; ++q) {
          for (int h = 0; h < hosts; ++h) one[h] = priority_entries[h * kPriorities + q];
          per_priority.push_back(ForwardingTableBuilder::runs_of(one));
        }
      }
    }
    rt.tables_[v - hosts] =
        b.finish(runs, per_priority, hosts > direct_hosts_limit, rewrites_of(topo, policy, v));
  }

  rt.attach_first_.assign(1, 0);
  for (int h = 0; h < hosts; ++h) {
    for (uint32_t i = hc.local_first[h]; i < hc.local_first[h + 1]; ++i) {
      const int s = hc.local[i].first;
      if (rt.attached_.size() == rt.attach_first_.back() || rt.attached_.back() != s) {
        rt.attached_.push_back(s);
      }
    }
    rt.attach_first_.push_back(static_cast<uint32_t>(rt.attached_.size()));
  }
  if (!unreachable_classes.empty()) {
    std::vector<std::vector<int>> to(classes);  // destination classes each class cannot reach
    for (const auto& [from, c] : unreachable_classes) to[from].push_back(c);
    std::vector<int> dsts;
    for (int s = 0; s < hosts; ++s) {
      dsts.clear();
      for (int c : to[hc.class_of[s]]) {
        for (int d : hc.hosts[c]) {
          if (d != s) dsts.push_back(d);
        }
      }
      std::sort(dsts.begin(), dsts.end());
      for (int d : dsts) rt.unreachable_.emplace_back(s, d);
    }
  }
  return rt;
}

const ForwardingTable RoutingTable::kNoTable{};

int RoutingTable::distance(int node, int dst_host) const {
  int d = kFar;
  if (node == dst_host) {
    d = 0;
  } else if (node < hosts_) {  // a host: one hop to the nearest switch it hangs off
    for (uint32_t i = attach_first_[node]; i < attach_first_[node + 1]; ++i) {
      d = std::min(d, table(attached_[i]).distance(dst_host) + 1);
    }
  } else {
    d = table(node).distance(dst_host);
  }
  return d >= kFar ? -1 : d;
}

void RoutingTable::set_next_hops(int node, const std::vector<std::vector<uint16_t>>& per_host) {
  const ForwardingTable& old = table(node);
  std::vector<int> distance(per_host.size());
  for (size_t h = 0; h < per_host.size(); ++h) distance[h] = old.distance(static_cast<int>(h));
  ForwardingTable t = ForwardingTable::from_hops(per_host, distance);
  t.rewrites = old.rewrites;
  tables_[node - hosts_] = std::move(t);
}

size_t RoutingTable::memory_bytes() const {
  size_t bytes = sizeof(ForwardingTable) * tables_.size() +
                 sizeof(uint32_t) * attach_first_.size() + sizeof(int) * attached_.size() +
                 sizeof(std::pair<int, int>) * unreachable_.size();
  for (const ForwardingTable& t : tables_) bytes += t.memory_bytes();
  return bytes;
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

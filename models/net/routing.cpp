#include "models/net/routing.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <limits>

#include "sim/rng.h"

namespace fabtwin {

uint32_t roce_flow_hash(uint32_t src_host, uint32_t dst_host, uint16_t udp_source_port) {
  constexpr uint64_t kUdpProtocol = 17, kRoceV2Port = 4791;
  const uint64_t tuple_a = (uint64_t{src_host} << 32) | dst_host;
  const uint64_t tuple_b = (kUdpProtocol << 32) | (uint64_t{udp_source_port} << 16) | kRoceV2Port;
  return static_cast<uint32_t>(mix64(tuple_a, tuple_b));
}

RoutingTable::RoutingTable(const Topology& topo) {
  const int n = static_cast<int>(topo.nodes.size());
  const int hosts = topo.hosts;
  constexpr int kFar = std::numeric_limits<int>::max() / 2;

  // Switch-only graph: routes never pass through a host.
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  Graph g(n);
  std::vector<std::vector<int>> attached(hosts);  // switches each host hangs off
  for (const Link& l : topo.links) {
    const bool a_host = topo.nodes[l.a].kind == NodeKind::Host;
    const bool b_host = topo.nodes[l.b].kind == NodeKind::Host;
    if (!a_host && !b_host) boost::add_edge(l.a, l.b, g);
    if (a_host && !b_host) attached[l.a].push_back(l.b);
    if (b_host && !a_host) attached[l.b].push_back(l.a);
  }
  for (int h = 0; h < hosts; ++h) {
    if (attached[h].empty()) {
      throw ScenarioError("topology", "host " + topo.nodes[h].name + " has no link to a switch");
    }
  }

  // Switch-to-switch hop counts, one BFS per switch that some host hangs off.
  std::vector<std::vector<int>> sw_dist(n);
  for (int h = 0; h < hosts; ++h) {
    for (int s : attached[h]) {
      if (!sw_dist[s].empty()) continue;
      std::vector<int> d(n, kFar);
      d[s] = 0;
      boost::breadth_first_search(g, boost::vertex(s, g),
                                  boost::visitor(boost::make_bfs_visitor(
                                      boost::record_distances(d.data(), boost::on_tree_edge()))));
      sw_dist[s] = std::move(d);
    }
  }

  distance_.assign(n, std::vector<int>(hosts, kFar));
  for (int h = 0; h < hosts; ++h) {
    for (int s : attached[h]) {
      for (int v = 0; v < n; ++v) {
        if (topo.nodes[v].kind == NodeKind::Switch && sw_dist[s][v] < kFar) {
          distance_[v][h] = std::min(distance_[v][h], sw_dist[s][v] + 1);
        }
      }
    }
  }

  // A host is one hop further than the nearest switch it hangs off.
  for (int v = 0; v < hosts; ++v) {
    for (int h = 0; h < hosts; ++h) {
      if (v == h) {
        distance_[v][h] = 0;
        continue;
      }
      for (int s : attached[v]) distance_[v][h] = std::min(distance_[v][h], distance_[s][h] + 1);
      if (distance_[v][h] >= kFar) {
        throw ScenarioError("topology",
                            topo.nodes[v].name + " has no route to " + topo.nodes[h].name);
      }
    }
  }

  // Per-switch port lists: a port is a next hop toward h if its neighbour is one hop closer.
  tables_.resize(n);
  for (int v = hosts; v < n; ++v) {  // switches only: a host sends on its own link
    ForwardingTable& t = tables_[v];
    t.offsets.reserve(hosts + 1);
    for (int h = 0; h < hosts; ++h) {
      t.offsets.push_back(static_cast<uint32_t>(t.ports.size()));
      if (distance_[v][h] >= kFar) continue;  // a switch no host path crosses
      for (int port = 0; port < topo.nodes[v].ports; ++port) {
        const int peer = topo.peer(v, port).node;
        const bool peer_is_host = topo.nodes[peer].kind == NodeKind::Host;
        if (peer_is_host && peer != h) continue;  // hosts do not forward
        if (distance_[peer][h] == distance_[v][h] - 1)
          t.ports.push_back(static_cast<uint16_t>(port));
      }
    }
    t.offsets.push_back(static_cast<uint32_t>(t.ports.size()));
  }
}

}  // namespace fabtwin

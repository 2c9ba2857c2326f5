#include "models/fabric/partitioning.h"

#include <algorithm>
#include <deque>

namespace fabtwin {

FabricPartitioning partition_fabric(const Topology& topo, int parts, bool keep_node_nics) {
  const int n = static_cast<int>(topo.nodes.size());
  FabricPartitioning result;
  result.partition_of.assign(n, 0);
  std::vector<std::vector<int>> neighbours(n);
  for (const Link& l : topo.links) {
    neighbours[l.a].push_back(l.b);
    neighbours[l.b].push_back(l.a);
  }
  std::vector<int> switches;
  for (int v = 0; v < n; ++v) {
    if (topo.nodes[v].kind == NodeKind::Switch) switches.push_back(v);
  }
  // Each host goes with the switch it hangs off (its home). Keeping node NICs together, every
  // NIC of a GPU node goes with the switch of the node's NIC k mod NICs, so that the nodes
  // spread over the rails (and the rails over the partitions); its other NICs' links may be cut.
  const int per_node = keep_node_nics ? std::max(1, topo.nics_per_node) : 1;
  std::vector<int> home(topo.hosts, -1);
  for (int first = 0; first < topo.hosts; first += per_node) {
    int sw = -1;
    const int anchor = first + (first / per_node) % per_node;
    for (int w : neighbours[anchor]) {
      if (topo.nodes[w].kind == NodeKind::Switch) {
        sw = w;
        break;
      }
    }
    for (int h = first; h < std::min(topo.hosts, first + per_node); ++h) home[h] = sw;
  }
  parts = std::max(1, std::min(parts, static_cast<int>(switches.size())));
  if (parts > 1) {
    // Breadth-first order over switches, starting from the first, neighbours by id.
    std::vector<int> order;
    std::vector<bool> seen(n, false);
    for (int start : switches) {
      if (seen[start]) continue;
      std::deque<int> frontier{start};
      seen[start] = true;
      while (!frontier.empty()) {
        const int v = frontier.front();
        frontier.pop_front();
        order.push_back(v);
        std::vector<int> next = neighbours[v];
        std::sort(next.begin(), next.end());
        for (int w : next) {
          if (!seen[w] && topo.nodes[w].kind == NodeKind::Switch) {
            seen[w] = true;
            frontier.push_back(w);
          }
        }
      }
    }
    // Weight: a switch's ports plus two per host that goes with it (its NIC's work).
    std::vector<int64_t> weight(n, 0);
    for (int v : switches) weight[v] = topo.nodes[v].ports;
    for (int h = 0; h < topo.hosts; ++h) {
      if (home[h] >= 0) weight[home[h]] += 2;
    }
    int64_t total = 0;
    for (int v : order) total += weight[v];
    int64_t acc = 0;
    for (int v : order) {
      const auto part = static_cast<uint32_t>(std::min<int64_t>(parts - 1, acc * parts / total));
      result.partition_of[v] = part;
      acc += weight[v];
    }
  }
  for (int h = 0; h < topo.hosts; ++h) {
    if (home[h] >= 0) result.partition_of[h] = result.partition_of[home[h]];
  }
  for (const Link& l : topo.links) {
    if (result.partition_of[l.a] == result.partition_of[l.b]) continue;
    ++result.cut_links;
    if (l.delay.ps <= 0) {
      throw ScenarioError("fabric.link.delay",
                          "a link of zero delay between " + topo.nodes[l.a].name + " and " +
                              topo.nodes[l.b].name +
                              " would cross threads and leave no lookahead; give links a "
                              "propagation delay or run with --threads 1");
    }
    result.lookahead = std::min(result.lookahead, l.delay);
  }
  for (uint32_t p : result.partition_of) result.partitions = std::max(result.partitions, p + 1);
  return result;
}

}  // namespace fabtwin

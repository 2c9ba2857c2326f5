#include "models/fabric/partitioning.h"

#include <algorithm>
#include <deque>
#include <map>
#include <stdexcept>
#include <utility>

#ifdef FABTWIN_HAVE_METIS
#include <metis.h>
#endif

namespace fabtwin {

bool metis_available() {
#ifdef FABTWIN_HAVE_METIS
  return true;
#else
  return false;
#endif
}

Partitioner partitioner_from_name(const std::string& name) {
  if (name == "bfs") return Partitioner::BreadthFirst;
  if (name == "metis") return Partitioner::Metis;
  throw std::invalid_argument("unknown partitioner \"" + name + "\" (expected bfs or metis)");
}

const char* partitioner_name(Partitioner partitioner) {
  return partitioner == Partitioner::Metis ? "metis" : "bfs";
}

namespace {

// Contiguous runs of a breadth-first order over the switches (starting from the first,
// neighbours by id), each run about an equal share of the weight.
void cut_breadth_first(const Topology& topo, const std::vector<std::vector<int>>& neighbours,
                       const std::vector<int>& switches, const std::vector<int64_t>& weight,
                       int parts, std::vector<uint32_t>& partition_of) {
  std::vector<int> order;
  std::vector<bool> seen(topo.nodes.size(), false);
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
  int64_t total = 0;
  for (int v : order) total += weight[v];
  int64_t acc = 0;
  for (int v : order) {
    partition_of[v] = static_cast<uint32_t>(std::min<int64_t>(parts - 1, acc * parts / total));
    acc += weight[v];
  }
}

#ifdef FABTWIN_HAVE_METIS
// METIS's multilevel k-way partitioning of the switch graph: a vertex per switch with its
// weight, an edge per pair of switches joined by links (directly, or through a host that goes
// with one of them), weighted by the number of such links, so that the cut counts the links
// that cross partitions. A fixed seed makes the cut the same on every run. Returns false if
// METIS fails or leaves a part empty (the caller then cuts breadth-first).
bool cut_metis(const Topology& topo, const std::vector<int>& home, const std::vector<int>& switches,
               const std::vector<int64_t>& weight, int parts, std::vector<uint32_t>& partition_of) {
  std::vector<int> vertex(topo.nodes.size(), -1);
  for (size_t i = 0; i < switches.size(); ++i) vertex[switches[i]] = static_cast<int>(i);
  auto vertex_of = [&](int node) {
    return topo.nodes[node].kind == NodeKind::Switch ? vertex[node]
           : home[node] >= 0                         ? vertex[home[node]]
                                                     : -1;
  };
  std::vector<std::map<int, idx_t>> edges(switches.size());
  for (const Link& l : topo.links) {
    const int a = vertex_of(l.a);
    const int b = vertex_of(l.b);
    if (a < 0 || b < 0 || a == b) continue;
    ++edges[a][b];
    ++edges[b][a];
  }
  std::vector<idx_t> xadj{0}, adjncy, adjwgt, vwgt;
  for (size_t v = 0; v < switches.size(); ++v) {
    for (const auto& [w, links] : edges[v]) {
      adjncy.push_back(w);
      adjwgt.push_back(links);
    }
    xadj.push_back(static_cast<idx_t>(adjncy.size()));
    vwgt.push_back(static_cast<idx_t>(std::max<int64_t>(1, weight[switches[v]])));
  }
  idx_t vertices = static_cast<idx_t>(switches.size()), constraints = 1, nparts = parts, cut = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = 1;
  options[METIS_OPTION_NUMBERING] = 0;
  std::vector<idx_t> part(switches.size(), 0);
  if (METIS_PartGraphKway(&vertices, &constraints, xadj.data(), adjncy.data(), vwgt.data(), nullptr,
                          adjwgt.data(), &nparts, nullptr, nullptr, options, &cut,
                          part.data()) != METIS_OK) {
    return false;
  }
  // Numbered in order of the first switch of each part. On a few switches METIS may leave parts
  // empty (a 3-switch ring in 2 parts comes back whole): the breadth-first cut then does better.
  std::vector<int> number(static_cast<size_t>(parts), -1);
  uint32_t next = 0;
  for (size_t v = 0; v < switches.size(); ++v) {
    int& n = number[static_cast<size_t>(part[v])];
    if (n < 0) n = static_cast<int>(next++);
  }
  if (next < static_cast<uint32_t>(parts)) return false;
  for (size_t v = 0; v < switches.size(); ++v) {
    partition_of[switches[v]] = static_cast<uint32_t>(number[static_cast<size_t>(part[v])]);
  }
  return true;
}
#endif

// The cut, and the first link of zero delay it crosses (null if none).
std::pair<FabricPartitioning, const Link*> cut_fabric(const Topology& topo, int parts,
                                                      bool keep_node_nics,
                                                      Partitioner partitioner) {
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
  std::vector<int> home(n, -1);
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
  // Weight: a switch's ports plus two per host that goes with it (its NIC's work).
  std::vector<int64_t> weight(n, 0);
  for (int v : switches) weight[v] = topo.nodes[v].ports;
  for (int h = 0; h < topo.hosts; ++h) {
    if (home[h] >= 0) weight[home[h]] += kHostWeight;
  }
  parts = std::max(1, std::min(parts, static_cast<int>(switches.size())));
  if (parts > 1) {
    bool cut = false;
#ifdef FABTWIN_HAVE_METIS
    if (partitioner == Partitioner::Metis) {
      cut = cut_metis(topo, home, switches, weight, parts, result.partition_of);
    }
#endif
    result.partitioner = cut ? Partitioner::Metis : Partitioner::BreadthFirst;
    if (!cut) cut_breadth_first(topo, neighbours, switches, weight, parts, result.partition_of);
  }
  for (int h = 0; h < topo.hosts; ++h) {
    if (home[h] >= 0) result.partition_of[h] = result.partition_of[home[h]];
  }
  const Link* zero = nullptr;
  for (const Link& l : topo.links) {
    if (result.partition_of[l.a] == result.partition_of[l.b]) continue;
    ++result.cut_links;
    if (l.delay.ps <= 0 && zero == nullptr) zero = &l;
    result.lookahead = std::min(result.lookahead, l.delay);
  }
  result.node_nics_together = keep_node_nics && topo.nics_per_node > 1;
  for (uint32_t p : result.partition_of) result.partitions = std::max(result.partitions, p + 1);
  std::vector<int64_t> load(result.partitions, 0);
  int64_t total = 0;
  for (int v : switches) {
    load[result.partition_of[v]] += weight[v];
    total += weight[v];
  }
  if (total > 0) {
    result.imbalance = static_cast<double>(*std::max_element(load.begin(), load.end())) *
                       result.partitions / static_cast<double>(total);
  }
  return {std::move(result), zero};
}

}  // namespace

FabricPartitioning partition_fabric(const Topology& topo, int parts, bool keep_node_nics,
                                    Partitioner partitioner) {
  auto [result, zero] = cut_fabric(topo, parts, keep_node_nics, partitioner);
  if (zero != nullptr) {
    throw ScenarioError("fabric.link.delay",
                        "a link of zero delay between " + topo.nodes[zero->a].name + " and " +
                            topo.nodes[zero->b].name +
                            " would cross threads and leave no lookahead; give links a "
                            "propagation delay or run with --threads 1");
  }
  return result;
}

FabricPartitioning partition_gpu_fabric(const Topology& topo, int parts, Time pcie_latency,
                                        Partitioner partitioner) {
  if (pcie_latency.ps <= 0) return partition_fabric(topo, parts, true, partitioner);
  FabricPartitioning by_switch = partition_fabric(topo, parts, false, partitioner);
  if (by_switch.partitions == 1) return by_switch;
  by_switch.lookahead = std::min(by_switch.lookahead, pcie_latency);
  if (by_switch.lookahead >= kLocalityWindow) return by_switch;
  auto [by_node, zero] = cut_fabric(topo, parts, true, partitioner);
  if (zero == nullptr && by_node.lookahead > by_switch.lookahead) return by_node;
  return by_switch;
}

int locality_partitions(const Topology& topo) {
  int64_t weight = 0;
  for (const TopologyNode& node : topo.nodes) {
    weight += node.kind == NodeKind::Switch ? node.ports : kHostWeight;
  }
  return static_cast<int>((weight + kLocalityWeight - 1) / kLocalityWeight);
}

FabricPartitioning partition_run(const Topology& topo, int threads, int partitions,
                                 std::optional<Time> pcie_latency, Partitioner partitioner) {
  const auto cut = [&](int parts) {
    return pcie_latency ? partition_gpu_fabric(topo, parts, *pcie_latency, partitioner)
                        : partition_fabric(topo, parts, false, partitioner);
  };
  const int per_thread =
      pcie_latency && threads > 1 && partitions == 0 ? kGpuPartitionsPerThread : 1;
  FabricPartitioning run = cut(std::max({1, threads * per_thread, partitions}));
  if (partitions > 0) return run;
  const int local = locality_partitions(topo);
  if (local <= static_cast<int>(run.partitions)) return run;
  try {
    FabricPartitioning finer = cut(local);
    if (finer.lookahead >= kLocalityWindow) return finer;
  } catch (const ScenarioError&) {
    // A link of zero delay would cross the finer cut: the threads' cut stands.
  }
  return run;
}

}  // namespace fabtwin

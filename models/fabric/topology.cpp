#include "models/fabric/topology.h"

#include <algorithm>
#include <map>
#include "sim/scenario_file.h"

namespace fabtwin {

const ParamGroup kTopologyParams{
    "topology",
    "topology",
    "Fabric shape",
    {
        {"type", ParamType::Choice, "star",
         "shape: star (one switch), leaf_spine (two tiers), fat_tree (k-ary, three tiers), "
         "rail_optimized (GPU nodes, NIC i of every node on rail i, rails joined by spines)",
         "fabtwin", "star|leaf_spine|fat_tree|rail_optimized|ring|graph"},
        {"hosts", ParamType::Integer, "8",
         "star: hosts on the switch; graph: the list of hosts (see topology.hosts[])", "fabtwin",
         "2..65536"},
        {"leaves", ParamType::Integer, "4", "leaf_spine: leaf (top-of-rack) switches", "fabtwin",
         "1..4096"},
        {"spines", ParamType::Integer, "2",
         "leaf_spine: spine switches (at least 1); rail_optimized: spine switches joining all "
         "rail leaves (0 only with one rail of one leaf)",
         "fabtwin", "0..4096"},
        {"hosts_per_leaf", ParamType::Integer, "8", "leaf_spine: hosts on each leaf", "fabtwin",
         "1..4096"},
        {"uplink_rate", ParamType::Rate, "(fabric.link.rate)",
         "leaf_spine and rail_optimized: rate of each leaf-spine link; oversubscription = hosts "
         "(NICs) per leaf x host rate / (spines x uplink_rate)",
         "fabtwin"},
        {"k", ParamType::Integer, "4",
         "fat_tree: switch radix k (even); k^3/4 hosts, k pods, (k/2)^2 core switches",
         "Al-Fares et al., SIGCOMM 2008", "2..128"},
        {"nodes", ParamType::Integer, "2", "rail_optimized: GPU nodes (servers)", "fabtwin",
         "1..65536"},
        {"gpus_per_node", ParamType::Integer, "8", "rail_optimized: GPUs in each node",
         "DGX/HGX H100: 8 GPUs per node", "1..1024"},
        {"nics_per_node", ParamType::Integer, "(gpus_per_node)",
         "rail_optimized: network NICs (rails) per node; divides gpus_per_node, consecutive GPUs "
         "share a NIC when there are fewer NICs than GPUs",
         "rail-optimized: one NIC per GPU (DGX H100: 8 ConnectX-7)", "1..1024"},
        {"nodes_per_leaf", ParamType::Integer, "(nodes)",
         "rail_optimized: nodes on each rail leaf switch; each rail has ceil(nodes / "
         "nodes_per_leaf) leaves",
         "fabtwin: one leaf per rail", "1..65536"},
        {"switches", ParamType::Integer, "3",
         "ring: switches in the ring, switch i linked to i+1 mod N (named s0.., all leaves); "
         "graph: the list of switches (see topology.switches[])",
         "fabtwin", "3..4096"},
        {"hosts_per_switch", ParamType::Integer, "1",
         "ring: hosts on each switch (named h0.., host j on switch j / hosts_per_switch)",
         "fabtwin", "1..4096"},
        {"links", ParamType::List, "(graph: required)",
         "graph: the links, each {a, b, rate, delay} (see topology.links[]); a switch's ports "
         "are numbered in the order its links are listed",
         "fabtwin"},
        {"file", ParamType::Text, "(none)",
         "graph: a JSON file holding the switches, hosts and links lists instead of this "
         "section, relative to the scenario's directory",
         "fabtwin"},
    }};

const ParamGroup kGraphSwitchParams{
    "topology.switches[]",
    "topology",
    "A switch of a graph topology",
    {
        {"name", ParamType::Text, "", "the switch's name, unique among all nodes", "fabtwin"},
        {"tier", ParamType::Choice, "\"leaf\"",
         "where it sits, from the hosts up (routing.algorithm up_down routes up the tiers, then "
         "down)",
         "fabtwin", "leaf|spine|core"},
    }};

const ParamGroup kGraphHostParams{
    "topology.hosts[]",
    "topology",
    "A host of a graph topology",
    {
        {"name", ParamType::Text, "",
         "the host's name, unique among all nodes; hosts are numbered in the order listed (the "
         "numbers traffic uses)",
         "fabtwin"},
    }};

const ParamGroup kGraphLinkParams{
    "topology.links[]",
    "topology",
    "A link of a graph topology",
    {
        {"a", ParamType::Text, "", "name of one end", "fabtwin"},
        {"b", ParamType::Text, "",
         "name of the other end; a host has exactly one link, to a switch", "fabtwin"},
        {"rate", ParamType::Rate, "(fabric.link.rate)", "line rate (each direction)", "fabtwin"},
        {"delay", ParamType::Time, "(fabric.link.delay)", "propagation delay", "fabtwin"},
    }};

const ParamGroup kLinkParams{
    "fabric.link",
    "link",
    "Full-duplex links",
    {
        {"rate", ParamType::Rate, "\"100Gbps\"", "line rate of every link (each direction)",
         "100GbE, common RoCE NIC speed"},
        {"delay", ParamType::Time, "\"1us\"",
         "propagation delay of every link (about 200 m of fibre at 5 ns/m)", "fabtwin"},
        {"mtu", ParamType::Text, "\"auto\"",
         "Ethernet port MTU: the largest IP packet a port carries (1500B up to 9216B); the "
         "automatic PFC headroom allows for a frame of this MTU. \"auto\": just the NICs' "
         "largest RoCE frame (nic.mtu is the RoCE payload, set separately)",
         "IEEE 802.3 MTU 1500B; data-centre switches take jumbo frames up to 9216B"},
    }};

const char* tier_name(Tier tier) {
  switch (tier) {
    case Tier::Host:
      return "host";
    case Tier::Leaf:
      return "leaf";
    case Tier::Spine:
      return "spine";
    case Tier::Core:
      return "core";
  }
  return "?";
}

int Topology::add_node(Tier tier, std::string name, int rail) {
  const NodeKind kind = tier == Tier::Host ? NodeKind::Host : NodeKind::Switch;
  nodes.push_back({kind, std::move(name), 0, tier, rail});
  peers.emplace_back();
  if (kind == NodeKind::Host) ++hosts;
  return static_cast<int>(nodes.size()) - 1;
}

int Topology::node_named(const std::string& name) const {
  for (size_t v = 0; v < nodes.size(); ++v) {
    if (nodes[v].name == name) return static_cast<int>(v);
  }
  return -1;
}

void Topology::connect(int a, int b, BitsPerSec rate, Time delay) {
  const int a_port = nodes[a].ports++, b_port = nodes[b].ports++;
  links.push_back({a, a_port, b, b_port, rate, delay});
  peers[a].push_back({b, b_port});
  peers[b].push_back({a, a_port});
}

Topology build_star(int hosts, BitsPerSec rate, Time delay) {
  Topology t;
  t.kind = "star";
  for (int h = 0; h < hosts; ++h) t.add_node(Tier::Host, "host" + std::to_string(h));
  const int sw = t.add_node(Tier::Leaf, "switch");
  for (int h = 0; h < hosts; ++h) t.connect(sw, h, rate, delay);
  return t;
}

Topology build_leaf_spine(int leaves, int spines, int hosts_per_leaf, BitsPerSec host_rate,
                          BitsPerSec uplink_rate, Time delay) {
  Topology t;
  t.kind = "leaf_spine";
  for (int h = 0; h < leaves * hosts_per_leaf; ++h) {
    t.add_node(Tier::Host, "host" + std::to_string(h));
  }
  std::vector<int> leaf(leaves), spine(spines);
  for (int l = 0; l < leaves; ++l) leaf[l] = t.add_node(Tier::Leaf, "leaf" + std::to_string(l));
  for (int s = 0; s < spines; ++s) {
    spine[s] = t.add_node(Tier::Spine, "spine" + std::to_string(s));
  }
  for (int l = 0; l < leaves; ++l) {
    for (int h = 0; h < hosts_per_leaf; ++h)
      t.connect(leaf[l], l * hosts_per_leaf + h, host_rate, delay);
    for (int s = 0; s < spines; ++s) t.connect(leaf[l], spine[s], uplink_rate, delay);
  }
  t.oversubscription = static_cast<double>(hosts_per_leaf) * static_cast<double>(host_rate.bps) /
                       (static_cast<double>(spines) * static_cast<double>(uplink_rate.bps));
  return t;
}

Topology build_fat_tree(int k, BitsPerSec rate, Time delay) {
  Topology t;
  t.kind = "fat_tree";
  const int half = k / 2;
  for (int h = 0; h < k * half * half; ++h) t.add_node(Tier::Host, "host" + std::to_string(h));
  std::vector<int> edge(k * half), agg(k * half), core(half * half);
  for (int p = 0; p < k; ++p) {
    for (int i = 0; i < half; ++i) {
      edge[p * half + i] =
          t.add_node(Tier::Leaf, "edge" + std::to_string(p) + "." + std::to_string(i));
    }
  }
  for (int p = 0; p < k; ++p) {
    for (int i = 0; i < half; ++i) {
      agg[p * half + i] =
          t.add_node(Tier::Spine, "agg" + std::to_string(p) + "." + std::to_string(i));
    }
  }
  for (int c = 0; c < half * half; ++c)
    core[c] = t.add_node(Tier::Core, "core" + std::to_string(c));
  // Edge ports 0..k/2-1 face hosts, k/2..k-1 face the pod's aggregation switches; aggregation
  // switch i of every pod connects to core switches i*k/2 .. i*k/2+k/2-1.
  for (int p = 0; p < k; ++p) {
    for (int i = 0; i < half; ++i) {
      for (int h = 0; h < half; ++h)
        t.connect(edge[p * half + i], (p * half + i) * half + h, rate, delay);
    }
    for (int i = 0; i < half; ++i) {
      for (int j = 0; j < half; ++j) t.connect(edge[p * half + i], agg[p * half + j], rate, delay);
    }
    for (int j = 0; j < half; ++j) {
      for (int c = 0; c < half; ++c) t.connect(agg[p * half + j], core[j * half + c], rate, delay);
    }
  }
  return t;
}

Topology build_rail_optimized(int nodes, int gpus_per_node, int nics_per_node, int nodes_per_leaf,
                              int spines, BitsPerSec host_rate, BitsPerSec uplink_rate,
                              Time delay) {
  if (nodes < 1) {
    throw ScenarioError("topology.nodes",
                        "expected at least 1 GPU node, found " + std::to_string(nodes));
  }
  if (gpus_per_node < 1) {
    throw ScenarioError("topology.gpus_per_node",
                        "expected at least 1 GPU per node, found " + std::to_string(gpus_per_node));
  }
  if (nics_per_node < 1) {
    throw ScenarioError("topology.nics_per_node",
                        "expected at least 1 NIC per node, found " + std::to_string(nics_per_node));
  }
  if (nics_per_node > gpus_per_node) {
    throw ScenarioError("topology.nics_per_node",
                        "expected at most gpus_per_node (" + std::to_string(gpus_per_node) +
                            ") NICs per node, found " + std::to_string(nics_per_node));
  }
  if (gpus_per_node % nics_per_node != 0) {
    throw ScenarioError("topology.nics_per_node",
                        "expected a divisor of gpus_per_node (" + std::to_string(gpus_per_node) +
                            ") so that every NIC serves as many GPUs, found " +
                            std::to_string(nics_per_node));
  }
  if (nodes * nics_per_node < 2) {
    throw ScenarioError("topology", "a rail_optimized fabric needs at least 2 NICs in all, found " +
                                        std::to_string(nodes * nics_per_node));
  }
  if (nodes_per_leaf < 1) {
    throw ScenarioError("topology.nodes_per_leaf", "expected at least 1 node per leaf, found " +
                                                       std::to_string(nodes_per_leaf));
  }
  const int per_leaf = std::min(nodes_per_leaf, nodes);
  const int leaves_per_rail = (nodes + per_leaf - 1) / per_leaf;
  if (spines < 0) {
    throw ScenarioError("topology.spines",
                        "expected 0 or more spines, found " + std::to_string(spines));
  }
  if (spines == 0 && (nics_per_node > 1 || leaves_per_rail > 1)) {
    throw ScenarioError("topology.spines",
                        "a rail_optimized fabric of " + std::to_string(nics_per_node) +
                            " rail(s) of " + std::to_string(leaves_per_rail) +
                            " leaf switch(es) needs at least 1 spine: traffic between rails or "
                            "leaves crosses a spine; found 0");
  }

  Topology t;
  t.kind = "rail_optimized";
  t.gpus_per_node = gpus_per_node;
  t.nics_per_node = nics_per_node;
  for (int n = 0; n < nodes; ++n) {
    for (int i = 0; i < nics_per_node; ++i) {
      t.add_node(Tier::Host, "node" + std::to_string(n) + "-nic" + std::to_string(i), i);
    }
  }
  std::vector<int> leaf(nics_per_node * leaves_per_rail), spine(spines);
  for (int r = 0; r < nics_per_node; ++r) {
    for (int l = 0; l < leaves_per_rail; ++l) {
      leaf[r * leaves_per_rail + l] = t.add_node(
          Tier::Leaf,
          leaves_per_rail == 1 ? "rail" + std::to_string(r)
                               : "rail" + std::to_string(r) + "-leaf" + std::to_string(l),
          r);
    }
  }
  for (int s = 0; s < spines; ++s) {
    spine[s] = t.add_node(Tier::Spine, "spine" + std::to_string(s));
  }
  // Leaf ports first face the leaf's nodes (in node order), then the spines.
  for (int r = 0; r < nics_per_node; ++r) {
    for (int l = 0; l < leaves_per_rail; ++l) {
      const int sw = leaf[r * leaves_per_rail + l];
      for (int n = l * per_leaf; n < std::min(nodes, (l + 1) * per_leaf); ++n)
        t.connect(sw, n * nics_per_node + r, host_rate, delay);
      for (int s = 0; s < spines; ++s) t.connect(sw, spine[s], uplink_rate, delay);
    }
  }
  if (spines > 0) {
    t.oversubscription = static_cast<double>(per_leaf) * static_cast<double>(host_rate.bps) /
                         (static_cast<double>(spines) * static_cast<double>(uplink_rate.bps));
  }
  return t;
}

Topology build_ring(int switches, int hosts_per_switch, BitsPerSec rate, Time delay) {
  Topology t;
  t.kind = "ring";
  for (int h = 0; h < switches * hosts_per_switch; ++h) {
    t.add_node(Tier::Host, std::string("h").append(std::to_string(h)));
  }
  const int first = t.hosts;
  for (int s = 0; s < switches; ++s) {
    t.add_node(Tier::Leaf, std::string("s").append(std::to_string(s)));
  }
  for (int h = 0; h < t.hosts; ++h) t.connect(first + h / hosts_per_switch, h, rate, delay);
  for (int s = 0; s < switches; ++s) t.connect(first + s, first + (s + 1) % switches, rate, delay);
  return t;
}

namespace {

const nlohmann::json& graph_list(const nlohmann::json& graph, const char* key,
                                 const std::string& path) {
  static const nlohmann::json empty = nlohmann::json::array();
  if (!graph.contains(key)) throw ScenarioError(path + "." + key, "required, but missing");
  const nlohmann::json& list = graph[key];
  if (!list.is_array()) {
    throw ScenarioError(path + "." + key, "expected a list, found " + json_text(list));
  }
  return list.empty() ? empty : list;
}

// A graph topology from its three lists (`path` names where they are, for errors).
Topology build_graph(const nlohmann::json& graph, const std::string& path, BitsPerSec rate,
                     Time delay) {
  const nlohmann::json& switches = graph_list(graph, "switches", path);
  const nlohmann::json& hosts = graph_list(graph, "hosts", path);
  const nlohmann::json& links = graph_list(graph, "links", path);
  Topology t;
  t.kind = "graph";
  std::map<std::string, std::string> where;  // name -> the path that declared it
  auto declare = [&](ParamReader& r) {
    const std::string name = r.text("name");
    if (name.empty()) throw ScenarioError(r.path_of("name"), "expected a name, found \"\"");
    if (const auto it = where.find(name); it != where.end()) {
      throw ScenarioError(r.path_of("name"), "expected a unique name, found \"" + name +
                                                 "\" again (first at " + it->second + ")");
    }
    where[name] = r.path_of("name");
    return name;
  };
  for (size_t i = 0; i < hosts.size(); ++i) {
    ParamReader r(hosts[i], path + ".hosts[" + std::to_string(i) + "]", kGraphHostParams);
    t.add_node(Tier::Host, declare(r));
    r.finish();
  }
  for (size_t i = 0; i < switches.size(); ++i) {
    ParamReader r(switches[i], path + ".switches[" + std::to_string(i) + "]", kGraphSwitchParams);
    const std::string name = declare(r);
    const std::string tier = r.choice("tier");
    t.add_node(tier == "core" ? Tier::Core : tier == "spine" ? Tier::Spine : Tier::Leaf, name);
    r.finish();
  }
  if (t.hosts < 2) {
    throw ScenarioError(path + ".hosts",
                        "expected at least 2 hosts, found " + std::to_string(t.hosts));
  }
  if (t.nodes.size() == static_cast<size_t>(t.hosts)) {
    throw ScenarioError(path + ".switches", "expected at least 1 switch, found none");
  }
  std::vector<std::string> host_link(t.hosts);  // the path of each host's link
  for (size_t i = 0; i < links.size(); ++i) {
    ParamReader r(links[i], path + ".links[" + std::to_string(i) + "]", kGraphLinkParams);
    int end[2];
    const char* keys[2] = {"a", "b"};
    for (int k = 0; k < 2; ++k) {
      const std::string name = r.text(keys[k]);
      end[k] = t.node_named(name);
      if (end[k] < 0) {
        throw ScenarioError(r.path_of(keys[k]), "expected the name of a switch or host listed in " +
                                                    path + ".switches or .hosts, found \"" + name +
                                                    "\"");
      }
    }
    if (end[0] == end[1]) {
      throw ScenarioError(r.path_of("b"), "expected another node than a (" + t.nodes[end[0]].name +
                                              "), found the same");
    }
    for (int k = 0; k < 2; ++k) {
      if (t.nodes[end[k]].kind != NodeKind::Host) continue;
      if (t.nodes[end[1 - k]].kind == NodeKind::Host) {
        throw ScenarioError(r.path_of(keys[1 - k]),
                            "expected a switch: hosts link to switches, found host \"" +
                                t.nodes[end[1 - k]].name + "\"");
      }
      if (!host_link[end[k]].empty()) {
        throw ScenarioError(r.path_of(keys[k]),
                            "expected one link per host (a host is one NIC port), found a "
                            "second link of \"" +
                                t.nodes[end[k]].name + "\" (first at " + host_link[end[k]] + ")");
      }
      host_link[end[k]] = r.path();
    }
    const BitsPerSec link_rate = r.has("rate") ? r.rate("rate") : rate;
    const Time link_delay = r.has("delay") ? r.time("delay") : delay;
    r.finish();
    t.connect(end[0], end[1], link_rate, link_delay);
  }
  for (int h = 0; h < t.hosts; ++h) {
    if (host_link[h].empty()) {
      throw ScenarioError(path + ".hosts[" + std::to_string(h) + "]",
                          "expected a link from host \"" + t.nodes[h].name + "\" to a switch in " +
                              path + ".links, found none");
    }
  }
  return t;
}

// A fabric's size is checked before it is built: the documented ranges of its parameters
// multiply to fabrics of millions of nodes (a 4096 x 4096 leaf-spine: 16.8 million hosts) that
// would take minutes and gigabytes just to wire.
void check_size(const std::string& shape, int64_t nodes, int64_t links, int64_t max_nodes) {
  if (nodes <= max_nodes && links <= kLinksPerNode * max_nodes) return;
  throw ScenarioError("topology", "expected a fabric of at most " + std::to_string(max_nodes) +
                                      " nodes and " + std::to_string(kLinksPerNode * max_nodes) +
                                      " links, found a " + shape + " of " + std::to_string(nodes) +
                                      " nodes and " + std::to_string(links) + " links");
}

}  // namespace

Topology read_topology(const nlohmann::json& scenario, const std::filesystem::path& dir,
                       int64_t max_nodes) {
  const nlohmann::json& fabric =
      scenario.contains("fabric") ? scenario["fabric"] : nlohmann::json();
  const nlohmann::json link_section =
      fabric.is_object() && fabric.contains("link") ? fabric["link"] : nlohmann::json();
  ParamReader link(link_section, "fabric.link", kLinkParams);
  const BitsPerSec rate = link.rate("rate");
  const Time delay = link.time("delay");
  const std::optional<Bytes> mtu = link.bytes_or("mtu", "auto");
  if (mtu && (mtu->count < 1500 || mtu->count > 9216)) {
    throw ScenarioError(link.path_of("mtu"),
                        "expected an Ethernet MTU of 1500B to 9216B, found " + format_bytes(*mtu));
  }
  link.finish();

  const nlohmann::json section =
      scenario.contains("topology") ? scenario["topology"] : nlohmann::json();
  ParamReader r(section, "topology", kTopologyParams);
  const std::string type = r.choice("type");
  Topology t;
  if (type == "star") {
    const int hosts = static_cast<int>(r.integer("hosts"));
    check_size(type, int64_t{hosts} + 1, hosts, max_nodes);
    t = build_star(hosts, rate, delay);
  } else if (type == "leaf_spine") {
    const int leaves = static_cast<int>(r.integer("leaves"));
    const int spines = static_cast<int>(r.integer("spines"));
    if (spines < 1) {
      throw ScenarioError(r.path_of("spines"),
                          "a leaf_spine needs at least 1 spine, found " + std::to_string(spines));
    }
    const int per_leaf = static_cast<int>(r.integer("hosts_per_leaf"));
    if (leaves * per_leaf < 2) {
      throw ScenarioError("topology", "a leaf_spine needs at least 2 hosts, found " +
                                          std::to_string(leaves * per_leaf));
    }
    const BitsPerSec uplink = r.has("uplink_rate") ? r.rate("uplink_rate") : rate;
    check_size(type, int64_t{leaves} * per_leaf + leaves + spines,
               int64_t{leaves} * per_leaf + int64_t{leaves} * spines, max_nodes);
    t = build_leaf_spine(leaves, spines, per_leaf, rate, uplink, delay);
  } else if (type == "rail_optimized") {
    const int nodes = static_cast<int>(r.integer("nodes"));
    const int gpus = static_cast<int>(r.integer("gpus_per_node"));
    const int nics = r.has("nics_per_node") ? static_cast<int>(r.integer("nics_per_node")) : gpus;
    const int per_leaf =
        r.has("nodes_per_leaf") ? static_cast<int>(r.integer("nodes_per_leaf")) : nodes;
    const int spines = static_cast<int>(r.integer("spines"));
    const BitsPerSec uplink = r.has("uplink_rate") ? r.rate("uplink_rate") : rate;
    const int64_t nics_in_all = int64_t{nodes} * nics;
    const int64_t leaves =
        int64_t{nics} * ((nodes + std::max(per_leaf, 1) - 1) / std::max(per_leaf, 1));
    check_size(type, nics_in_all + leaves + spines, nics_in_all + leaves * spines, max_nodes);
    t = build_rail_optimized(nodes, gpus, nics, per_leaf, spines, rate, uplink, delay);
  } else if (type == "ring") {
    const int switches = static_cast<int>(r.integer("switches"));
    const int per_switch = static_cast<int>(r.integer("hosts_per_switch"));
    check_size(type, int64_t{switches} * per_switch + switches,
               int64_t{switches} * per_switch + switches, max_nodes);
    t = build_ring(switches, per_switch, rate, delay);
  } else if (type == "graph") {
    if (r.has("file")) {
      const std::string name = r.text("file");
      for (const char* key : {"switches", "hosts", "links"}) {
        if (r.has(key)) {
          throw ScenarioError(r.path_of(key),
                              "expected either topology.file or the lists in "
                              "the scenario, found both");
        }
      }
      const nlohmann::json graph = read_json_file(dir / name, r.path_of("file"));
      const std::string path = r.path_of("file") + "(" + name + ")";
      if (!graph.is_object()) {
        throw ScenarioError(path, "expected a JSON object with switches, hosts and links");
      }
      for (const auto& [key, value] : graph.items()) {
        if (key != "switches" && key != "hosts" && key != "links" && key != "description") {
          throw ScenarioError(path + "." + key,
                              "unknown key; a graph file takes switches, hosts, links (and "
                              "description)");
        }
      }
      t = build_graph(graph, path, rate, delay);
    } else {
      r.raw("switches");
      r.raw("hosts");
      r.raw("links");
      t = build_graph(section, "topology", rate, delay);
    }
  } else {
    const int64_t k = r.integer("k");
    if (k % 2 != 0)
      throw ScenarioError(r.path_of("k"), "expected an even radix, found " + std::to_string(k));
    check_size(type, k * k * k / 4 + 5 * k * k / 4, 3 * k * k * k / 4, max_nodes);
    t = build_fat_tree(static_cast<int>(k), rate, delay);
  }
  r.finish();
  t.ethernet_mtu = mtu ? mtu->count : 0;
  return t;
}

}  // namespace fabtwin

#include "models/topology.h"

namespace fabtwin {

const ParamGroup kTopologyParams{
    "topology",
    "topology",
    "Fabric shape",
    {
        {"type", ParamType::Choice, "star",
         "shape: star (one switch), leaf_spine (two tiers), fat_tree (k-ary, three tiers)",
         "fabtwin", "star|leaf_spine|fat_tree"},
        {"hosts", ParamType::Integer, "8", "star: hosts on the switch", "fabtwin", "2..65536"},
        {"leaves", ParamType::Integer, "4", "leaf_spine: leaf (top-of-rack) switches", "fabtwin",
         "1..4096"},
        {"spines", ParamType::Integer, "2", "leaf_spine: spine switches", "fabtwin", "1..4096"},
        {"hosts_per_leaf", ParamType::Integer, "8", "leaf_spine: hosts on each leaf", "fabtwin",
         "1..4096"},
        {"uplink_rate", ParamType::Rate, "(fabric.link.rate)",
         "leaf_spine: rate of each leaf-spine link; oversubscription = hosts_per_leaf x "
         "host rate / (spines x uplink_rate)",
         "fabtwin"},
        {"k", ParamType::Integer, "4",
         "fat_tree: switch radix k (even); k^3/4 hosts, k pods, (k/2)^2 core switches",
         "Al-Fares et al., SIGCOMM 2008", "2..128"},
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
    }};

int Topology::add_node(NodeKind kind, std::string name) {
  nodes.push_back({kind, std::move(name), 0});
  if (kind == NodeKind::Host) ++hosts;
  return static_cast<int>(nodes.size()) - 1;
}

void Topology::connect(int a, int b, BitsPerSec rate, Time delay) {
  links.push_back({a, nodes[a].ports++, b, nodes[b].ports++, rate, delay});
}

Topology build_star(int hosts, BitsPerSec rate, Time delay) {
  Topology t;
  t.kind = "star";
  for (int h = 0; h < hosts; ++h) t.add_node(NodeKind::Host, "host" + std::to_string(h));
  const int sw = t.add_node(NodeKind::Switch, "switch");
  for (int h = 0; h < hosts; ++h) t.connect(sw, h, rate, delay);
  return t;
}

Topology build_leaf_spine(int leaves, int spines, int hosts_per_leaf, BitsPerSec host_rate,
                          BitsPerSec uplink_rate, Time delay) {
  Topology t;
  t.kind = "leaf_spine";
  for (int h = 0; h < leaves * hosts_per_leaf; ++h) {
    t.add_node(NodeKind::Host, "host" + std::to_string(h));
  }
  std::vector<int> leaf(leaves), spine(spines);
  for (int l = 0; l < leaves; ++l)
    leaf[l] = t.add_node(NodeKind::Switch, "leaf" + std::to_string(l));
  for (int s = 0; s < spines; ++s) {
    spine[s] = t.add_node(NodeKind::Switch, "spine" + std::to_string(s));
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
  for (int h = 0; h < k * half * half; ++h) t.add_node(NodeKind::Host, "host" + std::to_string(h));
  std::vector<int> edge(k * half), agg(k * half), core(half * half);
  for (int p = 0; p < k; ++p) {
    for (int i = 0; i < half; ++i) {
      edge[p * half + i] =
          t.add_node(NodeKind::Switch, "edge" + std::to_string(p) + "." + std::to_string(i));
    }
  }
  for (int p = 0; p < k; ++p) {
    for (int i = 0; i < half; ++i) {
      agg[p * half + i] =
          t.add_node(NodeKind::Switch, "agg" + std::to_string(p) + "." + std::to_string(i));
    }
  }
  for (int c = 0; c < half * half; ++c)
    core[c] = t.add_node(NodeKind::Switch, "core" + std::to_string(c));
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

Topology read_topology(const nlohmann::json& scenario) {
  const nlohmann::json& fabric =
      scenario.contains("fabric") ? scenario["fabric"] : nlohmann::json();
  const nlohmann::json link_section =
      fabric.is_object() && fabric.contains("link") ? fabric["link"] : nlohmann::json();
  ParamReader link(link_section, "fabric.link", kLinkParams);
  const BitsPerSec rate = link.rate("rate");
  const Time delay = link.time("delay");
  link.finish();

  const nlohmann::json section =
      scenario.contains("topology") ? scenario["topology"] : nlohmann::json();
  ParamReader r(section, "topology", kTopologyParams);
  const std::string type = r.choice("type");
  Topology t;
  if (type == "star") {
    t = build_star(static_cast<int>(r.integer("hosts")), rate, delay);
  } else if (type == "leaf_spine") {
    const int leaves = static_cast<int>(r.integer("leaves"));
    const int spines = static_cast<int>(r.integer("spines"));
    const int per_leaf = static_cast<int>(r.integer("hosts_per_leaf"));
    if (leaves * per_leaf < 2) {
      throw ScenarioError("topology", "a leaf_spine needs at least 2 hosts, found " +
                                          std::to_string(leaves * per_leaf));
    }
    const BitsPerSec uplink = r.has("uplink_rate") ? r.rate("uplink_rate") : rate;
    t = build_leaf_spine(leaves, spines, per_leaf, rate, uplink, delay);
  } else {
    const int64_t k = r.integer("k");
    if (k % 2 != 0)
      throw ScenarioError(r.path_of("k"), "expected an even radix, found " + std::to_string(k));
    t = build_fat_tree(static_cast<int>(k), rate, delay);
  }
  r.finish();
  return t;
}

}  // namespace fabtwin

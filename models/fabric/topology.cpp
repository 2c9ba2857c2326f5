#include "models/fabric/topology.h"

#include <algorithm>

namespace fabtwin {

const ParamGroup kTopologyParams{
    "topology",
    "topology",
    "Fabric shape",
    {
        {"type", ParamType::Choice, "star",
         "shape: star (one switch), leaf_spine (two tiers), fat_tree (k-ary, three tiers), "
         "rail_optimized (GPU nodes, NIC i of every node on rail i, rails joined by spines)",
         "fabtwin", "star|leaf_spine|fat_tree|rail_optimized"},
        {"hosts", ParamType::Integer, "8", "star: hosts on the switch", "fabtwin", "2..65536"},
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

Topology read_topology(const nlohmann::json& scenario) {
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
    t = build_star(static_cast<int>(r.integer("hosts")), rate, delay);
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
    t = build_leaf_spine(leaves, spines, per_leaf, rate, uplink, delay);
  } else if (type == "rail_optimized") {
    const int nodes = static_cast<int>(r.integer("nodes"));
    const int gpus = static_cast<int>(r.integer("gpus_per_node"));
    const int nics = r.has("nics_per_node") ? static_cast<int>(r.integer("nics_per_node")) : gpus;
    const int per_leaf =
        r.has("nodes_per_leaf") ? static_cast<int>(r.integer("nodes_per_leaf")) : nodes;
    const int spines = static_cast<int>(r.integer("spines"));
    const BitsPerSec uplink = r.has("uplink_rate") ? r.rate("uplink_rate") : rate;
    t = build_rail_optimized(nodes, gpus, nics, per_leaf, spines, rate, uplink, delay);
  } else {
    const int64_t k = r.integer("k");
    if (k % 2 != 0)
      throw ScenarioError(r.path_of("k"), "expected an even radix, found " + std::to_string(k));
    t = build_fat_tree(static_cast<int>(k), rate, delay);
  }
  r.finish();
  t.ethernet_mtu = mtu ? mtu->count : 0;
  return t;
}

}  // namespace fabtwin
